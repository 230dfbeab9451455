"""What CUDA's clamped shifts cost on the CPU device (backends/cpu/shifts.py).

    python benchmarks/cpu_shifts.py [--runs 7] [--n 4194304]

Each kernel is compiled twice in this process: as the CPU device builds it
(run-time shift counts clamped as the GPU does: a compare and a select) and
with QUICKLAUNCH_CPU_CLAMP_SHIFTS=0 (the host's modulo-width shifts, wrong
for counts >= the width). Rows: a bit-field extract with per-element counts,
a hash with 6 run-time shifts per step (uniform counts, 16 steps), and the
same hash with constant counts (left alone by the rewrite: both builds
should match). Medians of --runs launches; every result is checked against
the other build (the counts used are all in range, where both agree).
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy: no BLAS threads spinning
import numpy as np  # noqa: E402

import quicklaunch as ql  # noqa: E402
from quicklaunch.backends.cpu import shifts  # noqa: E402

SOURCE = r"""
extern "C" __global__ void extract(const unsigned *x, const int *s, const int *w,
                                   unsigned *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = (x[i] >> s[i]) & ((1u << w[i]) - 1u);
}

extern "C" __global__ void hash_rt(const unsigned long long *x, unsigned long long *o, int n,
                                   int a, int b, int c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long h = x[i];
    for (int k = 0; k < 16; ++k) {
        h ^= h << a; h ^= h >> b; h ^= h << c;
        h = (h >> (a + 1)) | (h << (64 - a - 1));
        h += h << (c & 7);
    }
    o[i] = h;
}

extern "C" __global__ void hash_const(const unsigned long long *x, unsigned long long *o,
                                      int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long h = x[i];
    for (int k = 0; k < 16; ++k) {
        h ^= h << 13; h ^= h >> 7; h ^= h << 17;
        h = (h >> 14) | (h << 50);
        h += h << 1;
    }
    o[i] = h;
}
"""


def median_ms(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ql.device("cpu").synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--n", type=int, default=1 << 22)
    args = ap.parse_args(argv)
    n, rng = args.n, np.random.default_rng(1)
    mods = {}
    for label, value in (("clamped", "1"), ("host", "0")):
        os.environ[shifts.ENV] = value
        mods[label] = ql.compile(SOURCE, device="cpu")
    os.environ.pop(shifts.ENV)
    x32 = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x64 = rng.integers(0, 2**63, n, dtype=np.uint64)
    s = rng.integers(0, 16, n).astype(np.int32)
    w = rng.integers(1, 17, n).astype(np.int32)
    grid = (n + 255) // 256
    rows = [("bit-field extract, per-element counts", "extract", (x32, s, w), np.uint32, ()),
            ("hash, 6 run-time shifts x 16 steps", "hash_rt", (x64,), np.uint64, (11, 5, 19)),
            ("hash, constant counts (not rewritten)", "hash_const", (x64,), np.uint64, ())]
    print(f"n = {n}, medians of {args.runs} launches, 256 threads per block")
    print(f"{'kernel':42s} {'host shifts':>12s} {'clamped':>10s} {'ratio':>7s}")
    for title, name, inputs, dtype, scalars in rows:
        outs, times = {}, {}
        for label, mod in mods.items():
            o = np.empty(n, dtype)
            k = mod[name]
            times[label] = median_ms(lambda: k[grid, 256](*inputs, o, n, *scalars), args.runs)
            outs[label] = o
        assert np.array_equal(outs["clamped"], outs["host"]), name
        print(f"{title:42s} {times['host']:10.2f}ms {times['clamped']:8.2f}ms "
              f"{times['clamped'] / times['host']:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

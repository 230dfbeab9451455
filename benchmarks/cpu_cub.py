"""CUB's BlockReduce on the CPU device against a hand-written shared-memory
tree reduction, 256-thread blocks over 2^20 floats, medians of several runs.

    python benchmarks/cpu_cub.py [--runs 7]

BlockReduce's Sum runs as region fission (its barrier split between the
library's two halves, backends/cpu/fission_cub.py), as does the tree
reduction; both run on fibers again with QUICKLAUNCH_CPU_FISSION=0 at
compile time, for the like-for-like rows.
"""
import argparse
import os
import statistics
import time

import numpy as np

import quicklaunch as ql

SOURCE = r"""
#include <cub/block/block_reduce.cuh>
extern "C" __global__ void cub_sum(const float *x, float *out) {
    typedef cub::BlockReduce<float, 256> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    const float s = Reduce(temp).Sum(x[blockIdx.x * 256 + threadIdx.x]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
extern "C" __global__ void tree_sum(const float *x, float *out) {
    __shared__ float s[256];
    s[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"""


def _time(kernel, blocks, x, out, runs):
    run = kernel.configure(blocks, 256)
    dev = ql.device("cpu")
    run(x, out)
    dev.synchronize()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run(x, out)
        dev.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    blocks = 4096
    x = np.random.default_rng(0).random(blocks * 256, dtype=np.float32)
    want = x.reshape(blocks, 256).astype(np.float64).sum(1)
    mod = ql.compile(SOURCE, device="cpu")
    os.environ["QUICKLAUNCH_CPU_FISSION"] = "0"
    try:
        fibers = ql.compile(SOURCE + "\n// fibers\n", device="cpu")
    finally:
        del os.environ["QUICKLAUNCH_CPU_FISSION"]
    rows = [("cub::BlockReduce Sum", mod.cub_sum), ("BlockReduce on fibers", fibers.cub_sum),
            ("shared tree", mod.tree_sum), ("shared tree on fibers", fibers.tree_sum)]
    print(f"{'kernel':24} {'tier':8} {'ms':>8} {'Melem/s':>8}")
    for name, k in rows:
        out = np.full(blocks, np.nan, np.float32)
        t = _time(k, blocks, x, out, args.runs)
        assert np.allclose(out, want, rtol=1e-5), name
        print(f"{name:24} {k.tier:8} {t * 1e3:8.1f} {blocks * 256 / t / 1e6:8.0f}")


if __name__ == "__main__":
    main()

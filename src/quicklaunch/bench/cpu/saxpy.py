"""saxpy (y = a*x + y, float32) on the CPU device at N = 1e3, 1e5, 1e7,
side by side with NumPy in place and a single-threaded C loop (-O3
-march=native), all in this process.

    python benchmarks/saxpy.py [--repeats 15]

The NumPy version is the in-place pair np.multiply(x, a, out=t); y += t with
a preallocated t (no allocation per step). Each row is the median time of one
y = a*x + y pass; the kernel result is checked against NumPy first.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

import quicklaunch as ql
from quicklaunch.bench.harness.baseline import baseline_library

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *__restrict__ x, float *__restrict__ y,
                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def timed(fn, reps: int, inner: int) -> float:
    fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - t0) / inner)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    mod = ql.compile(SOURCE, device="cpu")
    lib = baseline_library()
    rng = np.random.default_rng(1)
    rows = []
    for n in (1_000, 100_000, 10_000_000):
        inner = max(1, 10_000_000 // n // 10)
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        expected = np.float32(1.5) * x + y
        run = mod.saxpy.configure((n + 255) // 256, 256)
        run(1.5, x, y, n)
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
        t = np.empty_like(x)

        def numpy_step():
            np.multiply(x, np.float32(1.5), out=t)
            np.add(y, t, out=y)

        ql_ns = timed(lambda: run(1.5, x, y, n), args.repeats, inner)
        np_ns = timed(numpy_step, args.repeats, inner)
        c_ns = statistics.median(lib.ql_bench_saxpy_ns(1.5, x.ctypes.data, y.ctypes.data, n,
                                                       inner) for _ in range(args.repeats))
        gbs = 12 * n / ql_ns
        rows.append({"n": n, "quicklaunch_ns": ql_ns, "numpy_ns": np_ns, "c_loop_ns": c_ns,
                     "quicklaunch_GBps": gbs})
        print(f"N={n:>10,}  quicklaunch {ql_ns / 1e3:9.1f} us ({gbs:5.1f} GB/s)  "
              f"numpy {np_ns / 1e3:9.1f} us ({np_ns / ql_ns:4.2f}x)  "
              f"C loop 1 thread {c_ns / 1e3:9.1f} us ({c_ns / ql_ns:4.2f}x)")
    out = Path(__file__).with_name("results") / "saxpy-cpu.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": ql.device("cpu").description, "rows": rows},
                              indent=2) + "\n")
    print(f"written to {out}  (ratios: other / quicklaunch; above 1 means quicklaunch is faster)")


if __name__ == "__main__":
    main()

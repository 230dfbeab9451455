"""saxpy (y = a*x + y, float32) on the CPU device at N = 1e3, 1e5, 1e7,
side by side with NumPy in place, a single-threaded C loop (-O3
-march=native) in this process, and the same loop in C with OpenMP on as
many threads as the CPU device has (-O3 -march=native -fopenmp, in a child
process: harness/omp_saxpy.c).

    python -m quicklaunch.bench.cpu.saxpy [--repeats 15] [--out FILE]

The NumPy version is the in-place pair np.multiply(x, a, out=t); y += t with
a preallocated t (no allocation per step). Each row is the median time of one
y = a*x + y pass; the kernel result is checked against NumPy first. Writes
the result as JSON to --out (benchmarks/saxpy.py: benchmarks/results/saxpy-cpu.json).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

import numpy as np

import quicklaunch as ql

from ..harness.baseline import library, omp_saxpy, omp_saxpy_ns
from ..harness.results import save
from ..harness.timing import median, ns_per_call

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *__restrict__ x, float *__restrict__ y,
                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def pool_threads() -> int:
    """The CPU device's pool size, as its runtime chooses it (pool.c):
    QUICKLAUNCH_CPU_THREADS when it is a positive int, else the online CPUs."""
    value = os.environ.get("QUICKLAUNCH_CPU_THREADS", "")
    if value.isdigit() and int(value) >= 1:
        return min(int(value), 256)
    return max(1, os.cpu_count() or 1)


def main(argv=None, results_dir=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.cpu.saxpy",
                                description="saxpy on the CPU device beside NumPy and a C loop")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--out", default=None, help="the JSON file")
    args = p.parse_args(argv)
    mod = ql.compile(SOURCE, device="cpu")
    lib = library()
    threads = pool_threads()
    try:   # built before anything is timed: the build is not beside a measurement
        omp_saxpy()
    except RuntimeError:
        pass   # each row then says why
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

        ql_ns = median(ns_per_call(lambda: run(1.5, x, y, n), inner), args.repeats)
        np_ns = median(ns_per_call(numpy_step, inner), args.repeats)
        c_ns = statistics.median(lib.ql_bench_saxpy_ns(1.5, x.ctypes.data, y.ctypes.data, n,
                                                       inner) for _ in range(args.repeats))
        try:
            omp_ns = omp_saxpy_ns(n, inner, args.repeats, threads)
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            omp_ns, omp_why = None, str(exc).splitlines()[0]
        gbs = 12 * n / ql_ns
        rows.append({"n": n, "quicklaunch_ns": ql_ns, "numpy_ns": np_ns, "c_loop_ns": c_ns,
                     "c_openmp_ns": omp_ns, "quicklaunch_GBps": gbs})
        omp = (f"C OpenMP {threads} threads {omp_ns / 1e3:9.1f} us (quicklaunch "
               f"{ql_ns / omp_ns:4.2f}x its time)" if omp_ns else f"C OpenMP: {omp_why}")
        print(f"N={n:>10,}  quicklaunch {ql_ns / 1e3:9.1f} us ({gbs:5.1f} GB/s)  "
              f"numpy {np_ns / 1e3:9.1f} us ({np_ns / ql_ns:4.2f}x)  "
              f"C loop 1 thread {c_ns / 1e3:9.1f} us ({c_ns / ql_ns:4.2f}x)  {omp}")
    print("(numpy and C loop: other / quicklaunch, above 1 means quicklaunch is faster; "
          "OpenMP: quicklaunch / OpenMP, the goal is <= 1.15)")
    save({"threads": ql.device("cpu").description, "rows": rows}, args.out, results_dir,
         "saxpy-cpu.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

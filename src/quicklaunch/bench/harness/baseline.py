"""Timing helpers shared by the benchmarks: medians of repeated loops, and
the C baselines built by the host compiler at bench time."""
from __future__ import annotations

import ctypes
import functools
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ...backends.cpu import toolchain

BASELINE_SOURCE = Path(__file__).with_name("baseline.c")


def median_ns(fn, iters: int, repeats: int) -> float:
    """Median over ``repeats`` of the ns per call of ``fn(iters)``, which runs
    the loop being measured itself (so the loop is the caller's own code)."""
    fn(max(iters // 10, 1))  # warm up
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn(iters)
        samples.append((time.perf_counter_ns() - t0) / iters)
    return statistics.median(samples)


@functools.lru_cache(maxsize=1)
def baseline_library() -> ctypes.CDLL:
    """baseline.c compiled with -O3 -march=native and loaded in this process."""
    compiler = toolchain.find_compiler()
    out = Path(tempfile.mkdtemp(prefix="quicklaunch-bench-")) / "baseline.so"
    cmd = [compiler.path, "-x", "c", "-std=gnu11", "-O3", "-march=native", "-fPIC", "-shared",
           "-o", str(out), str(BASELINE_SOURCE)]
    subprocess.run(cmd, check=True, capture_output=True)
    lib = ctypes.CDLL(str(out))
    lib.ql_bench_launch_ns.restype = ctypes.c_double
    lib.ql_bench_launch_ns.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint,
                                       ctypes.c_uint, ctypes.c_long]
    lib.ql_bench_saxpy_ns.restype = ctypes.c_double
    lib.ql_bench_saxpy_ns.argtypes = [ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_long, ctypes.c_long]
    return lib

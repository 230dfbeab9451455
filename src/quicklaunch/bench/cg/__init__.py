"""Conjugate gradient on the 2D Poisson equation: a workload where launch
latency decides at small sizes and memory bandwidth at large ones.

    quicklaunch.bench.cg.run(device=None, sizes=(32, ..., 2048),
                             implementations=None, iterations=50, repeats=3,
                             quick=False, progress=None) -> dict
    python -m quicklaunch.bench.cg [--device D] [--quick]

The same float32 CG (problem.py) for a fixed number of iterations, written
with quicklaunch (host scalars, and device scalars replayed from a graph),
NumPy, scipy.sparse, NVIDIA Warp (eager and captured), Numba and PyOpenCL;
each result is checked against NumPy (check.py) before it is timed.

Modules: problem.py (the problem and the residual), kernels.py (the CUDA
C++ kernels), shapes.py (their launch shapes per device), ql_impl.py,
numpy_impl.py, warp_impl.py (+ warp_kernels.py), numba_impl.py
(+ numba_kernels.py), opencl_impl.py, impl.py (what an implementation
provides), registry.py (every row, by name), check.py (tolerances),
runner.py (``run``), probe.py (peers tried in child processes first),
report.py (the table), __main__.py (the command).
"""
from .registry import registry
from .runner import DEFAULT_SIZES, QUICK_SIZES, run

__all__ = ["run", "registry", "DEFAULT_SIZES", "QUICK_SIZES"]

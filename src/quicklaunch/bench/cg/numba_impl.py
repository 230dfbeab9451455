"""The Numba row (``pip install numba``): CG compiled by Numba for the host.

The whole solve is one call of ``numba_kernels.cg_iterations`` (every step
a ``prange`` loop): Numba's best case, where nothing returns to Python
between steps and each step costs a parallel region's fork and join. It
runs on the host whatever the device. Compiled in ``prepare`` (and cached
on disk by Numba), never in a timed solve.
"""
from __future__ import annotations

import numpy as np

from .impl import Implementation, Solver


class NumbaSolver(Solver):
    def __init__(self, K, problem):
        self.K, self.N, n = K, problem.N, problem.n
        self.f = np.ascontiguousarray(problem.f, dtype=np.float32).ravel()
        self.x, self.r, self.p, self.ap = (np.empty(n, np.float32) for _ in range(4))
        self.part = np.empty((n + K.CHUNK - 1) // K.CHUNK, np.float32)
        self.rr = np.float32(0)

    def reset(self) -> None:
        self.x.fill(0)
        np.copyto(self.r, self.f)
        np.copyto(self.p, self.f)
        self.rr = np.float32(self.K.dot(self.r, self.r, self.part))

    def solve(self, iterations: int) -> None:
        self.rr = np.float32(self.K.cg_iterations(self.x, self.r, self.p, self.ap, self.part,
                                                  self.N, iterations, self.rr))

    def result(self) -> np.ndarray:
        return self.x.reshape(self.N, self.N).copy()


class NumbaCG(Implementation):
    name = "numba"
    module = "numba"
    distribution = "numba"

    def prepare(self, device) -> None:
        self.need()
        from . import numba_kernels as K
        self.K = K
        s = NumbaSolver(K, _Tiny())      # compile both functions for these types now
        s.reset()
        s.solve(1)

    def solver(self, problem) -> NumbaSolver:
        return NumbaSolver(self.K, problem)


class _Tiny:
    N, n = 4, 16
    f = np.ones((4, 4), np.float32)

"""The same decomposition written with NumPy and mpi4py, as users write it
today: the padded (m + 2) x (N + 2) block, the stencil with slices, np.dot
(float32) and a float64 Allreduce for the dots, and the halo with
non-blocking Isend/Irecv overlapped with the interior rows' stencil."""
from __future__ import annotations

import time

import numpy as np

from .decomp import Block


class NumpyMPISolver:
    def __init__(self, comm, block: Block, f: np.ndarray):
        from mpi4py import MPI
        self.MPI, self.comm, self.b = MPI, comm, block
        self.f = block.padded_f(f)
        shape = self.f.shape
        self.x, self.r, self.p, self.ap, self.tmp = (np.zeros(shape, np.float32)
                                                      for _ in range(5))
        self.up = MPI.PROC_NULL if block.up is None else block.up
        self.down = MPI.PROC_NULL if block.down is None else block.down
        self.sum = np.zeros(1, np.float64)
        self.rr = 0.0
        self.t_comm = 0.0
        self.launches = 0

    def _allreduce(self, v) -> float:
        t = time.perf_counter()
        self.sum[0] = v
        self.comm.Allreduce(self.MPI.IN_PLACE, self.sum)
        self.t_comm += time.perf_counter() - t
        return float(self.sum[0])

    def reset(self) -> None:
        self.x.fill(0)
        np.copyto(self.r, self.f)
        np.copyto(self.p, self.f)
        r = self.r[1:-1].ravel()
        self.rr = self._allreduce(np.dot(r, r))
        self.t_comm = 0.0

    @staticmethod
    def _stencil(p, ap, lo: int, hi: int) -> None:
        """ap rows [lo, hi) (padded indices) from p; ghost columns stay 0."""
        if hi <= lo:
            return
        c = p[lo:hi, 1:-1]
        out = ap[lo:hi, 1:-1]
        np.multiply(c, 4, out=out)
        out -= p[lo - 1:hi - 1, 1:-1]
        out -= p[lo + 1:hi + 1, 1:-1]
        out -= p[lo:hi, :-2]
        out -= p[lo:hi, 2:]

    def solve(self, iterations: int) -> None:
        comm, m = self.comm, self.b.m
        x, r, p, ap, tmp = self.x, self.r, self.p, self.ap, self.tmp
        xi, ri, pi, api, ti = (a[1:-1].ravel() for a in (x, r, p, ap, tmp))   # views
        rr = self.rr
        for _ in range(iterations):
            t = time.perf_counter()
            reqs = [comm.Irecv(p[m + 1], self.down, 1), comm.Irecv(p[0], self.up, 1),
                    comm.Isend(p[1], self.up, 1), comm.Isend(p[m], self.down, 1)]
            self.t_comm += time.perf_counter() - t
            self._stencil(p, ap, 2, m)                    # interior rows, overlapped
            t = time.perf_counter()
            self.MPI.Request.Waitall(reqs)
            self.t_comm += time.perf_counter() - t
            self._stencil(p, ap, 1, 2)
            if m > 1:
                self._stencil(p, ap, m, m + 1)
            pap = self._allreduce(np.dot(pi, api))
            alpha = np.float32(rr / pap if pap != 0.0 else 0.0)
            np.multiply(pi, alpha, out=ti)
            xi += ti
            np.multiply(api, alpha, out=ti)
            ri -= ti
            rr_new = self._allreduce(np.dot(ri, ri))
            beta = np.float32(rr_new / rr if rr != 0.0 else 0.0)
            pi *= beta
            pi += ri
            rr = rr_new
        self.rr = rr

    def interior_rows(self) -> np.ndarray:
        return self.x[1:-1, 1:-1].copy()

"""The distributed quicklaunch CG: bench/cg's kernels on a row block.

Per iteration, with the halo of p exchanged at the top:

    interior   cg_apply on rows 1 .. m-2 (on a second stream)   | overlapped
    halo       Sendrecv of p's first and last rows with the     | with
               neighbours into the ghost rows (host, mpi4py)    | each other
    boundary   cg_apply on rows 0 and m-1 (they read the ghosts)
    wait       the second stream
    dot        p . ap over the block -> Allreduce -> alpha
    update     x += alpha p ; r -= alpha ap
    dot        r . r -> Allreduce -> beta
    update     p = r + beta p

The kernels are those of bench/cg/kernels.py, unchanged: cg_apply computes
the rows of its grid (exactly the rows launched: grid.y x block.y = rows),
starting at the row its pointers are offset to (raw device pointers, legal
for pointer parameters); the vector kernels and cg_dot run over the block's
m interior rows, so the ghost rows are only ever written by the halo
exchange. Local dot products are float32 as in the single-rank row; the sum
over ranks is a float64 Allreduce of the per-rank partial sums.

``overlap``: "stream" (the interior on a second stream while the host
exchanges the halo) or "none" (halo first, then one cg_apply over the
block: 5 launches an iteration instead of 7). The default, "auto", is
"stream" on GPUs and on a CPU rank with more than one CPU, else "none" (a
rank pinned to one CPU has nothing to overlap with: its stream thread and
MPI's progress loop would take turns on that CPU).
"""
from __future__ import annotations

import os
import time

import numpy as np

from ..cg import kernels as K
from ..cg import shapes as shapes_
from ..cg.ql_impl import modules
from .decomp import Block


def _rows_shape(dev, N: int, rows: int):
    """(grid, block, run) of cg_apply covering exactly ``rows`` rows."""
    if dev.host_memory:    # the CPU: one thread per row does the whole row
        if rows <= 1024:
            return (1, 1), (1, rows), N
        return (1, rows), (1, 1), N
    grid, block, run = shapes_.apply_shape(dev, N)
    return (grid[0], rows), block, run


class QuicklaunchMPISolver:
    def __init__(self, dev, comm, block: Block, f: np.ndarray, overlap: str = "auto"):
        import quicklaunch as ql
        from mpi4py import MPI
        self.dev, self.comm, self.b = dev, comm, block
        vec, red = modules(dev)
        m, W, N = block.m, block.W, block.N
        if overlap == "auto":
            many = len(os.sched_getaffinity(0)) > 1
            overlap = "stream" if (not dev.host_memory or many) else "none"
        if overlap == "stream" and m < 3:
            overlap = "none"   # no interior rows to overlap with
        self.overlap = overlap
        self.f = ql.asarray(block.padded_f(f).ravel(), device=dev)
        size = (m + 2) * W
        self.x, self.r, self.p, self.ap = (ql.zeros(size, np.float32, device=dev)
                                           for _ in range(4))
        self.s = ql.zeros(K.NSCALARS, np.float32, device=dev)
        self.partial = ql.zeros(K.MAX_DOT_BLOCKS, np.float32, device=dev)
        self.ticket = ql.zeros(1, np.uint32, device=dev)
        self.n = n = m * W                       # the block's interior rows, flat
        row = W * 4                              # bytes of a padded row
        self.off = lambda buf, rows: buf.ptr + rows * row
        self.stream = ql.Stream(device=dev) if overlap == "stream" else None
        # cg_apply configurations: (launcher, row offset, run)
        if overlap == "stream":
            g, b, run = _rows_shape(dev, N, m - 2)
            self.interior = (vec.cg_apply.configure(g, b, stream=self.stream), 1, run)
            g1, b1, run1 = _rows_shape(dev, N, 1)
            one = vec.cg_apply.configure(g1, b1)
            self.edges = [(one, 0, run1), (one, m - 1, run1)]
        else:
            g, b, run = _rows_shape(dev, N, m)
            self.interior, self.edges = None, [(vec.cg_apply.configure(g, b), 0, run)]
        vg, vb, self.vrun = shapes_.vector_shape(dev, n)
        self.full = size
        fg, fb, self.frun = shapes_.vector_shape(dev, size)
        self.reset_k = vec.cg_reset.configure(fg, fb)
        self.update_xr = vec.cg_update_xr.configure(vg, vb)
        self.update_p = vec.cg_update_p.configure(vg, vb)
        dg, db, self.drun = shapes_.dot_shape(dev, n)
        self.dot = red.cg_dot.configure(dg, db)
        self.launches = 5 + (2 if overlap == "stream" else 0)
        if dev.host_memory:
            view = self.s.numpy()
            self.read = lambda k: float(view[k])
        else:
            s = self.s
            self.read = lambda k: float(s.numpy()[k])
        # halo windows of p (zero-copy, mpi/__init__.buffer)
        from ... import mpi as qlmpi
        win = lambda r: qlmpi.buffer(self.p, r * W, W)   # noqa: E731
        up = MPI.PROC_NULL if block.up is None else block.up
        down = MPI.PROC_NULL if block.down is None else block.down
        self.halo = [(win(1), up, win(m + 1), down), (win(m), down, win(0), up)]
        self.sum = np.zeros(1, np.float64)
        self.rr = 0.0
        self.t_comm = 0.0

    # ---------------------------------------------------------------- parts
    def _allreduce(self, v: float) -> float:
        t = time.perf_counter()
        self.sum[0] = v
        self.comm.Allreduce(self.MPI_IN_PLACE, self.sum)
        self.t_comm += time.perf_counter() - t
        return float(self.sum[0])

    def _exchange(self) -> None:
        t = time.perf_counter()
        for send, dest, recv, source in self.halo:
            self.comm.Sendrecv(send, dest, 1, recv, source, 1)
        self.t_comm += time.perf_counter() - t

    def _local_dot(self, a, b, mode) -> float:
        self.dot(self.off(a, 1), self.off(b, 1), self.n, self.drun, self.partial,
                 self.ticket, self.s, mode)
        return self.read(K.PAP if mode == K.STORE_PAP else K.RRNEW)

    def reset(self) -> None:
        from mpi4py import MPI
        self.MPI_IN_PLACE = MPI.IN_PLACE
        self.reset_k(self.f, self.x, self.r, self.p, self.full, self.frun)   # ghosts too
        self.dev.synchronize()
        self.rr = self._allreduce(self._local_dot(self.r, self.r, K.STORE_RRNEW))
        self.t_comm = 0.0

    def solve(self, iterations: int) -> None:
        p, ap, x, r, n, N, off = self.p, self.ap, self.x, self.r, self.n, self.b.N, self.off
        vrun, update_xr, update_p, dev = self.vrun, self.update_xr, self.update_p, self.dev
        rr = self.rr
        for _ in range(iterations):
            if self.interior is not None:
                k, at, run = self.interior
                k(off(p, at), off(ap, at), N, run)       # queued on the second stream
                self._exchange()                          # meanwhile: the halo
            else:
                if not dev.host_memory:
                    dev.synchronize()                     # the stream rule
                self._exchange()
            for k, at, run in self.edges:
                k(off(p, at), off(ap, at), N, run)
            if self.stream is not None:
                self.stream.synchronize()
            pap = self._allreduce(self._local_dot(p, ap, K.STORE_PAP))
            alpha = rr / pap if pap != 0.0 else 0.0
            update_xr(alpha, off(p, 1), off(ap, 1), off(x, 1), off(r, 1), n, vrun)
            rr_new = self._allreduce(self._local_dot(r, r, K.STORE_RRNEW))
            beta = rr_new / rr if rr != 0.0 else 0.0
            update_p(beta, off(r, 1), off(p, 1), n, vrun)
            if not dev.host_memory:
                dev.synchronize()                         # p is MPI's next
            rr = rr_new
        self.rr = rr
        dev.synchronize()

    def interior_rows(self) -> np.ndarray:
        b = self.b
        return np.array(self.x.numpy().reshape(b.m + 2, b.W)[1:-1, 1:-1], np.float32)

    def launch_cost(self, repeats: int = 2000) -> float:
        """Seconds of host time per launch of one of this solver's configured
        kernels with no work (n = 0): the launch overhead the split uses."""
        k = self.update_p
        p = self.p
        for _ in range(100):
            k(0.0, p, p, 0, 1)
        t = time.perf_counter()
        for _ in range(repeats):
            k(0.0, p, p, 0, 1)
        self.dev.synchronize()
        return (time.perf_counter() - t) / repeats

"""The quicklaunch rows: CG with the CUDA C++ kernels of kernels.py.

    quicklaunch         host scalars: after each dot product the host reads
                        the sum back (on a GPU, a copy that waits for the
                        kernel), computes alpha or beta and passes it by
                        value to the next launch. Five configured launches
                        and two read-backs per iteration: the classic
                        launch-bound pattern.
    quicklaunch graph   device scalars: the dot kernels compute alpha and
                        beta into a device buffer the update kernels read,
                        so nothing comes back to the host; the whole solve
                        (five launches per iteration) is recorded once with
                        ``ql.graph()`` and replayed with one call.

Vectors are (N + 2) x (N + 2) with a ring of zero ghost cells, so the
stencil needs no boundary tests. Buffers come from ``ql.zeros``/``ql.asarray``
on the device, so the same code runs on ``device="cuda"`` (on the CPU they
are NumPy memory).
"""
from __future__ import annotations

import numpy as np

from . import kernels as K
from . import shapes as shapes_
from .impl import Implementation, Solver

_MODULES: dict = {}


def modules(dev):
    """(vector module, reduction module) for ``dev``, compiled once per process."""
    import quicklaunch as ql
    if dev not in _MODULES:
        _MODULES[dev] = (ql.compile(K.VECTOR_SOURCE, device=dev),
                         ql.compile(K.REDUCE_SOURCE, device=dev))
    return _MODULES[dev]


class QuicklaunchSolver(Solver):
    def __init__(self, dev, problem, graph: bool, shapes=None):
        """``shapes``: {"apply" | "vector" | "dot": (grid, block, run)} to
        override shapes.py's choice for ``dev`` (the tests run a GPU's
        shapes on the CPU device)."""
        import quicklaunch as ql
        self.dev, self.N, self.graph = dev, problem.N, graph
        vec, red = modules(dev)
        # Every vector is (N + 2) x (N + 2) with a ring of zero ghost cells
        # (see cg_apply); the kernels keep the ring zero, so the dot products
        # over the padded vectors are the dot products of the interiors.
        W = self.N + 2
        self.n = n = W * W
        f = np.zeros((W, W), np.float32)
        f[1:-1, 1:-1] = problem.f
        self.f = ql.asarray(f.ravel(), device=dev)
        self.x, self.r, self.p, self.ap = (ql.zeros(n, np.float32, device=dev) for _ in range(4))
        self.s = ql.zeros(K.NSCALARS, np.float32, device=dev)
        self.partial = ql.zeros(K.MAX_DOT_BLOCKS, np.float32, device=dev)
        self.ticket = ql.zeros(1, np.uint32, device=dev)
        shapes = shapes or {}
        grid, block, self.arun = shapes.get("apply") or shapes_.apply_shape(dev, self.N)
        self.apply = vec.cg_apply.configure(grid, block)
        vgrid, vblock, self.vrun = shapes.get("vector") or shapes_.vector_shape(dev, n)
        self.reset_k = vec.cg_reset.configure(vgrid, vblock)
        if graph:
            self.update_xr = vec.cg_update_xr_dev.configure(vgrid, vblock)
            self.update_p = vec.cg_update_p_dev.configure(vgrid, vblock)
        else:
            self.update_xr = vec.cg_update_xr.configure(vgrid, vblock)
            self.update_p = vec.cg_update_p.configure(vgrid, vblock)
        dgrid, dblock, self.run = shapes.get("dot") or shapes_.dot_shape(dev, n)
        if not 1 <= dgrid <= K.MAX_DOT_BLOCKS:
            raise ValueError(f"cg_dot grid {dgrid} is outside 1..{K.MAX_DOT_BLOCKS}")
        self.dot = red.cg_dot.configure(dgrid, dblock)
        if dev.host_memory:
            view = self.s.numpy()
            self.read = lambda k: float(view[k])
        else:
            s = self.s
            self.read = lambda k: float(s.numpy()[k])  # a copy that waits for the GPU
        self.rr = 0.0
        self._graph, self._graph_iterations = None, -1

    def reset(self) -> None:
        n = self.n
        self.reset_k(self.f, self.x, self.r, self.p, n, self.vrun)
        mode = K.DEV_INIT if self.graph else K.STORE_RRNEW
        self.dot(self.r, self.r, n, self.run, self.partial, self.ticket, self.s, mode)
        self.rr = self.read(K.RRNEW)

    def solve(self, iterations: int) -> None:
        if self.graph:
            if self._graph_iterations != iterations:
                self._record(iterations)
            self._graph.replay()
            self.dev.synchronize()
            return
        apply, dot, update_xr, update_p, read = (self.apply, self.dot, self.update_xr,
                                                  self.update_p, self.read)
        N, n, run, arun, vrun = self.N, self.n, self.run, self.arun, self.vrun
        x, r, p, ap, s, partial, ticket = (self.x, self.r, self.p, self.ap, self.s,
                                           self.partial, self.ticket)
        rr = self.rr
        for _ in range(iterations):
            apply(p, ap, N, arun)
            dot(p, ap, n, run, partial, ticket, s, 0)        # K.STORE_PAP
            pap = read(1)                                     # K.PAP
            alpha = rr / pap if pap != 0.0 else 0.0
            update_xr(alpha, p, ap, x, r, n, vrun)
            dot(r, r, n, run, partial, ticket, s, 1)          # K.STORE_RRNEW
            rr_new = read(4)                                  # K.RRNEW
            beta = rr_new / rr if rr != 0.0 else 0.0
            update_p(beta, r, p, n, vrun)
            rr = rr_new
        self.rr = rr
        self.dev.synchronize()

    def _record(self, iterations: int) -> None:
        import quicklaunch as ql
        N, n, run, arun, vrun = self.N, self.n, self.run, self.arun, self.vrun
        x, r, p, ap, s, partial, ticket = (self.x, self.r, self.p, self.ap, self.s,
                                           self.partial, self.ticket)
        self._graph = None
        with ql.graph(device=self.dev) as g:
            for _ in range(iterations):
                self.apply(p, ap, N, arun)
                self.dot(p, ap, n, run, partial, ticket, s, K.DEV_ALPHA)
                self.update_xr(s, p, ap, x, r, n, vrun)
                self.dot(r, r, n, run, partial, ticket, s, K.DEV_BETA)
                self.update_p(s, r, p, n, vrun)
        self._graph, self._graph_iterations = g, iterations

    def result(self) -> np.ndarray:
        W = self.N + 2
        return np.array(self.x.numpy().reshape(W, W)[1:-1, 1:-1], dtype=np.float32)


class QuicklaunchCG(Implementation):
    distribution = "quicklaunch"

    def __init__(self, graph: bool = False):
        self.graph = graph
        self.name = "quicklaunch graph" if graph else "quicklaunch"

    def version(self) -> str:
        import quicklaunch as ql
        return ql.__version__

    def prepare(self, device) -> None:
        self.dev = device
        modules(device)

    def solver(self, problem) -> QuicklaunchSolver:
        return QuicklaunchSolver(self.dev, problem, self.graph)

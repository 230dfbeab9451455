"""The NVIDIA Warp rows (``pip install warp-lang``).

    warp         seven ``wp.launch`` calls per iteration (a dot product is
                 two launches), device scalars, no read-back: the usual way
                 to write it in Warp.
    warp graph   the same launches recorded once with ``wp.ScopedCapture``
                 and replayed with ``wp.capture_launch`` (a CUDA graph on a
                 GPU; recent Warp, 1.19 here, records on the CPU too, where
                 an older one refuses and the row says so).

Warp runs on the device quicklaunch runs on: "cpu", or "cuda:N" for a
quicklaunch CUDA device. Kernels are in warp_kernels.py.
"""
from __future__ import annotations

import numpy as np

from .impl import Implementation, Solver, Unavailable


class WarpSolver(Solver):
    def __init__(self, wp, K, device: str, problem, graph: bool):
        self.wp, self.K, self.device, self.graph = wp, K, device, graph
        self.N, n = problem.N, problem.n
        self.n = n
        with wp.ScopedDevice(device):
            self.f = wp.array(np.ascontiguousarray(problem.f, dtype=np.float32).ravel())
            self.x, self.r, self.p, self.ap = (wp.zeros(n, dtype=float) for _ in range(4))
            self.s = wp.zeros(8, dtype=float)
            self.nparts = (n + K.CHUNK - 1) // K.CHUNK
            self.partial = wp.zeros(self.nparts, dtype=float)
        self.p2 = self.p.reshape((self.N, self.N))
        self.ap2 = self.ap.reshape((self.N, self.N))
        self._graph, self._graph_iterations = None, -1

    def _dot(self, a, b, mode: int) -> None:
        wp, K = self.wp, self.K
        wp.launch(K.dot_partial, dim=self.nparts, inputs=[a, b, self.n, self.partial],
                  device=self.device)
        wp.launch(K.dot_finish, dim=1, inputs=[self.partial, self.nparts, self.s, mode],
                  device=self.device)

    def _iterations(self, iterations: int) -> None:
        wp, K, dev, n = self.wp, self.K, self.device, self.n
        x, r, p, ap, s = self.x, self.r, self.p, self.ap, self.s
        for _ in range(iterations):
            wp.launch(K.cg_apply, dim=(self.N, self.N), inputs=[self.p2, self.ap2, self.N],
                      device=dev)
            self._dot(p, ap, 2)
            wp.launch(K.cg_update_xr, dim=n, inputs=[s, p, ap, x, r], device=dev)
            self._dot(r, r, 3)
            wp.launch(K.cg_update_p, dim=n, inputs=[s, r, p], device=dev)

    def reset(self) -> None:
        wp, K = self.wp, self.K
        wp.launch(K.cg_reset, dim=self.n, inputs=[self.f, self.x, self.r, self.p],
                  device=self.device)
        self._dot(self.r, self.r, 4)
        wp.synchronize_device(self.device)

    def solve(self, iterations: int) -> None:
        wp = self.wp
        if not self.graph:
            self._iterations(iterations)
        else:
            if self._graph_iterations != iterations:
                with wp.ScopedCapture(device=self.device) as capture:
                    self._iterations(iterations)
                self._graph, self._graph_iterations = capture.graph, iterations
            wp.capture_launch(self._graph)
        wp.synchronize_device(self.device)

    def result(self) -> np.ndarray:
        return self.x.numpy().astype(np.float32).reshape(self.N, self.N)


class WarpCG(Implementation):
    module = "warp"
    distribution = "warp-lang"

    def __init__(self, graph: bool = False):
        self.graph = graph
        self.name = "warp graph" if graph else "warp"

    def prepare(self, device) -> None:
        wp = self.need()
        wp.config.quiet = True                                  # Warp < 1.19
        wp.config.log_level = getattr(wp, "LOG_ERROR", 40)      # Warp 1.19+: no banner
        wp.init()
        from . import warp_kernels as K
        self.wp, self.K = wp, K
        self.device = "cpu" if device.kind == "cpu" else f"{device.kind}:{device.ordinal}"
        try:
            wp.get_device(self.device)
        except Exception as exc:  # noqa: BLE001
            raise Unavailable(f"not available: Warp has no device {self.device!r} ({exc})") \
                from None
        wp.load_module(K, device=self.device)   # compile now, not in a timed solve

    def solver(self, problem) -> WarpSolver:
        return WarpSolver(self.wp, self.K, self.device, problem, self.graph)


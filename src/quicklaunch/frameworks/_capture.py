"""A guard for CUDA stream captures made outside quicklaunch (torch.cuda.graph,
cuStreamBeginCapture): while it is active, a quicklaunch launch on the
legacy default stream of the captured device raises instead of running at
once, outside the graph.

The driver itself refuses such a launch only next to a capturing *blocking*
stream (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); torch captures on non-blocking
side streams, and there the launch would run now and every replay would
skip it. The guard uses the launcher's capture hook (the one ql.graph
records through): during the capture every launch passes through it
(Python, a few hundred ns: a capture is made once), launches on other
streams go on as usual (the driver records those on the capturing stream),
and outside the guard the fast path is untouched."""
from __future__ import annotations

import threading

from .. import _launch
from ..errors import LaunchError


class CaptureGuard:
    """``with CaptureGuard(device, stream):`` around a capture of ``stream``
    (a raw handle) on quicklaunch device ``device``."""

    def __init__(self, device, stream: int, what: str = "a CUDA graph capture"):
        from ..devices import device as _device
        self.device = _device(device)
        self.stream = int(stream or 0)
        self.what = what
        self._previous = None
        self._thread = None

    def _hook(self, kernel, grid, block, shared, stream, block_bytes, args):
        if kernel.device is self.device and stream == 0:
            raise LaunchError(
                f"kernel '{kernel.name}' launches on the legacy default stream of "
                f"{self.device.name} while stream {self.stream:#x} is being captured "
                f"({self.what}): it would run now, outside the graph, and every replay would "
                f"skip it; launch on the capturing stream (ql.torch.launcher, ql.torch.op, or "
                f"stream=torch.cuda.current_stream().cuda_stream)")
        if self._previous is not None:   # a ql.graph recording underneath
            return self._previous(kernel, grid, block, shared, stream, block_bytes, args)
        return False

    def __enter__(self) -> "CaptureGuard":
        self._thread = threading.get_ident()
        self._previous = _launch._set_capture_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        restored = _launch._set_capture_hook(self._previous)
        self._previous = None
        if restored is not None and getattr(restored, "__self__", None) is not self:
            _launch._set_capture_hook(restored)   # not ours: leave it

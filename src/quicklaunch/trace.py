"""Launch traces: ``with ql.trace("run.json"):`` records every launch (kernel,
grid, block, shared memory, stream, an argument summary, start and duration)
and writes a Chrome/Perfetto trace (open it at ui.perfetto.dev or in
chrome://tracing). ``QUICKLAUNCH_TRACE=path`` traces a whole run.

While no trace is recording, a launch pays one never-taken branch.
"""
from __future__ import annotations

import atexit
import json
import os
import threading
from contextlib import contextmanager

import numpy as np

from . import _launch

__all__ = ["trace", "Trace"]


def _summary(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} {value.shape}"
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{type(value).__name__} {dtype} {tuple(shape)}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Trace:
    """The launches recorded so far (``events``, Chrome trace events)."""

    def __init__(self, path):
        self.path = os.fspath(path) if path is not None else None
        self.events: list[dict] = []
        self._lock = threading.Lock()

    def _record(self, kernel, grid, block, shared, stream, args, start_ns, dur_ns, status):
        event = {
            "name": kernel.name, "cat": "launch", "ph": "X",
            "ts": start_ns / 1000.0, "dur": dur_ns / 1000.0,
            "pid": os.getpid(), "tid": threading.get_ident(),
            "args": {"grid": list(grid), "block": list(block), "shared_mem": shared,
                     "stream": hex(stream), "device": getattr(kernel, "device", None) and
                     kernel.device.name, "status": status,
                     "arguments": {p.name: _summary(a) for p, a in
                                   zip(getattr(kernel, "params", ()), args)}},
        }
        with self._lock:
            self.events.append(event)

    def write(self) -> None:
        if self.path:
            with open(self.path, "w") as f:
                json.dump({"traceEvents": self.events, "displayTimeUnit": "ns"}, f)


@contextmanager
def trace(path=None):
    """Records every launch in the block; writes them to ``path`` (if given)
    on exit. Yields the Trace (its ``events`` list)."""
    t = Trace(path)
    previous = _launch._set_trace_hook(t._record)
    try:
        yield t
    finally:
        _launch._set_trace_hook(previous)
        t.write()


def _from_environment() -> None:
    path = os.environ.get("QUICKLAUNCH_TRACE")
    if path:
        t = Trace(path)
        _launch._set_trace_hook(t._record)
        atexit.register(t.write)

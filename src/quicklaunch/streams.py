"""Streams and events: ``ql.Stream``, ``ql.Event``.

A stream is an in-order queue of launches on one device; a launch on it
returns before the kernel has run. Pass it as a launch's ``stream``
(``k[grid, block, 0, s]``, ``k.configure(grid, block, stream=s)``). The
default stream (``stream=None``) behaves as CUDA's legacy default stream:
work on it waits for all other streams and runs before anything queued
after it. An event marks a point in a stream: other streams can wait for
it, the host can wait for it, and two events time what ran between them.

Each device's backend supplies the operations (``ops(device)``, the
``StreamOps`` of backends/base.py): the CPU runtime, the CUDA driver, the
HIP runtime (no graphs yet). Handles are ints; 0 is the default stream.
The operations are:

    stream_create() -> int                stream_destroy(s)
    stream_synchronize(s)                 stream_query(s) -> bool
    stream_wait_event(s, e)               device_synchronize()
    event_create(timing: bool) -> int     event_destroy(e)
    event_record(e, s)                    event_synchronize(e)
    event_query(e) -> bool                event_elapsed_ms(start, end) -> float
    graph_create(n) -> int                graph_destroy(g)
    graph_set_launch(g, i, kernel, grid, block, shared, block_bytes)
    graph_set_wait(g, i, e)               graph_launch(g, s)

Failures of queued work raise ``LaunchError`` at the next synchronising
call, naming the kernel that failed.
"""
from __future__ import annotations

from .capture import active_capture, capture_check as _capture_check
from .devices import Device, device as get_device
from .errors import LaunchError

__all__ = ["Stream", "Event", "ops"]

def ops(dev: Device):
    """The stream operations of a device (its backend makes them once)."""
    return dev.backend.stream_ops()


class Stream:
    """An in-order queue of launches on ``device`` (default: ``ql.device()``).

    ``timeout`` (seconds, CPU device only): a launch on this stream that runs
    longer fails with a ``LaunchError`` naming the kernel and the blocks still
    running, raised at the next synchronising call."""

    def __init__(self, device=None, timeout: float | None = None):
        self.device = get_device(device)
        self._ops = ops(self.device)
        set_timeout = getattr(self._ops, "stream_set_timeout", None)
        if timeout and set_timeout is None:
            raise LaunchError(f"Stream(timeout=...): device '{self.device}' has no kernel "
                              "timeouts (the CPU device has)")
        self.handle = self._ops.stream_create()
        if timeout:
            set_timeout(self.handle, timeout)

    def __ql_stream__(self) -> tuple[int, int]:
        """(device id, handle): what the launcher reads from a stream."""
        if not self.handle:
            raise LaunchError("this stream was closed")
        return self.device.id, self.handle

    def __cuda_stream__(self) -> tuple[int, int]:
        if not self.device.backend.cuda_stream_protocol:
            raise AttributeError("__cuda_stream__: not a CUDA stream")
        return 0, self.handle

    def synchronize(self) -> None:
        """Waits for everything queued; raises the first failure of queued work."""
        _capture_check("Stream.synchronize()")
        self._ops.stream_synchronize(self.handle)

    def query(self) -> bool:
        """True when everything queued has finished."""
        return self._ops.stream_query(self.handle)

    def wait(self, event: "Event") -> None:
        """Work queued on this stream after this call waits for ``event``."""
        g = active_capture()
        if g is not None and g._record_wait(self, event):
            return
        self._ops.stream_wait_event(self.handle, event.handle)

    def record(self, event: "Event | None" = None) -> "Event":
        """Records ``event`` (a new one if None) at this point of the stream."""
        event = event or Event(self.device)
        event.record(self)
        return event

    def close(self) -> None:
        """Finishes the queued work and releases the stream."""
        if self.handle:
            handle, self.handle = self.handle, 0
            self._ops.stream_destroy(handle)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass

    def __repr__(self) -> str:
        return f"<quicklaunch.Stream {self.handle:#x} on {self.device.name}>"


class Event:
    """A point in a stream: record it, wait for it, time between two."""

    def __init__(self, device=None, timing: bool = True):
        self.device = get_device(device)
        self._ops = ops(self.device)
        self.handle = self._ops.event_create(timing)
        self._recorded = False

    def _stream_handle(self, stream) -> int:
        if stream is None:
            return 0
        if not isinstance(stream, Stream):
            raise TypeError(f"stream must be a ql.Stream or None, got {type(stream).__name__}")
        if stream.device is not self.device:
            raise LaunchError(f"the event is on {self.device.name} but the stream on "
                              f"{stream.device.name}")
        return stream.handle

    def record(self, stream: "Stream | None" = None) -> "Event":
        """Marks the current end of ``stream`` (None: the default stream)."""
        self._ops.event_record(self.handle, self._stream_handle(stream))
        self._recorded = True
        return self

    def synchronize(self) -> None:
        """Waits until the stream has reached the latest record."""
        _capture_check("Event.synchronize()")
        self._ops.event_synchronize(self.handle)

    def query(self) -> bool:
        return self._ops.event_query(self.handle)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds from this event to ``end`` (both recorded and reached)."""
        if not (self._recorded and end._recorded):
            raise LaunchError("elapsed_time needs both events recorded first")
        return self._ops.event_elapsed_ms(self.handle, end.handle)

    def __del__(self):
        try:
            if self.handle:
                handle, self.handle = self.handle, 0
                self._ops.event_destroy(handle)
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self) -> str:
        return f"<quicklaunch.Event {self.handle:#x} on {self.device.name}>"

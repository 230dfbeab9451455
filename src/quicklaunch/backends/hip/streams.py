"""The HIP device's stream and event operations (the interface is in
quicklaunch/streams.py), through the HIP runtime. Graphs are not built yet:
each graph operation raises LaunchError saying so.

Streams are made with hipStreamDefault: blocking streams, which synchronise
with the null stream, as the CPU and CUDA devices' streams do with their
default streams. Handle 0 is the null stream. Events are made with
hipEventDefault, or hipEventDisableTiming when they need not time.

A failure of queued work, reported by a synchronising call (a kernel that
faulted), raises LaunchError with the runtime's status name; the runtime
does not say which kernel failed. Any other failure raises ``HipError``.
"""
from __future__ import annotations

from ctypes import byref, c_float, c_void_p

from ...errors import LaunchError
from .driver import hipErrorNotReady

__all__ = ["HipStreamOps", "GRAPHS_NOT_BUILT"]

hipStreamDefault = 0
hipEventDefault, hipEventDisableTiming = 0, 2
GRAPHS_NOT_BUILT = "graphs on HIP are not built yet; replay the launches without ql.graph()"
# failures of launched work that a later call reports
_WORK_FAILURES = frozenset({700, 701, 702, 710, 719, 720, 214})


class HipStreamOps:
    """Streams and events of one GPU (a HipDevice)."""

    def __init__(self, backend):
        self._dev = backend
        self._rt = backend.runtime
        self._name = f"hip:{backend.ordinal}"
        self._untimed: set[int] = set()

    def _status(self, fn, *args) -> int:
        if not self._dev.current():
            self._dev.make_current()
        return fn(*args)

    def _error(self, status: int, call: str, what: str) -> Exception:
        if status not in _WORK_FAILURES:
            return self._rt.error(status, f"{call} ({what})")
        name, text = self._rt.error_name(status)
        return LaunchError(f"{what}: an earlier launch failed: {name} ({status}): {text} "
                           f"(the runtime does not say which kernel; with "
                           f"AMD_SERIALIZE_KERNEL=3 each launch reports its own failure)")

    def _call(self, fn, call: str, what: str, *args) -> None:
        status = self._status(fn, *args)
        if status:
            raise self._error(status, call, what)

    def _ready(self, fn, call: str, what: str, handle: int) -> bool:
        status = self._status(fn, c_void_p(handle))
        if status == hipErrorNotReady:
            return False
        if status:
            raise self._error(status, call, what)
        return True

    # -------------------------------------------------------------- streams
    def stream_create(self) -> int:
        out = c_void_p()
        self._call(self._rt.hipStreamCreateWithFlags, "hipStreamCreateWithFlags",
                   "creating a stream", byref(out), hipStreamDefault)
        return out.value

    def stream_destroy(self, s: int) -> None:
        """Finishes the stream's work (reporting its failure), then destroys it."""
        synced = self._status(self._rt.hipStreamSynchronize, c_void_p(s))
        destroyed = self._rt.hipStreamDestroy(c_void_p(s))
        if synced:
            raise self._error(synced, "hipStreamSynchronize", "Stream.close()")
        if destroyed:
            raise self._error(destroyed, "hipStreamDestroy", "Stream.close()")

    def stream_synchronize(self, s: int) -> None:
        self._call(self._rt.hipStreamSynchronize, "hipStreamSynchronize",
                   "Stream.synchronize()", c_void_p(s))

    def stream_query(self, s: int) -> bool:
        return self._ready(self._rt.hipStreamQuery, "hipStreamQuery", "Stream.query()", s)

    def stream_wait_event(self, s: int, e: int) -> None:
        self._call(self._rt.hipStreamWaitEvent, "hipStreamWaitEvent", "Stream.wait()",
                   c_void_p(s), c_void_p(e), 0)

    def device_synchronize(self) -> None:
        self._call(self._rt.hipDeviceSynchronize, "hipDeviceSynchronize",
                   f"{self._name}.synchronize()")

    # --------------------------------------------------------------- events
    def event_create(self, timing: bool = True) -> int:
        out = c_void_p()
        flags = hipEventDefault if timing else hipEventDisableTiming
        self._call(self._rt.hipEventCreateWithFlags, "hipEventCreateWithFlags",
                   "creating an event", byref(out), flags)
        if not timing:
            self._untimed.add(out.value)
        return out.value

    def event_destroy(self, e: int) -> None:
        self._untimed.discard(e)
        self._call(self._rt.hipEventDestroy, "hipEventDestroy", "destroying an event",
                   c_void_p(e))

    def event_record(self, e: int, s: int) -> None:
        self._call(self._rt.hipEventRecord, "hipEventRecord", "Event.record()", c_void_p(e),
                   c_void_p(s))

    def event_synchronize(self, e: int) -> None:
        self._call(self._rt.hipEventSynchronize, "hipEventSynchronize", "Event.synchronize()",
                   c_void_p(e))

    def event_query(self, e: int) -> bool:
        return self._ready(self._rt.hipEventQuery, "hipEventQuery", "Event.query()", e)

    def event_elapsed_ms(self, start: int, end: int) -> float:
        if start in self._untimed or end in self._untimed:
            raise LaunchError("elapsed_time needs two events made with timing=True; "
                              "ql.Event(timing=False) does not keep time")
        ms = c_float()
        status = self._status(self._rt.hipEventElapsedTime, byref(ms), c_void_p(start),
                              c_void_p(end))
        if status == hipErrorNotReady:
            raise LaunchError("elapsed_time: an event has not been reached yet; "
                              "synchronize the later event first")
        if status:
            raise self._error(status, "hipEventElapsedTime", "Event.elapsed_time()")
        return float(ms.value)

    # --------------------------------------------------------------- graphs
    def graph_create(self, n: int) -> int:
        raise LaunchError(GRAPHS_NOT_BUILT)

    def graph_destroy(self, g: int) -> None:
        raise LaunchError(GRAPHS_NOT_BUILT)

    def graph_set_launch(self, g, i, kernel, grid, block, shared, block_bytes) -> None:
        raise LaunchError(GRAPHS_NOT_BUILT)

    def graph_set_wait(self, g: int, i: int, e: int) -> None:
        raise LaunchError(GRAPHS_NOT_BUILT)

    def graph_launch(self, g: int, s: int) -> None:
        raise LaunchError(GRAPHS_NOT_BUILT)

"""The CPU device's stream, event and graph operations (see
quicklaunch/streams.py for the interface), over runtime's streams.c."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_double, c_int, c_uint, c_uint32, c_uint64, c_void_p

from ...errors import LaunchError
from . import runtime

_NOT_READY = 600
_TOO_MANY, _FORKED = 3, 4
_MEANING = {1: "invalid value", 2: "out of memory", 400: "invalid or closed handle",
            600: "not ready"}

_SIGNATURES = {
    "ql_cpu_stream_create": [POINTER(c_uint64)],
    "ql_cpu_stream_destroy": [c_uint64],
    "ql_cpu_stream_synchronize": [c_uint64],
    "ql_cpu_stream_query": [c_uint64],
    "ql_cpu_stream_set_timeout": [c_uint64, c_double],
    "ql_cpu_stream_wait_event": [c_uint64, c_uint64],
    "ql_cpu_device_synchronize": [],
    "ql_cpu_event_create": [POINTER(c_uint64)],
    "ql_cpu_event_destroy": [c_uint64],
    "ql_cpu_event_record": [c_uint64, c_uint64],
    "ql_cpu_event_synchronize": [c_uint64],
    "ql_cpu_event_query": [c_uint64],
    "ql_cpu_event_elapsed": [c_uint64, c_uint64, POINTER(c_double)],
    "ql_cpu_graph_create": [c_int, POINTER(c_uint64)],
    "ql_cpu_graph_destroy": [c_uint64],
    "ql_cpu_graph_set_launch": [c_uint64, c_int, c_void_p, POINTER(c_uint), c_uint,
                                ctypes.c_char_p, c_uint32],
    "ql_cpu_graph_set_wait": [c_uint64, c_int, c_uint64],
    "ql_cpu_graph_launch": [c_uint64, c_uint64],
}


class CpuStreamOps:
    """Streams run by their own threads on the CPU runtime's pool."""

    def __init__(self):
        lib = runtime.library()
        for name, args in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, c_int
            setattr(self, "_" + name[len("ql_cpu_"):], fn)

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status:
            raise LaunchError(f"{what} failed: {_MEANING.get(status, 'status %d' % status)}")

    def _failed_work(self, status: int, what: str) -> None:
        """A synchronising call's status: the kept failure of queued work."""
        if status == 0:
            return
        if status in (1, 2, 400):
            raise LaunchError(f"{what} failed: {_MEANING[status]}")
        detail = runtime.library().ql_cpu_last_error().decode(errors="replace")
        if status == _FORKED:
            raise LaunchError(f"{what}: {detail}")
        raise LaunchError(f"{what}: an earlier launch failed: {detail}")

    # -------------------------------------------------------------- streams
    def stream_create(self) -> int:
        runtime.StreamsSeen.made = True
        out = c_uint64()
        status = self._stream_create(byref(out))
        if status == _TOO_MANY:
            n = c_int.in_dll(runtime.library(), "ql_cpu_max_streams").value
            raise LaunchError(f"creating a stream failed: the CPU device holds at most {n} "
                              f"live streams (each has a thread of its own); close the "
                              f"streams you no longer need (Stream.close(), or a 'with' block)")
        self._check(status, "creating a stream")
        return out.value

    def stream_set_timeout(self, s: int, seconds: float) -> None:
        """Launches on the stream that run longer than `seconds` fail (0: the
        device's timeout, runtime.set_timeout)."""
        value = float(seconds or 0)
        if not 0 <= value < 1e9:
            raise ValueError(f"timeout: {seconds!r} is not a number of seconds >= 0")
        self._check(self._stream_set_timeout(s, value), "Stream timeout")

    def stream_destroy(self, s: int) -> None:
        self._failed_work(self._stream_destroy(s), "Stream.close()")

    def stream_synchronize(self, s: int) -> None:
        self._failed_work(self._stream_synchronize(s), "Stream.synchronize()")

    def stream_query(self, s: int) -> bool:
        status = self._stream_query(s)
        if status == _NOT_READY:
            return False
        self._check(status, "Stream.query()")
        return True

    def stream_wait_event(self, s: int, e: int) -> None:
        self._check(self._stream_wait_event(s, e), "Stream.wait()")

    def device_synchronize(self) -> None:
        self._failed_work(self._device_synchronize(), "synchronize()")

    # --------------------------------------------------------------- events
    def event_create(self, timing: bool = True) -> int:
        out = c_uint64()
        status = self._event_create(byref(out))
        if status == _TOO_MANY:
            n = c_int.in_dll(runtime.library(), "ql_cpu_max_events").value
            raise LaunchError(f"creating an event failed: the CPU device holds at most {n} "
                              f"live events; destroy the events you no longer need (an "
                              f"Event is destroyed when it is garbage-collected)")
        self._check(status, "creating an event")
        return out.value

    def event_destroy(self, e: int) -> None:
        self._event_destroy(e)

    def event_record(self, e: int, s: int) -> None:
        self._check(self._event_record(e, s), "Event.record()")

    def event_synchronize(self, e: int) -> None:
        self._check(self._event_synchronize(e), "Event.synchronize()")

    def event_query(self, e: int) -> bool:
        status = self._event_query(e)
        if status == _NOT_READY:
            return False
        self._check(status, "Event.query()")
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        ms = c_double()
        status = self._event_elapsed(start, end, byref(ms))
        if status == _NOT_READY:
            raise LaunchError("elapsed_time: an event has not been reached yet; "
                              "synchronize the later event first")
        self._check(status, "Event.elapsed_time()")
        return ms.value

    # --------------------------------------------------------------- graphs
    def graph_create(self, n: int) -> int:
        out = c_uint64()
        self._check(self._graph_create(n, byref(out)), "building a graph")
        return out.value

    def graph_destroy(self, g: int) -> None:
        self._graph_destroy(g)

    def graph_set_launch(self, g: int, i: int, kernel, grid, block, shared: int,
                         block_bytes: bytes) -> None:
        dims = (c_uint * 6)(*grid, *block)
        status = self._graph_set_launch(g, i, kernel.handle, dims, shared, block_bytes,
                                        len(block_bytes))
        if status == _NOT_READY:
            raise LaunchError("a graph node cannot change while a replay of it is queued; "
                              "synchronize the stream first")
        self._check(status, f"graph node {i} ({kernel.name})")

    def graph_set_wait(self, g: int, i: int, e: int) -> None:
        self._check(self._graph_set_wait(g, i, e), f"graph node {i} (event wait)")

    def graph_launch(self, g: int, s: int) -> None:
        status = self._graph_launch(g, s)
        if status:
            self._failed_work(status, "Graph.replay()")

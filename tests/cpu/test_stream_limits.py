"""The CPU device's limits on live streams and events are reported as
limits, with their numbers, not as 'out of memory'."""
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import runtime


def _limit(name):
    import ctypes
    return ctypes.c_int.in_dll(runtime.library(), name).value


def test_too_many_events(cpu):
    n = _limit("ql_cpu_max_events")
    events = []
    try:
        with pytest.raises(ql.LaunchError, match=f"at most {n} live events") as info:
            for _ in range(n + 1):
                events.append(ql.Event(device=cpu))
        assert "out of memory" not in str(info.value)
    finally:
        del events
    ql.Event(device=cpu)  # room again


def test_too_many_streams(cpu):
    n = _limit("ql_cpu_max_streams")
    streams = []
    try:
        with pytest.raises(ql.LaunchError, match=f"at most {n} live streams"):
            for _ in range(n + 1):
                streams.append(ql.Stream(device=cpu))
    finally:
        for s in streams:
            s.close()
    ql.Stream(device=cpu).close()

"""Which graph the calling thread is recording (``with ql.graph()``), and
the check that refuses a synchronising call during a recording. Its own
module so that devices, streams and graphs all read it and none of them
imports another for it."""
from __future__ import annotations

import threading

from .errors import LaunchError

__all__ = ["active_capture", "set_active", "capture_check"]

class _Local(threading.local):
    graph = None       # a class default: reading it raises nothing (debug stubs read it per launch)


_local = _Local()


def active_capture():
    """The graph the calling thread is recording, if any."""
    return _local.graph


def set_active(graph) -> None:
    _local.graph = graph


def capture_check(what: str) -> None:
    """Raises when ``what`` (a synchronising call) runs during a recording."""
    g = active_capture()
    if g is not None:
        raise LaunchError(f"{what} while a graph is being recorded (ql.graph at "
                          f"{g.origin}): a recording only records; synchronise after the "
                          f"'with ql.graph()' block, or replay the graph first")

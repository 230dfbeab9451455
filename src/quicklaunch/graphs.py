"""Graphs: record a sequence of launches once, replay it with one call.

    with ql.graph() as g:          # or ql.graph(stream=s)
        for step in range(10):
            run(dt, u, v, n)       # recorded, not run
    g.replay()                     # the ten launches, without returning to Python
    g.nodes[3].update(dt2, u, v, n)  # new arguments for one launch, no re-recording

While the ``with`` block runs, launches on the graph's stream made by the
recording thread are handed to the recorder by the C launcher (the same
slow-path slot as tracing: the fast path tests one pointer). Each becomes a
node holding the kernel, its configuration, its parameter block and its
arguments (kept alive with the graph). At the end the device builds the
graph: on the CPU a list the runtime replays in C, on CUDA a CUDA graph
built node by node and instantiated.

Misuse raises: a launch on another device, or a synchronising call, inside
the block.
"""
from __future__ import annotations

import sys
import threading
import weakref

from . import _launch
from .capture import active_capture, set_active
from .devices import device as get_device
from .errors import LaunchError

__all__ = ["graph", "Graph", "GraphNode", "active_capture"]


class GraphNode:
    """One recorded launch (or event wait) of a graph."""

    def __init__(self, g, index, kernel, grid, block, shared, block_bytes, args, event=None):
        self._graph = weakref.ref(g)  # the graph owns its nodes, not the reverse
        self.index = index
        self.kernel = kernel
        self.grid, self.block, self.shared = grid, block, shared
        self._bytes = block_bytes
        self.args = args
        self.event = event

    def update(self, *args) -> None:
        """New arguments for this launch; the next replay uses them."""
        if self.kernel is None:
            raise LaunchError("an event-wait node has no arguments to update")
        g = self.graph
        block = self.kernel._pack(*args)  # the launcher's own checks and conversions
        if g.handle:  # built: the device's copy changes too
            g._ops.graph_set_launch(g.handle, self.index, self.kernel, self.grid, self.block,
                                    self.shared, block)
        self._bytes, self.args = block, args

    @property
    def graph(self) -> "Graph":
        g = self._graph()
        if g is None:
            raise LaunchError("the graph of this node no longer exists")
        return g

    def __repr__(self) -> str:
        if self.kernel is None:
            return f"<GraphNode {self.index}: wait for {self.event!r}>"
        return (f"<GraphNode {self.index}: {self.kernel.name} grid={self.grid} "
                f"block={self.block} shared={self.shared}>")


class Graph:
    """A recorded sequence of launches on one device and stream."""

    def __init__(self, device, stream, origin: str):
        self.device = device
        self.stream = stream
        self._stream_handle = stream.handle if stream is not None else 0
        self.nodes: list[GraphNode] = []
        self.origin = origin
        self.handle = 0
        self._ops = None
        self._error: LaunchError | None = None

    # ------------------------------------------------------------ recording
    def _record(self, kernel, grid, block, shared, stream, block_bytes, args):
        if threading.get_ident() != self._thread:
            return False  # another thread's launch: not part of this recording
        if kernel.device is not self.device:
            raise LaunchError(
                f"kernel '{kernel.name}' launches on {kernel.device.name} while a graph for "
                f"{self.device.name} is being recorded (ql.graph at {self.origin}); a graph "
                f"holds the launches of one device")
        if stream != self._stream_handle:
            return False  # another stream: runs as usual
        self.nodes.append(GraphNode(self, len(self.nodes), kernel, grid, block, shared,
                                    block_bytes, args))
        return True

    def _record_wait(self, stream, event) -> bool:
        """Stream.wait during this recording: a wait node, when on its stream."""
        if stream.handle != self._stream_handle:
            return False
        self.nodes.append(GraphNode(self, len(self.nodes), None, None, None, 0, None, (),
                                    event))
        return True

    def __enter__(self) -> "Graph":
        if active_capture() is not None:
            raise LaunchError("ql.graph blocks cannot nest")
        self._thread = threading.get_ident()
        set_active(self)
        self._previous = _launch._set_capture_hook(self._record)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        _launch._set_capture_hook(self._previous)
        self._previous = None
        set_active(None)
        if exc_type is None:
            self._build()

    def _build(self) -> None:
        self._ops = self.device.backend.stream_ops()
        self.handle = self._ops.graph_create(len(self.nodes))
        for node in self.nodes:
            if node.kernel is None:
                self._ops.graph_set_wait(self.handle, node.index, node.event.handle)
            else:
                self._ops.graph_set_launch(self.handle, node.index, node.kernel, node.grid,
                                           node.block, node.shared, node._bytes)

    # ------------------------------------------------------------- replay
    def replay(self, stream=None) -> None:
        """Runs every recorded launch in order: on the default stream now,
        or queued on ``stream`` as one piece of work."""
        if not self.handle:
            raise LaunchError("the graph has not been recorded yet (replay it after its "
                              "'with ql.graph()' block)")
        if stream is not None and stream.device is not self.device:
            raise LaunchError(f"a graph of {self.device.name} cannot replay on a stream of "
                              f"{stream.device.name}")
        self._ops.graph_launch(self.handle, stream.handle if stream is not None else 0)

    def __len__(self) -> int:
        return len(self.nodes)

    def close(self) -> None:
        """Frees the device's graph (queued replays finish first)."""
        if self.handle:
            handle, self.handle = self.handle, 0
            self._ops.graph_destroy(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self) -> str:
        return f"<quicklaunch.Graph of {len(self.nodes)} nodes on {self.device.name}>"


def graph(stream=None, device=None) -> Graph:
    """``with ql.graph() as g:`` records the launches on ``stream`` (None:
    the default stream) of the device of ``stream`` or ``device``."""
    dev = stream.device if stream is not None else get_device(device)
    frame = sys._getframe(1)
    return Graph(dev, stream, f"{frame.f_code.co_filename}:{frame.f_lineno}")

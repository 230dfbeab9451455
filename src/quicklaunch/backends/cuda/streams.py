"""The CUDA device's stream, event and graph operations (the interface is in
quicklaunch/streams.py), through the driver API.

Streams are made with flags 0 (CU_STREAM_DEFAULT): blocking streams, which
synchronise with the legacy default stream, as the CPU device's streams do
with its default stream. Handle 0 is that legacy default stream (driver.py
resolves entry points with flags 0, so none is a per-thread-stream variant).

Events are made with CU_EVENT_DEFAULT, or CU_EVENT_DISABLE_TIMING when they
need not time (cheaper to record and wait on).

Graphs are built explicitly, node by node: stream capture cannot record the
legacy default stream, which is where most launches go. ``graph_create``
makes the CUgraph; each recorded launch or event wait becomes a kernel node
or an event-wait node depending on the node before it (a chain: a replay
keeps the recorded order). The CUgraphExec is made lazily, by the first
``graph_launch`` after the graph's last change of shape; new arguments for a
node of an instantiated graph go straight to the executable graph with
cuGraphExecKernelNodeSetParams (no re-instantiation; launches already queued
keep the old ones, as the driver documents).

Kernel node parameters. driver.py resolves entry points at API version
12000, which gives the _v2 entries of cuGraphAddKernelNode,
cuGraphKernelNodeSetParams and cuGraphExecKernelNodeSetParams (CUDA 12's
headers map the plain names to them). Those take CUDA_KERNEL_NODE_PARAMS_v2
(``KernelNodeParams`` below): v1's fields (func, grid and block dimensions,
sharedMemBytes, kernelParams, extra; 56 bytes) followed by ``CUkernel kern``
and ``CUcontext ctx`` (72 bytes): handing them the v1 struct would have the
driver read 16 bytes past it. ``kern`` is NULL (``func`` is set) and ``ctx``
is the device's primary context (which the driver ignores when ``func`` is
set). ``kernelParams`` is a ``void *[]`` whose entries point into a copy of
the recorded parameter block at the kernel's ``_layout()`` offsets. The
driver copies the values when a node is added or set, but the arrays live as
long as the node all the same. cuGraphInstantiate, in CUDA 12, is
cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long):
resolved by that name, which means one signature at every version.

Errors. A failure of queued work, reported by a synchronising call (a kernel
that faulted: CUDA_ERROR_LAUNCH_FAILED, ILLEGAL_ADDRESS, ...), raises
LaunchError with the driver's status name; the driver does not say which
kernel failed. Any other driver failure raises ``ql.CudaError``.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import Structure, byref, c_float, c_uint, c_uint64, c_void_p

from ...errors import LaunchError

__all__ = ["CudaStreamOps", "KernelNodeParams"]

CUDA_ERROR_NOT_READY = 600
CU_STREAM_DEFAULT = 0
CU_EVENT_DEFAULT = 0
CU_EVENT_DISABLE_TIMING = 2

# Failures of launched work that the driver reports at a later call; the
# sticky ones leave the context unusable for the rest of the process.
_STICKY = frozenset({214, 700, 702, 710, 714, 715, 716, 717, 718, 719})
_WORK_FAILURES = _STICKY | {701, 720}  # + LAUNCH_OUT_OF_RESOURCES, COOPERATIVE_LAUNCH_TOO_LARGE


class KernelNodeParams(Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2, what the _v2 kernel-node entries take."""
    _fields_ = [("func", c_void_p),
                ("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint),
                ("blockDimX", c_uint), ("blockDimY", c_uint), ("blockDimZ", c_uint),
                ("sharedMemBytes", c_uint),
                ("kernelParams", c_void_p),  # void **
                ("extra", c_void_p),         # void **
                ("kern", c_void_p),          # CUkernel (v2)
                ("ctx", c_void_p)]           # CUcontext (v2)


assert ctypes.sizeof(KernelNodeParams) == 72 and KernelNodeParams.kern.offset == 56


class _KernelParams:
    """One kernel node's parameters struct and the arrays it points to."""
    __slots__ = ("struct", "block", "pointers")

    def __init__(self, kernel, grid, block, shared: int, block_bytes: bytes, context: int,
                 what: str):
        layout = kernel._layout()
        n = len(block_bytes)
        need = max((offset + size for _, size, offset in layout), default=0)
        if n < need:
            raise LaunchError(f"{what}: the parameter block has {n} bytes; the kernel's "
                              f"parameters need {need}")
        self.block = (c_uint64 * max(1, (n + 7) // 8))()  # 8-byte aligned
        ctypes.memmove(self.block, block_bytes, n)
        base = ctypes.addressof(self.block)
        self.pointers = (c_void_p * max(1, len(layout)))(*[base + off for _, _, off in layout])
        self.struct = KernelNodeParams(
            kernel.handle, *grid, *block, shared,
            ctypes.addressof(self.pointers) if layout else None, None, None, context)


class _Node:
    """A graph slot: a kernel launch or an event wait, and its CUgraphNode
    once added. ``stale``: the executable graph has newer parameters than
    the CUgraph (pushed to it before any re-instantiation)."""
    __slots__ = ("handle", "kernel", "params", "event", "stale")

    def __init__(self, kernel=None, params=None, event=None):
        self.handle = None
        self.kernel, self.params, self.event = kernel, params, event
        self.stale = False


class _Graph:
    __slots__ = ("handle", "nodes", "added", "exec")

    def __init__(self, handle: int, n: int):
        self.handle = handle
        self.nodes: list[_Node | None] = [None] * n
        self.added = 0     # nodes[:added] are in the CUgraph
        self.exec = None   # the CUgraphExec, made at the first launch after a change of shape


class CudaStreamOps:
    """Streams, events and graphs of one GPU (a CudaDevice)."""

    def __init__(self, backend):
        self._dev = backend
        self._drv = backend.driver
        self._name = f"cuda:{backend.ordinal}"
        self._untimed: set[int] = set()       # events made with timing=False
        self._graphs: dict[int, _Graph] = {}
        self._lock = threading.Lock()         # over the graphs' state

    # -------------------------------------------------------------- plumbing
    def _status(self, fn, *args) -> int:
        """Runs a driver call with the device's context current; its status."""
        if not self._dev.current():
            self._dev.make_current()
        return fn(*args)

    def _error(self, status: int, call: str, what: str, replay: bool = False) -> Exception:
        if status not in _WORK_FAILURES:
            return self._drv.error(status, f"{call} ({what})")
        name, text = self._drv.error_name(status)
        head = "a launch of the replay failed" if replay else "an earlier launch failed"
        note = ("the driver does not say which kernel; with CUDA_LAUNCH_BLOCKING=1 each "
                "launch reports its own failure")
        if status in _STICKY:
            note += "; the error is sticky: this process cannot use the GPU any more"
        return LaunchError(f"{what}: {head}: {name} ({status}): {text} ({note})")

    def _call(self, fn, call: str, what: str, *args) -> None:
        status = self._status(fn, *args)
        if status:
            raise self._error(status, call, what)

    # -------------------------------------------------------------- streams
    def stream_create(self) -> int:
        out = c_void_p()
        self._call(self._drv.cuStreamCreate, "cuStreamCreate", "creating a stream", byref(out),
                   CU_STREAM_DEFAULT)
        return out.value

    def stream_destroy(self, s: int) -> None:
        """Finishes the stream's work (reporting its failure), then destroys it."""
        synced = self._status(self._drv.cuStreamSynchronize, s)
        destroyed = self._drv.cuStreamDestroy(s)
        if synced:
            raise self._error(synced, "cuStreamSynchronize", "Stream.close()")
        if destroyed:
            raise self._error(destroyed, "cuStreamDestroy", "Stream.close()")

    def stream_synchronize(self, s: int) -> None:
        capturing = ctypes.c_int()
        if s and not self._status(self._drv.cuStreamIsCapturing, s, byref(capturing)) and \
                capturing.value:  # (a bad handle: the synchronisation below says so)
            raise LaunchError(
                "Stream.synchronize(): the stream is being captured into a CUDA graph, and a "
                "synchronisation cannot be recorded (a debug=True build synchronises after "
                "each launch: capture a build without debug=True)")
        self._call(self._drv.cuStreamSynchronize, "cuStreamSynchronize", "Stream.synchronize()",
                   s)

    # ------------------------------------------------------ stream capture
    # The driver records a launch on a capturing stream into the capture's
    # graph by itself: the fast path needs nothing. What cannot be recorded
    # (a synchronisation, an allocation, a module load, a launch on the
    # legacy stream next to a capturing blocking stream) fails in the
    # driver with a capture status, which CudaError explains (driver._HINTS).
    def stream_is_capturing(self, s: int) -> bool:
        """True while stream `s` is capturing (also when the capture was
        invalidated and awaits its end)."""
        status = ctypes.c_int()
        self._call(self._drv.cuStreamIsCapturing, "cuStreamIsCapturing",
                   "asking whether a stream is capturing", s, byref(status))
        return status.value != 0

    def stream_begin_capture(self, s: int, mode: int = 0) -> None:
        """cuStreamBeginCapture (mode 0 global, 1 thread-local, 2 relaxed)."""
        self._call(self._drv.cuStreamBeginCapture, "cuStreamBeginCapture",
                   "beginning a stream capture", s, mode)

    def stream_end_capture(self, s: int) -> int:
        """Ends the capture of `s`: the captured CUgraph's handle."""
        g = c_void_p()
        self._call(self._drv.cuStreamEndCapture, "cuStreamEndCapture", "ending a stream capture",
                   s, byref(g))
        return g.value

    def stream_query(self, s: int) -> bool:
        status = self._status(self._drv.cuStreamQuery, s)
        if status == CUDA_ERROR_NOT_READY:
            return False
        if status:
            raise self._error(status, "cuStreamQuery", "Stream.query()")
        return True

    def stream_wait_event(self, s: int, e: int) -> None:
        self._call(self._drv.cuStreamWaitEvent, "cuStreamWaitEvent", "Stream.wait()", s, e, 0)

    def device_synchronize(self) -> None:
        self._call(self._drv.cuCtxSynchronize, "cuCtxSynchronize",
                   f"{self._name}.synchronize()")

    # --------------------------------------------------------------- events
    def event_create(self, timing: bool = True) -> int:
        out = c_void_p()
        flags = CU_EVENT_DEFAULT if timing else CU_EVENT_DISABLE_TIMING
        self._call(self._drv.cuEventCreate, "cuEventCreate", "creating an event", byref(out),
                   flags)
        if not timing:
            self._untimed.add(out.value)
        return out.value

    def event_destroy(self, e: int) -> None:
        self._untimed.discard(e)
        self._call(self._drv.cuEventDestroy, "cuEventDestroy", "destroying an event", e)

    def event_record(self, e: int, s: int) -> None:
        self._call(self._drv.cuEventRecord, "cuEventRecord", "Event.record()", e, s)

    def event_synchronize(self, e: int) -> None:
        self._call(self._drv.cuEventSynchronize, "cuEventSynchronize", "Event.synchronize()", e)

    def event_query(self, e: int) -> bool:
        status = self._status(self._drv.cuEventQuery, e)
        if status == CUDA_ERROR_NOT_READY:
            return False
        if status:
            raise self._error(status, "cuEventQuery", "Event.query()")
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        if start in self._untimed or end in self._untimed:
            raise LaunchError("elapsed_time needs two events made with timing=True; "
                              "ql.Event(timing=False) does not keep time")
        ms = c_float()
        status = self._status(self._drv.cuEventElapsedTime, byref(ms), start, end)
        if status == CUDA_ERROR_NOT_READY:
            raise LaunchError("elapsed_time: an event has not been reached yet; "
                              "synchronize the later event first")
        if status:
            raise self._error(status, "cuEventElapsedTime", "Event.elapsed_time()")
        return float(ms.value)

    # --------------------------------------------------------------- graphs
    def _graph(self, g: int) -> _Graph:
        found = self._graphs.get(g)
        if found is None:
            raise LaunchError(f"graph {g:#x} is not a live graph of {self._name}")
        return found

    @staticmethod
    def _index(gr: _Graph, i: int) -> None:
        if not 0 <= i < len(gr.nodes):
            raise LaunchError(f"graph node {i}: the graph has {len(gr.nodes)} nodes")

    def graph_create(self, n: int) -> int:
        if n < 0:
            raise LaunchError(f"a graph of {n} nodes")
        out = c_void_p()
        self._call(self._drv.cuGraphCreate, "cuGraphCreate", "building a graph", byref(out), 0)
        with self._lock:
            self._graphs[out.value] = _Graph(out.value, n)
        return out.value

    def graph_destroy(self, g: int) -> None:
        with self._lock:
            gr = self._graphs.pop(g, None)
        if gr is None:
            return
        # an executable graph still running is freed by the driver when it ends
        status = self._status(self._drv.cuGraphExecDestroy, gr.exec) if gr.exec else 0
        destroyed = self._status(self._drv.cuGraphDestroy, gr.handle)
        if status:
            raise self._error(status, "cuGraphExecDestroy", "destroying a graph")
        if destroyed:
            raise self._error(destroyed, "cuGraphDestroy", "destroying a graph")

    def graph_set_launch(self, g: int, i: int, kernel, grid, block, shared: int,
                         block_bytes: bytes) -> None:
        what = f"graph node {i} ({kernel.name})"
        if getattr(kernel.device, "backend", None) is not self._dev:
            raise LaunchError(f"{what}: the kernel runs on {kernel.device.name}, the graph "
                              f"on {self._name}")
        params = _KernelParams(kernel, grid, block, shared, block_bytes, self._dev.context, what)
        with self._lock:
            gr = self._graph(g)
            self._index(gr, i)
            node = gr.nodes[i]
            if node is None:
                gr.nodes[i] = _Node(kernel=kernel, params=params)
                self._add_ready(gr)
                return
            if node.kernel is None:
                raise LaunchError(f"{what}: the node waits for an event; it cannot become "
                                  f"a launch")
            if node.handle is not None and gr.exec is not None:
                self._call(self._drv.cuGraphExecKernelNodeSetParams,
                           "cuGraphExecKernelNodeSetParams", what, gr.exec, node.handle,
                           byref(params.struct))
                node.stale = True
            elif node.handle is not None:
                self._call(self._drv.cuGraphKernelNodeSetParams, "cuGraphKernelNodeSetParams",
                           what, node.handle, byref(params.struct))
            node.kernel, node.params = kernel, params  # the old arrays go only now

    def graph_set_wait(self, g: int, i: int, e: int) -> None:
        with self._lock:
            gr = self._graph(g)
            self._index(gr, i)
            node = gr.nodes[i]
            if node is None:
                gr.nodes[i] = _Node(event=e)
                self._add_ready(gr)
            elif node.kernel is not None or node.event != e:
                raise LaunchError(f"graph node {i} (event wait): the node is already set; an "
                                  f"event-wait node cannot change")

    def _add_ready(self, gr: _Graph) -> None:
        """Adds the set nodes that follow the last added one to the CUgraph,
        in order, each depending on the one before."""
        while gr.added < len(gr.nodes) and gr.nodes[gr.added] is not None:
            i, node = gr.added, gr.nodes[gr.added]
            prev = c_void_p(gr.nodes[i - 1].handle if i else None)
            deps, ndeps = (byref(prev), 1) if i else (None, 0)
            out = c_void_p()
            if node.kernel is not None:
                call, what = "cuGraphAddKernelNode", f"graph node {i} ({node.kernel.name})"
                status = self._status(self._drv.cuGraphAddKernelNode, byref(out), gr.handle,
                                      deps, ndeps, byref(node.params.struct))
            else:
                call, what = "cuGraphAddEventWaitNode", f"graph node {i} (event wait)"
                status = self._status(self._drv.cuGraphAddEventWaitNode, byref(out), gr.handle,
                                      deps, ndeps, node.event)
            if status:
                gr.nodes[i] = None  # unset again: setting it anew retries
                raise self._error(status, call, what)
            node.handle = out.value
            gr.added += 1
            if gr.exec is not None:  # a new shape: instantiate again at the next launch
                exec_, gr.exec = gr.exec, None
                self._drv.cuGraphExecDestroy(exec_)

    def _instantiate(self, gr: _Graph) -> None:
        for i, node in enumerate(gr.nodes):
            if node.stale:  # the executable graph had them; the CUgraph gets them first
                self._call(self._drv.cuGraphKernelNodeSetParams, "cuGraphKernelNodeSetParams",
                           f"graph node {i} ({node.kernel.name})", node.handle,
                           byref(node.params.struct))
                node.stale = False
        out = c_void_p()
        self._call(self._drv.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",
                   "Graph.replay()", byref(out), gr.handle, 0)
        gr.exec = out.value

    def graph_launch(self, g: int, s: int) -> None:
        with self._lock:
            gr = self._graph(g)
            if gr.added < len(gr.nodes):
                raise LaunchError(f"Graph.replay(): graph node {gr.added} of "
                                  f"{len(gr.nodes)} was never set")
            if not gr.nodes:
                return  # nothing recorded, nothing to run
            if gr.exec is None:
                self._instantiate(gr)
            status = self._status(self._drv.cuGraphLaunch, gr.exec, s)
        if status:
            raise self._error(status, "cuGraphLaunch", "Graph.replay()", replay=True)

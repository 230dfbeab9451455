"""Tests of the fake CUDA driver's streams, events and graphs (fake_streams.c),
through ctypes: the versioned entry points, the checks on kernel node
parameters, executable graphs as snapshots, and the replay order."""
import ctypes
import struct
from ctypes import byref, c_float, c_int, c_ulonglong, c_void_p

import pytest

from .api import KernelNodeParamsV1, KernelNodeParamsV2, graph_deps, graph_nodes, last_launch, last_wait
from .test_fake_driver import PTX, function, init, load, make_current, mixed_args, ok

KERNEL, WAIT = 1, 2


@pytest.fixture
def cu(drv):
    init(drv)
    drv.ctx = make_current(drv)
    return drv


@pytest.fixture
def tmpl(cu):
    """The PTX module's `_Z4tmplIfEvPT_` (one u64 parameter)."""
    return function(cu, load(cu, PTX)[1], "_Z4tmplIfEvPT_")


def proc(drv, name, version):
    """(CUresult, the entry's address, symbolStatus) from cuGetProcAddress_v2."""
    pfn, status = c_void_p(), c_int(-1)
    rc = drv.cuGetProcAddress_v2(name.encode(), byref(pfn), version, 0, byref(status))
    return rc, pfn.value, status.value


def address(drv, export):
    return ctypes.cast(getattr(drv, export), c_void_p).value


class Kparams:
    """A kernel's parameter values, kept alive with the void*[] pointing at them."""

    def __init__(self, *values):
        self.values = values
        self.array = (c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])


def node_params(f, args, grid=(1, 1, 1), block=(1, 1, 1), shared=0, v2=True, **fields):
    cls = KernelNodeParamsV2 if v2 else KernelNodeParamsV1
    p = cls(f, *grid, *block, shared, ctypes.addressof(args.array), None)
    for name, value in fields.items():
        setattr(p, name, value)
    return p


def add_kernel(drv, graph, p, deps=(), v2=True):
    """(CUresult, node handle)."""
    node = c_void_p()
    arr = (c_void_p * max(1, len(deps)))(*deps)
    add = drv.cuGraphAddKernelNode_v2 if v2 else drv.cuGraphAddKernelNode
    rc = add(byref(node), graph, arr if deps else None, len(deps), byref(p))
    return rc, node.value


def new_graph(drv):
    g = c_void_p()
    ok(drv.cuGraphCreate(byref(g), 0))
    return g.value


def instantiate(drv, graph):
    x = c_void_p()
    ok(drv.cuGraphInstantiateWithFlags(byref(x), graph, 0))
    return x.value


def u64_node(cu, graph, f, value, deps=(), **kw):
    args = Kparams(c_ulonglong(value))
    rc, node = add_kernel(cu, graph, node_params(f, args, **kw), deps)
    ok(rc)
    return node


def replayed(cu, n):
    """The u64 parameters of the last n launches, oldest first."""
    return [struct.unpack("<Q", last_launch(cu, back)["params"])[0] for back in range(n - 1, -1, -1)]


# ---------------------------------------------------------------- entry points

@pytest.mark.parametrize("base, version, export", [
    ("cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2"),
    ("cuGraphAddKernelNode", 11080, "cuGraphAddKernelNode"),
    ("cuGraphKernelNodeSetParams", 12080, "cuGraphKernelNodeSetParams_v2"),
    ("cuGraphKernelNodeSetParams", 10000, "cuGraphKernelNodeSetParams"),
    ("cuGraphExecKernelNodeSetParams", 12000, "cuGraphExecKernelNodeSetParams_v2"),
    ("cuGraphExecKernelNodeSetParams", 11000, "cuGraphExecKernelNodeSetParams"),
    ("cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"),
    ("cuGraphInstantiate", 11000, "cuGraphInstantiate_v2"),
    ("cuGraphInstantiate", 10000, "cuGraphInstantiate"),
    ("cuGraphInstantiateWithFlags", 12000, "cuGraphInstantiateWithFlags"),
    ("cuEventDestroy", 12000, "cuEventDestroy_v2"),
    ("cuStreamWaitEvent", 12000, "cuStreamWaitEvent"),
    ("cuEventElapsedTime", 12000, "cuEventElapsedTime"),
])
def test_versioned_entry_points(drv, base, version, export):
    rc, fn, status = proc(drv, base, version)
    assert (rc, status) == (0, 0)
    assert fn == address(drv, export)


def test_entry_point_newer_than_the_version_asked(drv):
    assert proc(drv, "cuGraphAddEventWaitNode", 11000) == (500, None, 2)  # VERSION_NOT_SUFFICIENT
    assert proc(drv, "cuGraphAddKernelNode_v2", 12000) == (500, None, 1)   # not a base name


# ---------------------------------------------------------------- streams and events

def test_stream_query_wait_and_sync(cu, monkeypatch):
    s, e = c_void_p(), c_void_p()
    ok(cu.cuStreamCreate(byref(s), 0))
    ok(cu.cuEventCreate(byref(e), 0))
    ok(cu.cuStreamQuery(s))
    ok(cu.cuStreamWaitEvent(s, e, 0))
    ok(cu.cuStreamWaitEvent(None, e, 1))
    assert last_wait(cu) == (2, None, e.value)
    assert cu.cuStreamWaitEvent(s, e, 2) == 1
    assert cu.cuStreamWaitEvent(s, 0x1230, 0) == 400
    assert cu.cuStreamWaitEvent(0x1230, e, 0) == 400
    assert last_wait(cu)[0] == 2
    monkeypatch.setenv("FAKE_CUDA_NOT_READY", "1")
    assert cu.cuStreamQuery(s) == 600 and cu.cuEventQuery(e) == 600
    ok(cu.cuStreamSynchronize(s))
    monkeypatch.setenv("FAKE_CUDA_ASYNC_ERROR", "700")
    for rc in (cu.cuStreamSynchronize(s), cu.cuStreamQuery(s), cu.cuCtxSynchronize(),
               cu.cuEventSynchronize(e), cu.cuEventQuery(e)):
        assert rc == 700
    monkeypatch.delenv("FAKE_CUDA_ASYNC_ERROR")
    monkeypatch.delenv("FAKE_CUDA_NOT_READY")
    ok(cu.cuCtxSynchronize())
    assert cu.fake_cuda_stream_count() == 1 and cu.fake_cuda_event_count() == 1
    ok(cu.cuStreamDestroy_v2(s))
    ok(cu.cuEventDestroy_v2(e))
    assert cu.cuEventDestroy_v2(e) == 400 and cu.cuEventQuery(e) == 400
    assert cu.fake_cuda_stream_count() == 0 and cu.fake_cuda_event_count() == 0


def test_event_timing(cu, tmpl, monkeypatch):
    a, b, untimed, never = c_void_p(), c_void_p(), c_void_p(), c_void_p()
    ok(cu.cuEventCreate(byref(a), 0))
    ok(cu.cuEventCreate(byref(b), 1))  # BLOCKING_SYNC still times
    ok(cu.cuEventCreate(byref(untimed), 2))
    ok(cu.cuEventCreate(byref(never), 0))
    assert cu.cuEventCreate(byref(c_void_p()), 4) == 1  # INTERPROCESS needs DISABLE_TIMING
    ok(cu.cuEventCreate(byref(c_void_p()), 6))
    assert cu.cuEventCreate(byref(c_void_p()), 8) == 1
    ms = c_float()
    ok(cu.cuEventRecord(a, None))
    ok(cu.cuEventRecord(b, None))
    ok(cu.cuEventElapsedTime(byref(ms), a, b))
    assert ms.value == pytest.approx(0.001)  # one record later
    args = Kparams(c_ulonglong(1))
    ok(cu.cuLaunchKernel(tmpl, 1, 1, 1, 1, 1, 1, 0, None, args.array, None))
    ok(cu.cuEventRecord(b, None))
    ok(cu.cuEventElapsedTime(byref(ms), a, b))
    assert ms.value == pytest.approx(0.012)  # + a launch (10 us) and a record
    ok(cu.cuEventRecord(untimed, None))
    assert cu.cuEventElapsedTime(byref(ms), a, untimed) == 400
    assert cu.cuEventElapsedTime(byref(ms), never, b) == 400
    assert cu.cuEventElapsedTime(None, a, b) == 1
    assert cu.cuEventRecord(a, 0x1230) == 400
    monkeypatch.setenv("FAKE_CUDA_NOT_READY", "1")
    assert cu.cuEventElapsedTime(byref(ms), a, b) == 600


def test_events_and_streams_of_another_context(drv, monkeypatch):
    init(drv, 2, monkeypatch)
    make_current(drv, 0)
    e0, s0 = c_void_p(), c_void_p()
    ok(drv.cuEventCreate(byref(e0), 0))
    ok(drv.cuStreamCreate(byref(s0), 0))
    make_current(drv, 1)
    s1 = c_void_p()
    ok(drv.cuStreamCreate(byref(s1), 0))
    assert drv.cuEventRecord(e0, s1) == 400   # an event and a stream of two contexts
    assert drv.cuEventRecord(e0, None) == 400
    assert drv.cuEventRecord(e0, s0) == 201   # a stream of another context
    ok(drv.cuStreamWaitEvent(s1, e0, 0))      # waits cross devices


# ---------------------------------------------------------------- graphs

def test_kernel_nodes_v1_and_v2_record_the_same_launch(cu):
    f = function(cu, load(cu, PTX)[1], "mixed")
    args, want = mixed_args()
    kp = Kparams(*args)
    g = new_graph(cu)
    for v2 in (True, False):
        p = node_params(f, kp, grid=(3, 2, 1), block=(128, 2, 1), shared=1024, v2=v2)
        ok(add_kernel(cu, g, p, v2=v2)[0])
    assert ctypes.sizeof(KernelNodeParamsV1) == 56 and ctypes.sizeof(KernelNodeParamsV2) == 72
    x = instantiate(cu, g)
    s = c_void_p()
    ok(cu.cuStreamCreate(byref(s), 0))
    before = cu.fake_cuda_launch_count()
    ok(cu.cuGraphLaunch(x, s))
    assert cu.fake_cuda_launch_count() == before + 2
    for back in (0, 1):
        assert last_launch(cu, back) == {"name": "mixed", "grid": (3, 2, 1), "block": (128, 2, 1),
                                         "shared": 1024, "stream": s.value, "nparams": 7,
                                         "params": want, "nbytes": 88}


def test_kernel_node_checks(cu, tmpl):
    mod = load(cu, PTX)[1]
    mixed = function(cu, mod, "mixed")
    g, other = new_graph(cu), new_graph(cu)
    args = Kparams(c_ulonglong(5))
    first = u64_node(cu, g, tmpl, 1)
    foreign = u64_node(cu, other, tmpl, 2)
    bad = [({"func": None}, 1), ({"func": 0x1230}, 400), ({"grid": (0, 1, 1)}, 1),
           ({"grid": (1, 65536, 1)}, 1), ({"block": (1025, 1, 1)}, 1), ({"block": (32, 32, 2)}, 1),
           ({"shared": 49153}, 1), ({"extra": ctypes.addressof(args.array)}, 1),
           ({"kernelParams": None}, 1), ({"kern": 0x1230}, 1), ({"ctx": 0x1230}, 1)]
    for change, rc in bad:
        kw = {k: v for k, v in change.items() if k in ("grid", "block", "shared")}
        fields = {k: v for k, v in change.items() if k not in kw}
        assert add_kernel(cu, g, node_params(tmpl, args, **kw, **fields))[0] == rc, change
    ok(add_kernel(cu, g, node_params(tmpl, args, ctx=cu.ctx))[0])  # its own context is fine
    assert add_kernel(cu, g, node_params(mixed, Kparams()))[0] == 1  # a NULL parameter
    assert add_kernel(cu, g, node_params(tmpl, args), deps=[foreign])[0] == 1  # another graph's
    assert add_kernel(cu, g, node_params(tmpl, args), deps=[first, first])[0] == 1  # twice
    assert add_kernel(cu, 0x1230, node_params(tmpl, args))[0] == 400
    node = c_void_p()
    assert cu.cuGraphAddKernelNode_v2(byref(node), g, None, 1, byref(node_params(tmpl, args))) == 1
    assert cu.cuGraphAddKernelNode_v2(byref(node), g, None, 0, None) == 1
    assert graph_nodes(cu, g) == [KERNEL, KERNEL]
    assert graph_nodes(cu, 0x1230) is None and graph_deps(cu, g, 5) is None


def test_replay_follows_the_edges_and_nothing_else(cu, tmpl):
    """Nodes without edges run newest first; edges are respected."""
    g = new_graph(cu)
    for v in range(3):
        u64_node(cu, g, tmpl, v)
    ok(cu.cuGraphLaunch(instantiate(cu, g), None))
    assert replayed(cu, 3) == [2, 1, 0]
    chain = new_graph(cu)
    prev = ()
    for v in range(4):
        prev = (u64_node(cu, chain, tmpl, v, deps=prev),)
    ok(cu.cuGraphLaunch(instantiate(cu, chain), None))
    assert replayed(cu, 4) == [0, 1, 2, 3]
    assert [graph_deps(cu, chain, i) for i in range(4)] == [[], [0], [1], [2]]
    # a diamond: 0 -> (1, 2) -> 3
    d = new_graph(cu)
    top = u64_node(cu, d, tmpl, 0)
    left, right = u64_node(cu, d, tmpl, 1, deps=(top,)), u64_node(cu, d, tmpl, 2, deps=(top,))
    u64_node(cu, d, tmpl, 3, deps=(left, right))
    ok(cu.cuGraphLaunch(instantiate(cu, d), None))
    assert replayed(cu, 4) == [0, 2, 1, 3]
    assert graph_deps(cu, d, 3) == [1, 2]


def test_event_wait_nodes(cu, tmpl):
    g, e = new_graph(cu), c_void_p()
    ok(cu.cuEventCreate(byref(e), 0))
    wait = c_void_p()
    ok(cu.cuGraphAddEventWaitNode(byref(wait), g, None, 0, e))
    assert cu.cuGraphAddEventWaitNode(byref(c_void_p()), g, None, 0, 0x1230) == 400
    u64_node(cu, g, tmpl, 7, deps=(wait.value,))
    assert graph_nodes(cu, g) == [WAIT, KERNEL] and graph_deps(cu, g, 1) == [0]
    x = instantiate(cu, g)
    ok(cu.cuGraphLaunch(x, None))
    assert replayed(cu, 1) == [7]
    p = node_params(tmpl, Kparams(c_ulonglong(1)))
    assert cu.cuGraphExecKernelNodeSetParams_v2(x, wait, byref(p)) == 1  # not a kernel node
    assert cu.cuGraphKernelNodeSetParams_v2(wait, byref(p)) == 1
    ok(cu.cuEventDestroy_v2(e))
    assert cu.cuGraphLaunch(x, None) == 400  # its event is gone


def test_executable_graphs_are_snapshots(cu, tmpl):
    g = new_graph(cu)
    a = u64_node(cu, g, tmpl, 1)
    b = u64_node(cu, g, tmpl, 2, deps=(a,))
    x = instantiate(cu, g)
    assert cu.fake_cuda_instantiate_count() == 1
    # the graph changes: the executable graph does not
    ok(cu.cuGraphKernelNodeSetParams_v2(b, byref(node_params(tmpl, Kparams(c_ulonglong(20))))))
    u64_node(cu, g, tmpl, 3, deps=(b,))
    ok(cu.cuGraphLaunch(x, None))
    assert replayed(cu, 2) == [1, 2]
    # the executable graph's own update does
    p = node_params(tmpl, Kparams(c_ulonglong(10)), grid=(4, 1, 1))
    ok(cu.cuGraphExecKernelNodeSetParams_v2(x, a, byref(p)))
    v1 = node_params(tmpl, Kparams(c_ulonglong(30)), v2=False)
    ok(cu.cuGraphExecKernelNodeSetParams(x, b, byref(v1)))
    ok(cu.cuGraphLaunch(x, None))
    assert replayed(cu, 2) == [10, 30] and last_launch(cu, 1)["grid"] == (4, 1, 1)
    bad = node_params(tmpl, Kparams(c_ulonglong(0)), block=(2048, 1, 1))
    assert cu.cuGraphExecKernelNodeSetParams_v2(x, a, byref(bad)) == 1
    assert cu.cuGraphExecKernelNodeSetParams_v2(0x1230, a, byref(p)) == 400
    x2 = instantiate(cu, g)
    ok(cu.cuGraphLaunch(x2, None))
    assert replayed(cu, 3) == [1, 20, 3]
    # the graph goes; its executable graphs stay
    ok(cu.cuGraphDestroy(g))
    assert cu.cuGraphDestroy(g) == 400
    ok(cu.cuGraphLaunch(x, None))
    assert cu.fake_cuda_graph_count() == 0 and cu.fake_cuda_graph_exec_count() == 2
    ok(cu.cuGraphExecDestroy(x))
    ok(cu.cuGraphExecDestroy(x2))
    assert cu.cuGraphLaunch(x, None) == 400 and cu.cuGraphExecDestroy(x) == 400
    assert cu.fake_cuda_graph_exec_count() == 0


def test_instantiate_and_launch_checks(cu, tmpl, monkeypatch):
    g = new_graph(cu)
    u64_node(cu, g, tmpl, 1)
    x, log = c_void_p(), ctypes.create_string_buffer(b"junk", 16)
    err = c_void_p(0x99)
    assert cu.cuGraphInstantiateWithFlags(byref(x), g, 16) == 1
    assert cu.cuGraphInstantiateWithFlags(byref(x), 0x1230, 0) == 400
    ok(cu.cuGraphInstantiate_v2(byref(x), g, byref(err), log, 16))
    assert err.value is None and log.value == b""
    ok(cu.cuGraphInstantiate(byref(x), g, None, None, 0))
    assert cu.fake_cuda_instantiate_count() == 2
    assert cu.cuGraphCreate(byref(c_void_p()), 1) == 1
    assert cu.cuGraphLaunch(x, 0x1230) == 400
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "719")
    before = cu.fake_cuda_launch_count()
    assert cu.cuGraphLaunch(x, None) == 719
    assert cu.fake_cuda_launch_count() == before  # not recorded


def test_replay_of_an_unloaded_kernel_fails(cu):
    rc, mod = load(cu, PTX)
    f = function(cu, mod, "_Z4tmplIfEvPT_")
    g = new_graph(cu)
    u64_node(cu, g, f, 1)
    x = instantiate(cu, g)
    ok(cu.cuModuleUnload(mod))
    assert cu.cuGraphLaunch(x, None) == 400


def test_graphs_of_another_context(drv, monkeypatch):
    init(drv, 2, monkeypatch)
    make_current(drv, 0)
    f = function(drv, load(drv, PTX)[1], "_Z4tmplIfEvPT_")
    g = new_graph(drv)
    u64_node(drv, g, f, 1)
    x = instantiate(drv, g)
    s0 = c_void_p()
    ok(drv.cuStreamCreate(byref(s0), 0))
    make_current(drv, 1)
    assert add_kernel(drv, g, node_params(f, Kparams(c_ulonglong(1))))[0] == 400  # f is not ctx 1's
    s1 = c_void_p()
    ok(drv.cuStreamCreate(byref(s1), 0))
    assert drv.cuGraphLaunch(x, s1) == 201
    assert drv.cuGraphLaunch(x, s0) == 201
    make_current(drv, 0)
    ok(drv.cuGraphLaunch(x, s0))

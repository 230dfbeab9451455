"""quicklaunch's streams, events and graphs on the CUDA device, against the
fake driver: which stream each launch reaches, event timing and waits, graphs
recorded without launching and replayed with the exact parameter bytes,
node updates, misuse, and the errors of queued work."""
import ctypes
import gc
import os
import shutil
import struct
import threading
from ctypes import byref, c_float, c_void_p

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cuda import driver
from quicklaunch.backends.cuda.streams import KernelNodeParams
from quicklaunch.streams import ops

from .api import KernelNodeParamsV2, graph_deps, graph_nodes, last_launch, last_wait

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void fill(double v, char tag, float *y, long long n) {}
"""
CPU_SOURCE = r"""extern "C" __global__ void touch(float *y, int n) {}"""
HAVE_CXX = bool(os.environ.get("CXX")) or any(shutil.which(c) for c in ("g++", "clang++"))
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no host C++ compiler for the CPU device")

KERNEL, WAIT = 1, 2


@pytest.fixture
def gpu(ql_fake):
    return ql.device("cuda")


@pytest.fixture
def mod(gpu):
    return ql.compile(SOURCE, device=gpu)


@pytest.fixture
def bufs(gpu):
    return ql.zeros(64, np.float32, device=gpu), ql.zeros(64, np.float32, device=gpu)


def saxpy_bytes(a, x, y, n):
    """saxpy's parameter block: float at 0, pointers at 8 and 16, int at 24."""
    return struct.pack("<f4xQQi", a, x.ptr, y.ptr, n)


def recent(lib, n):
    """The last n recorded launches, oldest first."""
    return [last_launch(lib, back) for back in range(n - 1, -1, -1)]


# ---------------------------------------------------------------- streams

def test_launches_go_to_their_stream(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s = ql.Stream(device=gpu)
    assert s.device is gpu and s.handle and ql_fake.fake_cuda_stream_count() == 1
    assert s.__cuda_stream__() == (0, s.handle)
    assert s.__ql_stream__() == (gpu.id, s.handle)

    class Foreign:  # another library's stream object, by the CUDA stream protocol
        def __cuda_stream__(self):
            return 0, s.handle

    launches = [lambda: mod.saxpy[2, 32, 0, s](1.5, x, y, 64),
                lambda: mod.saxpy.configure(2, 32, stream=s)(1.5, x, y, 64),
                lambda: mod.saxpy.launch(2, 32, 1.5, x, y, 64, stream=s),
                lambda: mod.saxpy[2, 32, 0, Foreign()](1.5, x, y, 64),
                lambda: mod.saxpy[2, 32, 0, s.handle](1.5, x, y, 64)]
    for launch in launches:
        launch()
        rec = last_launch(ql_fake)
        assert rec["stream"] == s.handle
        assert rec["params"] == saxpy_bytes(1.5, x, y, 64)
    mod.saxpy[2, 32](1.5, x, y, 64)
    assert last_launch(ql_fake)["stream"] is None  # the legacy default stream
    s.synchronize()
    assert s.query() is True
    s.close()
    s.close()  # once is enough
    assert ql_fake.fake_cuda_stream_count() == 0 and s.handle == 0
    with pytest.raises(ql.LaunchError, match="this stream was closed"):
        mod.saxpy.launch(2, 32, 1.5, x, y, 64, stream=s)


def test_streams_are_blocking_streams(gpu, ql_fake, monkeypatch):
    """Flags 0 (CU_STREAM_DEFAULT): the fake refuses flags above 1, and the
    ops must not ask for CU_STREAM_NON_BLOCKING (1), which would not wait for
    the legacy default stream."""
    flags = []
    d = driver.driver()
    real = d.cuStreamCreate

    def spy(out, f):
        flags.append(f)
        return real(out, f)

    monkeypatch.setattr(d, "cuStreamCreate", spy)
    with ql.Stream(device=gpu) as s:
        assert s.handle
    assert flags == [0]


def test_stream_wait_event(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s1, s2 = ql.Stream(device=gpu), ql.Stream(device=gpu)
    mod.saxpy[2, 32, 0, s1](2.0, x, y, 64)
    e = s1.record()
    assert isinstance(e, ql.Event) and e.device is gpu
    s2.wait(e)
    assert last_wait(ql_fake) == (1, s2.handle, e.handle)
    mod.saxpy[2, 32, 0, s2](2.0, x, y, 64)
    assert last_launch(ql_fake)["stream"] == s2.handle
    s2.synchronize()
    gpu.synchronize()


# ---------------------------------------------------------------- events

def test_event_timing(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s = ql.Stream(device=gpu)
    start, end = ql.Event(gpu), ql.Event(gpu)
    start.record(s)
    for _ in range(3):
        mod.saxpy[2, 32, 0, s](1.0, x, y, 64)
    end.record(s)
    end.synchronize()
    assert start.query() and end.query()
    ms = start.elapsed_time(end)
    assert ms > 0 and isinstance(ms, float)
    # on the default stream too
    a, b = ql.Event(gpu).record(), ql.Event(gpu).record()
    b.synchronize()
    assert a.elapsed_time(b) > 0


def test_untimed_events(gpu, ql_fake):
    timed, untimed, other = ql.Event(gpu), ql.Event(gpu, timing=False), ql.Event(gpu)
    for e in (timed, untimed, other):
        e.record()
    other.synchronize()
    with pytest.raises(ql.LaunchError, match="timing=True"):
        timed.elapsed_time(untimed)
    # the driver saw CU_EVENT_DISABLE_TIMING: it refuses to time that event
    ms = c_float()
    assert ql_fake.cuEventElapsedTime(byref(ms), timed.handle, untimed.handle) == 400
    assert ql_fake.cuEventElapsedTime(byref(ms), timed.handle, other.handle) == 0
    with pytest.raises(ql.LaunchError, match="both events recorded"):
        ql.Event(gpu).elapsed_time(timed)


def test_events_are_released(gpu, ql_fake):
    events = [ql.Event(gpu) for _ in range(3)]
    assert ql_fake.fake_cuda_event_count() == 3
    del events
    gc.collect()
    assert ql_fake.fake_cuda_event_count() == 0


def test_not_ready(gpu, ql_fake, monkeypatch):
    s = ql.Stream(device=gpu)
    a, b = s.record(), s.record()
    monkeypatch.setenv("FAKE_CUDA_NOT_READY", "1")
    assert s.query() is False
    assert a.query() is False
    with pytest.raises(ql.LaunchError, match="has not been reached yet"):
        a.elapsed_time(b)
    monkeypatch.delenv("FAKE_CUDA_NOT_READY")
    assert s.query() is True and a.elapsed_time(b) > 0


# ---------------------------------------------------------------- errors

def test_failed_queued_work_is_a_launch_error(gpu, ql_fake, monkeypatch):
    s = ql.Stream(device=gpu)
    e = s.record()
    monkeypatch.setenv("FAKE_CUDA_ASYNC_ERROR", "719")
    calls = {"Stream.synchronize()": s.synchronize, "Stream.query()": s.query,
             "Event.synchronize()": e.synchronize, "Event.query()": e.query,
             "cuda:0.synchronize()": gpu.synchronize}
    for what, call in calls.items():
        with pytest.raises(ql.LaunchError) as info:
            call()
        assert not isinstance(info.value, ql.CudaError)
        assert str(info.value).startswith(
            f"{what}: an earlier launch failed: CUDA_ERROR_LAUNCH_FAILED (719): unspecified "
            f"launch failure (the driver does not say which kernel")
        assert "sticky" in str(info.value)
    monkeypatch.setenv("FAKE_CUDA_ASYNC_ERROR", "701")  # not sticky
    with pytest.raises(ql.LaunchError, match=r"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES \(701\)") as info:
        s.synchronize()
    assert "sticky" not in str(info.value)
    with pytest.raises(ql.LaunchError, match=r"Stream.close\(\): an earlier launch failed"):
        s.close()
    assert ql_fake.fake_cuda_stream_count() == 0  # destroyed all the same
    monkeypatch.delenv("FAKE_CUDA_ASYNC_ERROR")
    gpu.synchronize()


def test_other_driver_failures_are_cuda_errors(gpu, ql_fake):
    o = ops(gpu)
    with pytest.raises(ql.CudaError, match=r"cuStreamSynchronize \(Stream.synchronize\(\)\) "
                                           r"failed: CUDA_ERROR_INVALID_HANDLE \(400\)") as info:
        o.stream_synchronize(0x1230)
    assert info.value.name == "CUDA_ERROR_INVALID_HANDLE" and info.value.code == 400
    with pytest.raises(ql.CudaError, match="cuEventRecord"):
        o.event_record(0x1230, 0)
    with pytest.raises(ql.LaunchError, match="not a live graph"):
        o.graph_launch(0x1230, 0)


def test_ops_make_the_context_current(mod, gpu, bufs, ql_fake):
    """A thread without a current context: each op makes the device's current."""
    x, y = bufs
    with ql.graph(device=gpu) as g:
        mod.saxpy[2, 32](3.0, x, y, 64)
    s = ql.Stream(device=gpu)
    errors = []

    def work():
        try:
            t = ql.Stream(device=gpu)
            e = ql.Event(gpu)
            g.replay(s)
            e.record(s)
            t.wait(e)
            t.synchronize()
            t.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    th = threading.Thread(target=work)
    th.start()
    th.join(30)
    assert not errors
    assert last_launch(ql_fake)["stream"] == s.handle


# ---------------------------------------------------------------- graphs

def record(mod, x, y, gpu, n=5, stream=None):
    """A graph of n saxpy launches with distinct arguments and grids."""
    with ql.graph(device=gpu, stream=stream) as g:
        for i in range(n):
            mod.saxpy[i + 1, 32, 0, stream](float(i) + 0.5, x, y, 10 * i)
    return g


def test_graph_records_without_launching(mod, gpu, bufs, ql_fake):
    x, y = bufs
    before = ql_fake.fake_cuda_launch_count()
    g = record(mod, x, y, gpu)
    assert ql_fake.fake_cuda_launch_count() == before
    assert len(g) == 5 and ql_fake.fake_cuda_graph_count() == 1
    assert ql_fake.fake_cuda_instantiate_count() == 0  # at the first replay
    # one kernel node per launch, each depending on the one before
    assert graph_nodes(ql_fake, g.handle) == [KERNEL] * 5
    assert [graph_deps(ql_fake, g.handle, i) for i in range(5)] == [[], [0], [1], [2], [3]]


def test_graph_replay_passes_the_recorded_bytes(mod, gpu, bufs, ql_fake):
    x, y = bufs
    for i in range(5):  # eagerly first: what each launch hands the driver
        mod.saxpy[i + 1, 32](float(i) + 0.5, x, y, 10 * i)
    eager = recent(ql_fake, 5)
    g = record(mod, x, y, gpu)
    before = ql_fake.fake_cuda_launch_count()
    g.replay()
    assert ql_fake.fake_cuda_launch_count() == before + 5
    assert recent(ql_fake, 5) == eager
    assert [r["params"] for r in eager] == [saxpy_bytes(i + 0.5, x, y, 10 * i) for i in range(5)]
    g.replay()
    assert recent(ql_fake, 5) == eager and ql_fake.fake_cuda_instantiate_count() == 1


def test_graph_of_mixed_kernels(mod, gpu, bufs, ql_fake):
    x, y = bufs
    with ql.graph(device=gpu) as g:
        mod.fill[1, 1](2.5, 7, y, 2**40)
        mod.saxpy[1, 64, 128](1.0, x, y, 3)
        mod.fill[(2, 3), (4, 5, 6)](-1.0, -1, x, -5)
    g.replay()
    got = recent(ql_fake, 3)
    assert [r["name"] for r in got] == ["fill", "saxpy", "fill"]
    assert got[0]["params"] == struct.pack("<dbxxxxxxxQq", 2.5, 7, y.ptr, 2**40)
    assert got[1]["params"] == saxpy_bytes(1.0, x, y, 3) and got[1]["shared"] == 128
    assert got[2]["grid"] == (2, 3, 1) and got[2]["block"] == (4, 5, 6)
    assert got[2]["params"] == struct.pack("<dbxxxxxxxQq", -1.0, -1, x.ptr, -5)


def test_node_update_changes_that_node_only(mod, gpu, bufs, ql_fake):
    x, y = bufs
    g = record(mod, x, y, gpu)
    g.replay()
    first = recent(ql_fake, 5)
    g.nodes[2].update(9.0, y, x, 77)
    assert g.nodes[2].args == (9.0, y, x, 77)
    g.replay()
    second = recent(ql_fake, 5)
    assert second[2]["params"] == saxpy_bytes(9.0, y, x, 77)
    assert second[2]["grid"] == first[2]["grid"] == (3, 1, 1)
    assert second[:2] + second[3:] == first[:2] + first[3:]
    # the executable graph was updated in place, not instantiated again
    assert ql_fake.fake_cuda_instantiate_count() == 1
    assert ql_fake.fake_cuda_graph_exec_count() == 1
    with pytest.raises(ql.LaunchTypeError):
        g.nodes[2].update(1.0, x)
    g.replay()
    assert recent(ql_fake, 5) == second


def test_node_update_before_the_first_replay(mod, gpu, bufs, ql_fake):
    x, y = bufs
    g = record(mod, x, y, gpu, n=3)
    g.nodes[0].update(-2.0, x, x, 1)
    g.nodes[0].update(-3.0, y, y, 2)
    g.replay()
    got = recent(ql_fake, 3)
    assert got[0]["params"] == saxpy_bytes(-3.0, y, y, 2)
    assert got[1]["params"] == saxpy_bytes(1.5, x, y, 10)


def test_replay_on_a_stream(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s = ql.Stream(device=gpu)
    g = record(mod, x, y, gpu, n=4)
    g.replay(s)
    assert [r["stream"] for r in recent(ql_fake, 4)] == [s.handle] * 4
    s.synchronize()
    g.replay()
    assert [r["stream"] for r in recent(ql_fake, 4)] == [None] * 4


def test_graph_of_a_stream_with_an_event_wait(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s, other = ql.Stream(device=gpu), ql.Stream(device=gpu)
    e = other.record()
    waits, before = last_wait(ql_fake)[0], ql_fake.fake_cuda_launch_count()
    with ql.graph(stream=s) as g:
        s.wait(e)                          # a wait node
        mod.saxpy[1, 32, 0, s](1.0, x, y, 1)
        mod.saxpy[1, 32](2.0, x, y, 2)    # the default stream: not recorded, runs now
        mod.saxpy[1, 32, 0, s](3.0, x, y, 3)
    assert ql_fake.fake_cuda_launch_count() == before + 1
    assert last_launch(ql_fake)["params"] == saxpy_bytes(2.0, x, y, 2)
    assert last_wait(ql_fake)[0] == waits  # recorded, not issued
    assert graph_nodes(ql_fake, g.handle) == [WAIT, KERNEL, KERNEL]
    assert [graph_deps(ql_fake, g.handle, i) for i in range(3)] == [[], [0], [1]]
    with pytest.raises(ql.LaunchError, match="event-wait node has no arguments"):
        g.nodes[0].update()
    g.replay(s)
    assert [(r["params"], r["stream"]) for r in recent(ql_fake, 2)] == [
        (saxpy_bytes(1.0, x, y, 1), s.handle), (saxpy_bytes(3.0, x, y, 3), s.handle)]


def test_empty_graph(gpu, ql_fake):
    before = ql_fake.fake_cuda_launch_count()
    with ql.graph(device=gpu) as g:
        pass
    g.replay()
    g.replay(ql.Stream(device=gpu))
    assert ql_fake.fake_cuda_launch_count() == before and len(g) == 0


def test_graphs_are_released(mod, gpu, bufs, ql_fake):
    x, y = bufs
    g = record(mod, x, y, gpu)
    g.replay()
    assert ql_fake.fake_cuda_graph_count() == 1 and ql_fake.fake_cuda_graph_exec_count() == 1
    del g
    gc.collect()
    assert ql_fake.fake_cuda_graph_count() == 0 and ql_fake.fake_cuda_graph_exec_count() == 0


def test_failed_replay(mod, gpu, bufs, ql_fake, monkeypatch):
    x, y = bufs
    g = record(mod, x, y, gpu, n=2)
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "719")
    with pytest.raises(ql.LaunchError, match=r"Graph.replay\(\): a launch of the replay failed: "
                                             r"CUDA_ERROR_LAUNCH_FAILED \(719\)"):
        g.replay()
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "999")
    with pytest.raises(ql.CudaError, match=r"cuGraphLaunch \(Graph.replay\(\)\) failed: "
                                           r"CUDA_ERROR_UNKNOWN"):
        g.replay()


# ---------------------------------------------------------------- misuse

def test_synchronising_inside_a_recording_raises(mod, gpu, bufs, ql_fake):
    x, y = bufs
    s = ql.Stream(device=gpu)
    e = s.record()
    for call in (gpu.synchronize, s.synchronize, e.synchronize):
        with pytest.raises(ql.LaunchError, match="while a graph is being recorded"):
            with ql.graph(device=gpu) as g:
                mod.saxpy[1, 32](1.0, x, y, 1)
                call()
        with pytest.raises(ql.LaunchError, match="has not been recorded yet"):
            g.replay()
    assert ql_fake.fake_cuda_graph_count() == 0  # never built
    gpu.synchronize()  # fine again after the block


def test_node_index_and_kind_checks(mod, gpu, bufs, ql_fake):
    x, y = bufs
    o = ops(gpu)
    g = o.graph_create(2)
    block = mod.saxpy._pack(1.0, x, y, 1)
    o.graph_set_launch(g, 0, mod.saxpy, (1, 1, 1), (32, 1, 1), 0, block)
    with pytest.raises(ql.LaunchError, match="graph node 1 of 2 was never set"):
        o.graph_launch(g, 0)
    with pytest.raises(ql.LaunchError, match="graph node 2: the graph has 2 nodes"):
        o.graph_set_launch(g, 2, mod.saxpy, (1, 1, 1), (32, 1, 1), 0, block)
    with pytest.raises(ql.LaunchError, match="parameter block has 4 bytes"):
        o.graph_set_launch(g, 1, mod.saxpy, (1, 1, 1), (32, 1, 1), 0, block[:4])
    e = ql.Event(gpu)
    o.graph_set_wait(g, 1, e.handle)
    with pytest.raises(ql.LaunchError, match="waits for an event; it cannot become a launch"):
        o.graph_set_launch(g, 1, mod.saxpy, (1, 1, 1), (32, 1, 1), 0, block)
    with pytest.raises(ql.LaunchError, match="an event-wait node cannot change"):
        o.graph_set_wait(g, 0, e.handle)
    o.graph_launch(g, 0)
    # parameters the driver refuses: a CudaError naming the node
    with pytest.raises(ql.CudaError, match=r"cuGraphExecKernelNodeSetParams \(graph node 0 "
                                           r"\(saxpy\)\) failed: CUDA_ERROR_INVALID_VALUE"):
        o.graph_set_launch(g, 0, mod.saxpy, (1, 1, 1), (2048, 1, 1), 0, block)
    o.graph_destroy(g)
    o.graph_destroy(g)  # gone already: nothing to do
    assert ql_fake.fake_cuda_graph_count() == 0


@needs_cxx
def test_a_cpu_kernel_inside_a_cuda_graph_raises(mod, gpu, bufs, ql_fake):
    x, y = bufs
    cpu_mod = ql.compile(CPU_SOURCE, device="cpu")
    host = ql.zeros(8, np.float32, device="cpu")
    with pytest.raises(ql.LaunchError, match=r"kernel 'touch' launches on cpu while a graph for "
                                             r"cuda:0 is being recorded"):
        with ql.graph(device=gpu):
            mod.saxpy[1, 32](1.0, x, y, 1)
            cpu_mod.touch[1, 8](host, 8)


@needs_cxx
def test_streams_belong_to_their_device(mod, gpu, bufs, ql_fake):
    x, y = bufs
    cpu_mod = ql.compile(CPU_SOURCE, device="cpu")
    host = ql.zeros(8, np.float32, device="cpu")
    cuda_stream, cpu_stream = ql.Stream(device=gpu), ql.Stream(device="cpu")
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'touch' runs on cpu but the stream "
                                                  r"belongs to another device"):
        cpu_mod.touch[1, 8, 0, cuda_stream](host, 8)
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'saxpy' runs on cuda:0 but the "
                                                  r"stream belongs to another device"):
        mod.saxpy[1, 32, 0, cpu_stream](1.0, x, y, 1)
    with pytest.raises(AttributeError, match="not a CUDA stream"):
        cpu_stream.__cuda_stream__()
    with pytest.raises(ql.LaunchError, match="cannot replay on a stream of cpu"):
        record(mod, x, y, gpu, n=1).replay(cpu_stream)
    cpu_stream.close()


# ---------------------------------------------------------------- the driver contract

def test_kernel_node_params_is_the_v2_struct(gpu, ql_fake):
    """At API 12000 cuGraphAddKernelNode & co. are the _v2 entries, which take
    CUDA_KERNEL_NODE_PARAMS_v2: quicklaunch's struct must be that one."""
    d = driver.driver()
    for base in ("cuGraphAddKernelNode", "cuGraphKernelNodeSetParams",
                 "cuGraphExecKernelNodeSetParams"):
        assert (ctypes.cast(getattr(d, base), c_void_p).value ==
                ctypes.cast(getattr(ql_fake, base + "_v2"), c_void_p).value), base
    assert (ctypes.cast(d.cuGraphInstantiateWithFlags, c_void_p).value ==
            ctypes.cast(ql_fake.cuGraphInstantiateWithFlags, c_void_p).value)
    assert ctypes.sizeof(KernelNodeParams) == ctypes.sizeof(KernelNodeParamsV2) == 72
    for (name, _), (other, _) in zip(KernelNodeParams._fields_, KernelNodeParamsV2._fields_):
        assert name == other
        assert getattr(KernelNodeParams, name).offset == getattr(KernelNodeParamsV2, name).offset

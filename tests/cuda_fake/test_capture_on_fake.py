"""The CUDA capture rules (issue 21), on the fake driver's stream capture: a
launch on a capturing stream is recorded into that graph and runs only when
the graph does; whatever cannot be recorded (a first-call compile, an
allocation, a debug build's synchronous launch, a launch on the legacy
stream next to a capturing blocking stream) raises at that call."""
import ctypes
from ctypes import byref, c_void_p

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.streams import ops

from .api import graph_nodes, last_launch

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
OTHER = r"""extern "C" __global__ void other(float *y) {}"""


@pytest.fixture
def setup(ql_fake):
    gpu = ql.device("cuda")
    mod = ql.compile(SOURCE, device=gpu)
    x, y = ql.zeros(64, np.float32, device=gpu), ql.zeros(64, np.float32, device=gpu)
    s = ql.Stream(device=gpu)
    return gpu, mod, x, y, s, s.__ql_stream__()[1], ops(gpu)


def test_launch_on_capturing_stream_is_recorded(setup, ql_fake):
    gpu, mod, x, y, s, h, o = setup
    run = mod.saxpy.configure(1, 64, 0, s)
    run(1.0, x, y, 64)                      # warm-up, outside the capture: runs
    before = ql_fake.fake_cuda_launch_count()
    o.stream_begin_capture(h)
    assert o.stream_is_capturing(h)
    run(2.0, x, y, 64)
    mod.saxpy[1, 64, 0, s](3.0, x, y, 64)
    assert ql_fake.fake_cuda_launch_count() == before   # recorded, not run
    g = o.stream_end_capture(h)
    assert not o.stream_is_capturing(h)
    assert graph_nodes(ql_fake, g) == [1, 1]
    exe = c_void_p()
    assert ql_fake.cuGraphInstantiateWithFlags(byref(exe), g, 0) == 0
    assert ql_fake.cuGraphLaunch(exe, h) == 0
    assert ql_fake.fake_cuda_launch_count() == before + 2
    a = [np.frombuffer(last_launch(ql_fake, back)["params"][:4], np.float32)[0]
         for back in (1, 0)]
    assert a == [2.0, 3.0]                  # in the captured order, with their arguments


def test_legacy_stream_launch_during_capture_raises(setup, ql_fake):
    gpu, mod, x, y, s, h, o = setup
    mod.saxpy[1, 64](1.0, x, y, 64)
    o.stream_begin_capture(h)
    with pytest.raises(ql.LaunchError, match=r"saxpy.*CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.*legacy "
                       r"default "
                       r"stream.*launch on the capturing stream"):
        mod.saxpy[1, 64](1.0, x, y, 64)     # would run outside the graph: refused
    with pytest.raises(ql.CudaError, match="STREAM_CAPTURE_INVALIDATED"):
        o.stream_end_capture(h)


def test_first_call_compile_during_capture_raises(setup, ql_fake):
    gpu, mod, x, y, s, h, o = setup
    o.stream_begin_capture(h)
    with pytest.raises(ql.CudaError, match=r"STREAM_CAPTURE_UNSUPPORTED.*compile, load, "
                       r"allocate and launch once before the capture"):
        ql.compile(OTHER, device=gpu)
    with pytest.raises(ql.CudaError, match="STREAM_CAPTURE_UNSUPPORTED"):
        ql.zeros(16, np.float32, device=gpu)
    o.stream_end_capture(h)
    ql.compile(OTHER, device=gpu)           # fine again once the capture ended


def test_debug_synchronous_launch_during_capture_raises(setup, ql_fake):
    gpu, mod, x, y, s, h, o = setup
    dbg = ql.compile(SOURCE, device=gpu, debug=True)
    run = dbg.saxpy.configure(1, 64, 0, s)
    run(1.0, x, y, 64)
    o.stream_begin_capture(h)
    with pytest.raises(ql.LaunchError, match=r"being captured.*debug=True"):
        run(1.0, x, y, 64)
    o.stream_end_capture(h)


def test_relaxed_capture_allows_a_compile(setup, ql_fake):
    gpu, mod, x, y, s, h, o = setup
    o.stream_begin_capture(h, 2)            # cudaStreamCaptureModeRelaxed
    ql.compile(OTHER, device=gpu)
    mod.saxpy[1, 64, 0, s](1.0, x, y, 64)
    assert graph_nodes(ql_fake, o.stream_end_capture(h)) == [1]


def test_guard_refuses_legacy_launch_next_to_a_non_blocking_capture(setup, ql_fake):
    """torch captures on non-blocking side streams, where the driver lets a
    legacy-stream launch run at once, outside the graph; the guard (what
    ql.torch.capture_guard() installs) makes it an error."""
    from quicklaunch.frameworks._capture import CaptureGuard
    gpu, mod, x, y, s, h, o = setup
    nb = c_void_p()
    assert ql_fake.cuStreamCreate(byref(nb), 1) == 0          # CU_STREAM_NON_BLOCKING
    mod.saxpy[1, 64](1.0, x, y, 64)
    o.stream_begin_capture(nb.value)
    before = ql_fake.fake_cuda_launch_count()
    mod.saxpy[1, 64](1.0, x, y, 64)                           # unguarded: runs, not captured
    assert ql_fake.fake_cuda_launch_count() == before + 1
    with CaptureGuard(gpu, nb.value):
        with pytest.raises(ql.LaunchError, match=r"saxpy.*legacy default stream.*being "
                           r"captured.*outside the graph"):
            mod.saxpy[1, 64](1.0, x, y, 64)
        mod.saxpy[1, 64, 0, nb.value](2.0, x, y, 64)          # the capturing stream: recorded
    assert ql_fake.fake_cuda_launch_count() == before + 1
    assert graph_nodes(ql_fake, o.stream_end_capture(nb.value)) == [1]
    assert ql.graph is not None and ql._launch._set_capture_hook(None) is None  # removed

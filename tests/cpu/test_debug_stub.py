"""Debug mode's named stub: every launch of a debug build goes through a
Python function named after the kernel, with the kernel's parameter names,
whose code points at the kernel's line in the Python file."""
import cProfile
import inspect
import io
import pstats
import sys
import traceback

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *in, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * in[i] + y[i];
}
"""
with open(__file__) as _this:  # the line of the kernel's declaration in this file
    KERNEL_LINE = next(i for i, line in enumerate(_this, 1)
                       if line.startswith('extern "C" __global__ void saxpy'))


@pytest.fixture(scope="module")
def dbg(cpu):
    return ql.compile(SOURCE, device=cpu, debug=True)


def test_the_stub_is_named_after_the_kernel(dbg):
    run = dbg.saxpy[4, 32]
    assert run.__name__ == "saxpy"
    assert list(inspect.signature(run).parameters) == ["a", "in_", "y", "n"]  # `in` is a keyword
    assert run.__code__.co_filename == __file__
    assert run.__code__.co_firstlineno == KERNEL_LINE
    assert dbg.saxpy[4, 32] is run  # cached per configuration, as on the fast path


def test_every_launch_path_goes_through_it(dbg, rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = np.zeros(100, np.float32)
    dbg.saxpy[4, 32](2.0, x, y, 100)
    dbg.saxpy.configure(4, 32)(1.0, x, y, 100)
    dbg.saxpy.launch(4, 32, 1.0, x, y, 100)
    np.testing.assert_allclose(y, 4 * x, rtol=1e-6)


def test_a_failing_launch_shows_a_frame_with_the_arguments(dbg):
    x = np.ones(8, np.float32)
    with pytest.raises(ql.LaunchTypeError, match="parameter 3 'y'") as info:
        dbg.saxpy[1, 8](2.0, x, "not an array", 8)
    frames = [(f.f_code.co_name, f.f_locals) for f, _ in traceback.walk_tb(info.tb)]
    name, local = frames[-1]
    assert name == "saxpy" and local["y"] == "not an array" and local["n"] == 8


def test_profilers_and_trace_hooks_see_the_kernel(dbg):
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    seen = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "saxpy":
            seen.append(dict(frame.f_locals))

    sys.setprofile(hook)
    try:
        dbg.saxpy[1, 8](3.0, x, y, 8)
    finally:
        sys.setprofile(None)
    assert seen and seen[0]["a"] == 3.0 and seen[0]["n"] == 8
    prof = cProfile.Profile()
    prof.runcall(dbg.saxpy[1, 8], 3.0, x, y, 8)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).print_stats()
    assert "(saxpy)" in out.getvalue()


def test_the_fast_path_has_no_stub(cpu):
    fast = ql.compile(SOURCE, device=cpu)
    assert type(fast.saxpy[1, 8]).__name__ == "builtin_function_or_method"

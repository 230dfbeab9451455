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


CHECKS = r"""
extern "C" __global__ void copy(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
extern "C" __global__ void unbounded(float *y) { y[blockIdx.x * blockDim.x + threadIdx.x] = 1; }
"""


@pytest.fixture(scope="module")
def checks(cpu):
    return ql.compile(CHECKS, device=cpu, debug=True)


def test_misaligned_pointer_is_refused(checks):
    raw = np.zeros(80, np.uint8)
    misaligned = raw[1:65].view(np.float32)  # data one byte past an aligned start
    y = np.full(16, -1.0, np.float32)
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'copy', parameter 1 'x': address "
                                                  r"0x[0-9a-f]+ is not aligned to 4 bytes"):
        checks.copy[1, 16](misaligned, y, 16)
    assert (y == -1).all()  # nothing ran
    checks.copy[1, 16](raw[4:68].view(np.float32), y, 16)  # aligned: fine
    assert (y == 0).all()


def test_array_smaller_than_the_launch_warns_before_launching(checks):
    # raised as an error here, so the out-of-bounds launch never runs
    with pytest.raises(ql.LaunchWarning, match=r"parameter 1 'y': the array has 64 elements "
                                               r"but the launch runs 128 threads"):
        with warnings_as_errors():
            checks.unbounded[2, 64](np.zeros(64, np.float32))
    # a bound among the arguments (n <= size) is the kernel's own guard: no warning
    with warnings_as_errors():
        checks.copy[2, 64](np.zeros(10, np.float32), np.zeros(10, np.float32), 10)


class warnings_as_errors:
    """Turns LaunchWarning into an exception, so a warned launch never runs."""

    def __enter__(self):
        import warnings
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", ql.LaunchWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

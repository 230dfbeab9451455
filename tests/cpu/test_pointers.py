"""Every pointer source reaches the kernel as the right address: NumPy
arrays, ql buffers, buffer-protocol objects, __array_interface__ objects,
int addresses and None (a null pointer)."""
import array
import ctypes

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
extern "C" __global__ void scale(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void is_null(const int *p, int *out) { *out = p == nullptr; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


class ArrayInterface:
    def __init__(self, arr):
        self.arr = arr
        self.__array_interface__ = arr.__array_interface__


def sources(x: np.ndarray):
    """(label, object) pairs that all expose x's memory."""
    return [
        ("ndarray", x),
        ("memoryview", memoryview(x)),
        ("array_interface", ArrayInterface(x)),
        ("int address", x.ctypes.data),
        ("ql.asarray", ql.asarray(x, device="cpu")),
    ]


@pytest.mark.parametrize("n", [1, 31, 33, 1000])
def test_every_input_source(mod, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    for label, src in sources(x):
        y = poisoned(n, np.float32)
        mod.scale[(n + 31) // 32, 32](src, y, 1.5, n)
        np.testing.assert_array_equal(y, np.float32(1.5) * x, err_msg=label)


def test_every_output_source(mod, rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(n, np.float32)
    buf = ql.empty(n, np.float32, device="cpu")
    for label, out, view in [
        ("ndarray", y, y),
        ("bytearray", bytearray(4 * n), None),
        ("array.array", array.array("f", [0.0] * n), None),
        ("ctypes array", (ctypes.c_float * n)(), None),
        ("ql.empty", buf, buf.numpy()),
        ("int address", y.ctypes.data, y),
    ]:
        mod.scale[4, 32](x, out, -2.0, n)
        got = view if view is not None else np.frombuffer(out, np.float32)
        np.testing.assert_array_equal(got, np.float32(-2.0) * x, err_msg=label)


def test_buffer_numpy_is_a_view(mod, rng):
    x = ql.asarray(rng.standard_normal(64).astype(np.float32), device="cpu")
    y = ql.zeros(64, np.float32, device="cpu")
    mod.scale[2, 32](x, y, 3.0, 64)
    np.testing.assert_array_equal(y.numpy(), np.float32(3.0) * x.numpy())
    np.testing.assert_array_equal(np.asarray(y), y.numpy())
    assert y.ptr % 64 == 0 and y.nbytes == 256 and y.shape == (64,)


def test_none_is_null(mod):
    out = poisoned(1, np.int32)
    mod.is_null[1, 1](None, out)
    assert out[0] == 1
    mod.is_null[1, 1](np.zeros(1, np.int32), out)
    assert out[0] == 0


def test_readonly_input_to_const_pointer(mod, rng):
    x = rng.standard_normal(8).astype(np.float32)
    x.flags.writeable = False
    y = poisoned(8, np.float32)
    mod.scale[1, 8](x, y, 1.0, 8)
    mod.scale[1, 8](bytes(x.tobytes()), y, 1.0, 8)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("bad, exc, pattern", [
    ("y", ql.LaunchTypeError, r"parameter 2 'y': expects an array.*got str"),
    (1.5, ql.LaunchTypeError, r"parameter 2 'y'.*got float"),
    (True, ql.LaunchTypeError, r"parameter 2 'y'.*got bool"),
    (-8, ql.LaunchOverflowError, r"parameter 2 'y': the int is not a valid address"),
    (b"\0" * 32, ql.LaunchValueError, r"parameter 2 'y': the bytes is read-only"),
])
def test_bad_pointers(mod, bad, exc, pattern):
    with pytest.raises(exc, match=pattern):
        mod.scale[1, 8](np.zeros(8, np.float32), bad, 1.0, 8)


def test_non_contiguous_and_readonly_arrays(mod):
    x = np.zeros(16, np.float32)
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'scale', parameter 1 'x'.*"
                                                  r"not C-contiguous.*np.ascontiguousarray"):
        mod.scale[1, 8](x[::2], np.zeros(8, np.float32), 1.0, 8)
    y = np.zeros(8, np.float32)
    y.flags.writeable = False
    with pytest.raises(ql.LaunchValueError, match=r"parameter 2 'y'.*read-only.*non-const"):
        mod.scale[1, 8](x, y, 1.0, 8)
    ro = ql.asarray(y, device="cpu")
    with pytest.raises(ql.LaunchValueError, match=r"parameter 2 'y'.*read-only"):
        mod.scale[1, 8](x, ro, 1.0, 8)

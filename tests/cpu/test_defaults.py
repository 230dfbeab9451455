"""Kernel default arguments on the CPU device: a launch that leaves out
trailing arguments gets their defaults, as CUDA's <<<>>> does; too few
arguments without defaults fail with the same message as before."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
__device__ constexpr int twice(int x) { return 2 * x; }

__global__ void fill(int *d, const int *p = NULL, int n = 32, float s = 0.5f,
                     bool neg = false) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = (p ? p[i] : -1) + (int)(s * 4);
    d[i] = neg ? -v : v;
}

// The defaults on the declaration, the definition after it (as headers do).
template <typename T> __global__ void axpy(T *y, const T *x, T a = 2, int n = 64);
template <typename T> __global__ void axpy(T *y, const T *x, T a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

__global__ void opaque(int *d, int n = twice(3)) { d[threadIdx.x] = n; }
__global__ void plain(int *d, int n) { d[threadIdx.x] = n; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu, name_expressions=["axpy<float>", "axpy<double>"])


def test_omitted_pointer_is_null_and_ints_use_defaults(mod):
    d = poisoned(64, np.int32)
    mod.fill[2, 32](d)                         # p = NULL, n = 32, s = 0.5f, neg = false
    np.testing.assert_array_equal(d[:32], np.full(32, 1))
    assert np.all(d[32:] == np.iinfo(np.int32).max)


def test_some_defaults_given(mod, rng):
    p = rng.integers(-100, 100, 64).astype(np.int32)
    d = poisoned(64, np.int32)
    mod.fill[2, 32](d, p, 48)
    np.testing.assert_array_equal(d[:48], p[:48] + 2)
    d = poisoned(64, np.int32)
    mod.fill.launch(2, 32, d, p, 64, 1.0)
    np.testing.assert_array_equal(d, p + 4)
    d = poisoned(64, np.int32)
    mod.fill.configure(2, 32)(d, p, 64, 1.0, True)
    np.testing.assert_array_equal(d, -(p + 4))
    d = poisoned(64, np.int32)
    mod.fill[2, 32](d, None, 64)
    np.testing.assert_array_equal(d, np.full(64, 1))


@pytest.mark.parametrize("expr, dtype", [("axpy<float>", np.float32), ("axpy<double>", np.float64)])
def test_defaults_from_the_declaration(mod, rng, expr, dtype):
    x = rng.standard_normal(64).astype(dtype)
    y = rng.standard_normal(64).astype(dtype)
    want = y + 2 * x
    mod[expr][2, 32](y, x)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    want = y + 3 * x
    mod[expr][2, 32](y, x, 3.0)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_unevaluable_default(mod):
    d = poisoned(32, np.int32)
    with pytest.raises(ql.LaunchError, match=r"kernel 'opaque': the default of parameter 'n' "
                       r"\(twice \(3\)\) cannot be evaluated.*pass that argument explicitly"):
        mod.opaque[1, 32](d)
    mod.opaque[1, 32](d, 6)
    assert np.all(d == 6)


def test_too_few_without_defaults(mod):
    d = poisoned(32, np.int32)
    with pytest.raises(ql.LaunchTypeError) as info:
        mod.plain[1, 32](d)
    assert str(info.value) == "kernel 'plain' takes 2 arguments ('d', 'n'), got 1"
    with pytest.raises(ql.LaunchTypeError, match=r"takes 5 arguments .*got 0 \(the last 4 "
                       r"have defaults"):
        mod.fill[1, 32]()
    with pytest.raises(ql.LaunchTypeError, match=r"got 6"):
        mod.fill[1, 32](d, None, 1, 1.0, True, 7)


def test_pack_and_graph_take_defaults(mod):
    full = mod.fill._pack(np.zeros(1, np.int32), None, 32, 0.5, False)
    assert mod.fill._pack(np.zeros(1, np.int32)) [8:] == full[8:]
    assert mod.fill.defaults == (None, 32, 0.5, False)

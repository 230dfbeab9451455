"""`template __global__ void k<...>(...);` (explicit instantiation, as .cu
files that launch templates from another file do) compiles on the CPU device
and the instantiation is one of the module's kernels, with or without a name
expression."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
template <typename T, int SCALE>
__global__ void scaled(const T *x, T *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * T(SCALE);
}
// instantiated for the launches elsewhere
template __global__ void scaled<float, 3>(const float *, float *, int);
template __global__ void /* spelled apart */ scaled<double, -2>(const double *, double *, int);
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


@pytest.mark.parametrize("expr, dtype, factor", [("scaled<float, 3>", np.float32, 3),
                                                 ("scaled<double, -2>", np.float64, -2)])
@pytest.mark.parametrize("n", [1, 31, 257])
def test_explicit_instantiations_are_kernels(mod, expr, dtype, factor, n):
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    y = poisoned(n, dtype)
    mod[expr][(n + 63) // 64, 64](x, y, n)
    np.testing.assert_allclose(y, x * factor, rtol=1e-6)


def test_a_name_expression_for_the_same_instantiation_is_one_kernel(cpu):
    mod = ql.compile(SOURCE, device=cpu, name_expressions=["scaled<float,3>"])
    x = np.arange(5, dtype=np.float32)
    y = poisoned(5, np.float32)
    mod["scaled<float, 3>"][1, 32](x, y, 5)
    np.testing.assert_array_equal(y, 3 * x)

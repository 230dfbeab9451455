"""mod.get_global: __device__ and __constant__ variables as zero-copy views,
read and written from Python, seen by the module's kernels."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
__constant__ float coef[5] = {1, 2, 3, 4, 5};
__device__ int counter;
namespace ns { __device__ double table[2][3]; }
struct Pair { int a; float b; };
__device__ Pair pair;
extern "C" __global__ void read_all(float *out) {
    int i = threadIdx.x;
    out[i] = coef[i] + counter + (float)ns::table[1][2] + pair.b;
}
extern "C" __global__ void bump(int n) { atomicAdd(&counter, n); }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_initial_values_and_types(mod):
    coef = mod.get_global("coef")
    assert coef.dtype == np.float32 and coef.shape == (5,)
    np.testing.assert_array_equal(coef.numpy(), [1, 2, 3, 4, 5])
    table = mod.get_global("ns::table")
    assert table.dtype == np.float64 and table.shape == (2, 3)
    assert mod.get_global("counter").shape == ()


def test_writes_reach_kernels_and_back(mod, rng):
    coef = rng.standard_normal(5).astype(np.float32)
    mod.get_global("coef").numpy()[:] = coef
    mod.get_global("counter").numpy()[...] = 7
    mod.get_global("ns::table").numpy()[1, 2] = 0.5
    pair = mod.get_global("pair", dtype=np.dtype([("a", "<i4"), ("b", "<f4")]), shape=())
    pair.numpy()["b"] = 0.25
    out = poisoned(5, np.float32)
    mod.read_all[1, 5](out)
    np.testing.assert_allclose(out, coef + 7 + 0.5 + 0.25, rtol=1e-6)
    mod.bump[4, 32](3)
    assert mod.get_global("counter").numpy() == 7 + 4 * 32 * 3


def test_raw_bytes_for_other_types(mod):
    raw = mod.get_global("pair")
    assert raw.dtype == np.uint8 and raw.shape == (8,)


def test_unknown_variable(mod):
    with pytest.raises(KeyError, match="no __device__ or __constant__ variable 'missing'"):
        mod.get_global("missing")
    with pytest.raises(ValueError, match="is 20 bytes"):
        mod.get_global("coef", dtype=np.float64, shape=(5,))

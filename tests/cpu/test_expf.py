"""The CPU device's expf (the shim's ql_exp.h, inline so thread loops
vectorise): within 1 ulp of the correctly rounded value, CUDA's special
cases (+inf, 0, subnormals, NaN), the same results from __expf, std::expf
and a vectorised row as from a scalar call, and the same bits in both tiers
of a barrier kernel."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, compile_tier_ahead, tier_prefetch

SOURCE = r"""
#include <cmath>
// The row loop of a tier-1 kernel: vectorised with the inline expf.
__global__ void exp_rows(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = expf(x[i]);
}
// The other spelling: CUDA's fast intrinsic.
__global__ void exp_fast(const float *x, float *fast, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) fast[i] = __expf(x[i]);
}
// One thread, one call at a time: what the vectorised row must equal.
__global__ void exp_serial(const float *x, float *y, int n) {
    for (int i = 0; i < n; ++i) {
        volatile float v = x[i];
        y[i] = expf(v);
    }
}
// A barrier kernel (fission where the pass accepts it): block softmax
// numerators, the block's max through shared memory.
__global__ void exp_block(const float *x, float *y, int n) {
    __shared__ float top;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        float m = -3.402823466e+38f;
        for (int j = blockIdx.x * blockDim.x; j < n && j < (int)((blockIdx.x + 1) * blockDim.x); ++j)
            m = fmaxf(m, x[j]);
        top = m;
    }
    __syncthreads();
    if (i < n) y[i] = expf(x[i] - top);
}
"""

# std::expf is C++11's name, which libc++ declares and the shim maps; NVRTC's
# and hiprtc's <cmath> (and libstdc++ before GCC 14) have no such member, so
# this kernel is CPU-only and the GPU corpora list it as excluded.
STD_SOURCE = r"""
#include <cmath>
__global__ void exp_std(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = std::expf(x[i]);
}
"""

EDGES = np.array([0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, 88.72283, 88.72284, 88.7229, 89.0, 100.0,
                  -87.33654, -87.34, -100.0, -103.97, -103.98, -104.0, -150.0, -1e6, 1e6,
                  np.inf, -np.inf, np.nan, 0.5, 2.0 ** -8, np.log(2.0), 10.0, -10.0],
                 np.float32)


prefetch_job = tier_prefetch(SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def tiers():
    return both_tiers("cpu", SOURCE)


@pytest.fixture(scope="module")
def mod(tiers):
    return tiers[0]


def inputs(rng, n):
    wide = rng.uniform(-110.0, 95.0, n).astype(np.float32)
    small = rng.standard_normal(n).astype(np.float32)
    return np.concatenate([EDGES, wide, small])


def ulps(a, b):
    """Distance in representable floats between float32 arrays (finite or inf)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7fffffff), ia)
    ib = np.where(ib < 0, -(ib & 0x7fffffff), ib)
    return np.abs(ia - ib)


def launch_rows(k, x):
    y = np.full_like(x, 12345.0)
    k[(x.size + 127) // 128, 128](x, y, x.size)
    return y


@pytest.mark.parametrize("n", [1, 31, 1000])
def test_within_one_ulp_of_the_rounded_value(mod, n):
    x = inputs(np.random.default_rng(n), n)
    y = launch_rows(mod.exp_rows, x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(x)
    assert np.isnan(y[nan]).all()
    assert ulps(y[~nan], want[~nan]).max() <= 1


def test_cuda_special_cases(mod):
    x = np.array([np.inf, 89.0, 1e6, -np.inf, -104.0, -1e6, -100.0, np.nan, 0.0], np.float32)
    y = launch_rows(mod.exp_rows, x)
    assert y[0] == np.inf and y[1] == np.inf and y[2] == np.inf
    assert y[3] == 0.0 and y[4] == 0.0 and y[5] == 0.0
    assert 0.0 < y[6] < np.finfo(np.float32).tiny       # a subnormal, not flushed
    assert np.isnan(y[7]) and y[8] == 1.0


def test_every_spelling_and_the_vectorised_row_agree(mod):
    x = inputs(np.random.default_rng(7), 777)
    rows = launch_rows(mod.exp_rows, x)
    serial = np.full_like(x, -1.0)
    mod.exp_serial[1, 1](x, serial, x.size)
    fast, stdname = np.full_like(x, -2.0), np.full_like(x, -3.0)
    mod.exp_fast[(x.size + 63) // 64, 64](x, fast, x.size)
    ql.compile(STD_SOURCE, device="cpu").exp_std[(x.size + 63) // 64, 64](x, stdname, x.size)
    for got in (serial, fast, stdname):
        np.testing.assert_array_equal(got.view(np.int32), rows.view(np.int32))


def test_both_tiers_give_the_same_bits(tiers):
    fis, fib = tiers
    assert fis.exp_block.tier == "fission" and fib.exp_block.tier == "fibers"
    x = (np.random.default_rng(3).standard_normal(1000) * 20).astype(np.float32)
    a, b = launch_rows(fis.exp_block, x), launch_rows(fib.exp_block, x)
    np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))
    tops = np.maximum.reduceat(x, np.arange(0, x.size, 128))
    d = x - np.repeat(tops, 128)[:x.size]   # in float32, as the kernel subtracts
    want = np.exp(d.astype(np.float64)).astype(np.float32)
    assert ulps(a, want).max() <= 1

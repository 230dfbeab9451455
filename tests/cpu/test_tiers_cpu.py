"""A module mixing loop kernels and fiber kernels on the CPU device: each
kernel runs in its own tier, with the right answers, and a failure in a
loop kernel after a fiber kernel ran on the same worker still raises."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import compiler

from .conftest import poisoned

SOURCE = r"""
#include <cassert>
// A helper nobody calls from `scale`: it must not make `scale` fibers.
__device__ float block_sum(float v, float *s) {
    s[threadIdx.x] = v;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    return s[0];
}

__global__ void scale(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

__global__ void sums(const float *x, float *out) {
    __shared__ float s[128];
    float t = block_sum(x[blockIdx.x * blockDim.x + threadIdx.x], s);
    if (threadIdx.x == 0) out[blockIdx.x] = t;
}

__global__ void checked(const int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(v[i] >= 0);
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    # `sums` on fibers (its helper would be inlined into fission otherwise):
    # these tests are about a fiber kernel beside loop kernels
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "0")
        return ql.compile(SOURCE, device=cpu)
    finally:
        mp.undo()


@pytest.mark.parametrize("fission,tier", [("0", 2), ("1", 3)])
def test_each_kernel_gets_its_own_tier(mod, monkeypatch, fission, tier):
    monkeypatch.setenv("QUICKLAUNCH_CPU_FISSION", fission)
    built = compiler.build(SOURCE, (), (), False)
    assert {k.expr: k.tier for k in built.kernels} == {"scale": 1, "sums": tier, "checked": 1}


@pytest.mark.parametrize("n", [1, 31, 1000, 4097])
def test_loop_kernel_in_a_fiber_module(mod, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(n, np.float32)
    mod.scale[(n + 127) // 128, 128](1.5, x, y, n)
    np.testing.assert_allclose(y, 1.5 * x, rtol=1e-6)


def test_fiber_kernel_beside_it(mod):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(37 * 128).astype(np.float32)
    out = poisoned(37, np.float32)
    mod.sums[37, 128](x, out)
    np.testing.assert_allclose(out, x.reshape(37, 128).sum(1), rtol=1e-4, atol=1e-4)


def test_assert_in_a_loop_kernel_after_fibers_ran(mod):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(8 * 128).astype(np.float32)
    out = poisoned(8, np.float32)
    mod.sums[8, 128](x, out)            # fibers on this worker first
    v = np.arange(300, dtype=np.int32)
    v[211] = -1
    with pytest.raises(ql.LaunchError, match="assert"):
        mod.checked[3, 128](v, 300)
    mod.checked[3, 128](np.abs(v), 300)   # and the module still works


def test_a_wrongly_chosen_tier_fails_the_launch_not_the_process(cpu, monkeypatch, tmp_path):
    # Force the analysis wrong (every kernel a loop) to check the fiber
    # functions' guard: a barrier outside a fiber is a LaunchError.
    from quicklaunch.backends.cpu import tiers
    monkeypatch.setattr(tiers, "kernel_tiers", lambda text, exprs: {e: 1 for e in exprs})
    monkeypatch.setenv("QUICKLAUNCH_CACHE_DIR", str(tmp_path))   # a fresh build
    src = SOURCE + f"// {tmp_path.name}\n"
    mod = ql.compile(src, device=cpu)
    x = np.ones(2 * 128, np.float32)
    with pytest.raises(ql.LaunchError, match=r"__syncthreads reached .* wrong tier"):
        mod.sums[2, 128](x, poisoned(2, np.float32))
    v = np.arange(10, dtype=np.int32)
    mod.checked[1, 32](v, 10)    # the module goes on working

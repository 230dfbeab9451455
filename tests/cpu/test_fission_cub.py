"""Region fission through cub::BlockReduce: `BlockReduce(temp).Sum(v)` and
`.Reduce(v, op)` with a function object (with or without num_valid) lowered to the two
halves of the device's implementation around a barrier, before the pass
(backends/cpu/fission_cub.py). Each kernel runs both ways, fission and
fibers: same bits, same errors; and against NumPy. What the lowering cannot
keep exact stays on fibers, with the reason."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, poisoned, run_both_tiers, compile_tier_ahead, tier_prefetch

CUB_SOURCE = r"""
#include <cub/block/block_reduce.cuh>

typedef cub::BlockReduce<float, 128> Reduce128;

struct MaxOp { __device__ int operator()(int a, int b) const { return b > a ? b : a; } };
struct MinOp { __device__ int operator()(int a, int b) const { return b < a ? b : a; } };
struct AddOp {
    double scale;
    __device__ double operator()(double a, double b) const { return a + scale * b; }
};

// The usual block sum: one partial per thread, the total in thread 0.
__global__ void block_sums(const float *x, float *out, int n) {
    __shared__ typename Reduce128::TempStorage temp;
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += x[i];
    const float s = Reduce128(temp).Sum(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// Raking order, a maximum over the first `valid` threads, the storage
// reused after a barrier, and a 2D block.
__global__ void raking_stats(const int *x, int *out, int valid) {
    using R = cub::BlockReduce<int, 16, cub::BLOCK_REDUCE_RAKING, 4>;
    __shared__ R::TempStorage temp;
    const int t = threadIdx.y * 16 + threadIdx.x;
    const int v = x[blockIdx.x * 64 + t];
    const int m = R(temp).Reduce(v, MaxOp(), valid);
    __syncthreads();
    const int lo = R(temp).Reduce(v, MinOp{});
    __syncthreads();
    const int s = R(temp).Sum(v, valid);
    if (t == 0) { out[3 * blockIdx.x] = m; out[3 * blockIdx.x + 1] = lo; out[3 * blockIdx.x + 2] = s; }
}

// Floating point in raking order, through a function object with a member:
// the fibers' bits, segment by segment.
__global__ void raking_sums(const double *x, double *out) {
    typedef cub::BlockReduce<double, 96, cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY> R;
    __shared__ typename R::TempStorage temp;
    const double s = R(temp).Reduce(x[blockIdx.x * 96 + threadIdx.x] * 1.5, AddOp{1.0});
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""

REFUSED_SOURCE = r"""
#include <cub/block/block_reduce.cuh>

typedef cub::BlockReduce<float, 64> R64;

__global__ void named_reducer(const float *x, float *out) {
    __shared__ R64::TempStorage temp;
    R64 reducer(temp);
    const float s = reducer.Sum(x[threadIdx.x]);
    if (threadIdx.x == 0) out[0] = s;
}

__global__ void items_per_thread(const float *x, float *out) {
    __shared__ R64::TempStorage temp;
    float items[2] = {x[2 * threadIdx.x], x[2 * threadIdx.x + 1]};
    const float s = R64(temp).Sum(items);
    if (threadIdx.x == 0) out[0] = s;
}

__global__ void lambda_operator(const float *x, float *out) {
    __shared__ R64::TempStorage temp;
    const float s = R64(temp).Reduce(x[threadIdx.x], [](float a, float b) { return a * b; });
    if (threadIdx.x == 0) out[0] = s;
}
"""

REFUSED = {"named_reducer": "the temporary form", "items_per_thread": "items per thread",
           "lambda_operator": "an operator of type"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(CUB_SOURCE, plain=(REFUSED_SOURCE,))
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, CUB_SOURCE)


@pytest.mark.parametrize("name", ["block_sums", "raking_stats", "raking_sums"])
def test_cub_kernels_run_as_fission(mods, name):
    k = mods[0][name]
    assert k.tier == "fission", k.attributes["tier_reason"]
    assert "CUB collective(s) lowered" in k.attributes["tier_reason"]
    assert mods[1][name].tier == "fibers"


@pytest.mark.parametrize("grid,n", [(1, 1), (3, 1000), (4, 128 * 4 * 3 + 5)])
def test_block_sums(mods, rng, grid, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = run_both_tiers(mods, "block_sums", grid, 128, x, poisoned(grid, np.float32),
                         np.int32(n))[1]
    stride = grid * 128
    for b in range(grid):
        idx = np.concatenate([np.arange(b * 128 + t, n, stride) for t in range(128)])
        np.testing.assert_allclose(out[b], x[idx].astype(np.float64).sum(), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("valid", [64, 1, 37, 0, 100])
def test_raking_stats(mods, rng, valid):
    grid = 3
    x = rng.integers(-1000, 1000, grid * 64).astype(np.int32)
    out = run_both_tiers(mods, "raking_stats", grid, (16, 4), x, poisoned(3 * grid, np.int32),
                         np.int32(valid))[1].reshape(grid, 3)
    g = x.reshape(grid, 64)
    k = min(valid, 64)
    if k > 0:
        np.testing.assert_array_equal(out[:, 0], g[:, :k].max(1))
        np.testing.assert_array_equal(out[:, 2], g[:, :k].sum(1))
    else:   # no valid input: thread 0 keeps its own partial, as in CUB
        np.testing.assert_array_equal(out[:, 0], g[:, 0])
        np.testing.assert_array_equal(out[:, 2], g[:, 0])
    np.testing.assert_array_equal(out[:, 1], g.min(1))


def test_raking_sums(mods, rng):
    x = rng.standard_normal(5 * 96)
    out = run_both_tiers(mods, "raking_sums", 5, 96, x, poisoned(5, np.float64))[1]
    np.testing.assert_allclose(out, (x * 1.5).reshape(5, 96).sum(1), rtol=1e-12)


def test_wrong_block_size_is_the_same_error(mods, rng):
    x = rng.standard_normal(256).astype(np.float32)
    for m in mods:
        with pytest.raises(ql.LaunchError, match=r"cub::BlockReduce .* declared for 128 "
                                                 r"threads but the block has 64"):
            m.block_sums[1, 64](x, poisoned(1, np.float32), np.int32(256))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_stays_on_fibers(cpu, name):
    k = ql.compile(REFUSED_SOURCE, device=cpu)[name]
    assert k.tier == "fibers", k.attributes["tier_reason"]
    assert REFUSED[name] in k.attributes["tier_reason"], k.attributes["tier_reason"]


def test_refused_kernels_still_run(cpu, rng):
    m = ql.compile(REFUSED_SOURCE, device=cpu)
    x = rng.standard_normal(128).astype(np.float32)
    out = poisoned(1, np.float32)
    m.items_per_thread[1, 64](x, out)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-4)

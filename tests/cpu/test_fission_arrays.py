"""Region fission of kernels whose per-thread arrays live across barriers
(register tiles, private histograms): each thread's array is replicated
in the block's scratch, reached by reference in every region. The same
kernels run on fibers must give the same bits, and both match NumPy."""
import numpy as np
import pytest

from .conftest import both_tiers, run_both_tiers, compile_tier_ahead, tier_prefetch

ARRAYS_SOURCE = r"""
#define TILE 64
// y = A x, four rows per thread, x staged through shared memory a tile at a
// time: the accumulators acc[4] live across both barriers of each tile.
__global__ void matvec4(const float *A, const float *x, float *y, int rows, int cols) {
    __shared__ float xs[TILE];
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    const int row0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    for (int c0 = 0; c0 < cols; c0 += TILE) {
        if (threadIdx.x < TILE)
            xs[threadIdx.x] = c0 + (int)threadIdx.x < cols ? x[c0 + threadIdx.x] : 0.f;
        __syncthreads();
        for (int r = 0; r < 4; ++r)
            if (row0 + r < rows)
                for (int c = 0; c < TILE && c0 + c < cols; ++c)
                    acc[r] += A[(row0 + r) * cols + c0 + c] * xs[c];
        __syncthreads();
    }
    for (int r = 0; r < 4; ++r)
        if (row0 + r < rows) y[row0 + r] = acc[r];
}

// A private histogram per thread (no initialiser: filled in the first
// region), merged into the block's shared one after a barrier.
__global__ void private_hist(const int *v, int *out, int n) {
    __shared__ int total[8];
    int mine[8];
    for (int b = 0; b < 8; ++b) mine[b] = 0;
    if (threadIdx.x < 8) total[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        mine[v[i] & 7] += 1;
    for (int b = 0; b < 8; ++b) atomicAdd(&total[b], mine[b]);
    __syncthreads();
    if (threadIdx.x < 8) atomicAdd(&out[threadIdx.x], total[threadIdx.x]);
}
"""

KERNELS = ["matvec4", "private_hist"]


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(ARRAYS_SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, ARRAYS_SOURCE)


def test_arrays_across_barriers_run_as_fission(mods):
    fis, fib = mods
    for k in KERNELS:
        assert fis[k].tier == "fission", fis[k].attributes["tier_reason"]
        assert fib[k].tier == "fibers"


@pytest.mark.parametrize("rows, cols, block", [(1, 1, 64), (4 * 64 * 2, 200, 64),
                                               (1000, 130, 96), (31, 64, 64)])
def test_register_tile_matvec(mods, rows, cols, block):
    rng = np.random.default_rng(rows * 7 + cols)
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    y = np.full(rows, np.nan, np.float32)
    grid = -(-rows // (4 * block))
    _, _, y, _, _ = run_both_tiers(mods, "matvec4", grid, block, A, x, y, rows, cols)
    np.testing.assert_allclose(y, A.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, grid, block", [(1, 1, 32), (5000, 3, 64), (777, 2, 100)])
def test_private_histogram(mods, n, grid, block):
    rng = np.random.default_rng(n)
    v = rng.integers(0, 1 << 20, n).astype(np.int32)
    out = np.zeros(8, np.int32)
    _, out, _ = run_both_tiers(mods, "private_hist", grid, block, v, out, n)
    np.testing.assert_array_equal(out, np.bincount(v & 7, minlength=8))

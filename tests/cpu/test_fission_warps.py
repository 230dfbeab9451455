"""Region fission of warp functions (shuffles, votes, __syncwarp) reached by
the whole block: each becomes a boundary between thread loops, its operands
stored per thread before it, its result read by CUDA's lane rules after it.
Every kernel runs both ways, fission and fibers, on the same inputs: same
bits, same errors; and against NumPy. What the pass cannot prove exact
stays on fibers with the reason."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, compile_tier_ahead, tier_prefetch

WARPS_SOURCE = r"""
#define FULL 0xffffffffu
// Per-warp sums: a shuffle-down tree, lane 0 of each warp writes.
__global__ void warp_sums(const float *x, float *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}

// One warp per row (blockDim = (32, rows per block)): max and sum by xor
// butterflies, the shuffle inside a larger expression.
__global__ void row_softmax(const float *x, float *y, int cols) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const float *xr = x + row * cols;
    float *yr = y + row * cols;
    float m = -3.402823466e+38f;   // -FLT_MAX
    for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) s += expf(xr[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    for (int c = threadIdx.x; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}

// Inclusive warp scan with __shfl_up_sync, then the warp's total broadcast
// from lane 31 and a pairwise swap in segments of 16.
__global__ void warp_scan(const int *x, int *scan, int *total, int *swapped) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(FULL, v, o);
        if ((threadIdx.x & 31) >= (unsigned)o) v += u;
    }
    scan[i] = v;
    total[i] = __shfl_sync(FULL, v, 31);
    swapped[i] = __shfl_xor_sync(FULL, x[i], 1, 16);
}

__global__ void votes(const int *x, unsigned *ballot, int *any_all) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned b = __ballot_sync(0xffffffff, x[i] > 0);
    int a = __any_sync(0xffffffff, x[i] > 5);
    int l = __all_sync(0xffffffff, x[i] >= 0);
    __syncwarp();
    ballot[i] = b;
    any_all[i] = a | (l << 1);
}

// Block sum: warp shuffles, partials through shared memory, then every
// warp reduces the partials again (block-uniform: no warp is left out).
__global__ void block_sum_shfl(const float *x, float *out, int n) {
    __shared__ float part[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// Must stay on fibers:
__global__ void half_mask(const int *x, unsigned *out) {
    out[threadIdx.x] = __ballot_sync(0x0000ffffu, x[threadIdx.x] > 0);
}
__global__ void exits_early(const int *x, int *out, int n) {
    if ((int)threadIdx.x >= n) return;
    out[threadIdx.x] = __shfl_down_sync(FULL, x[threadIdx.x], 1);
}
__global__ void first_warp_only(const int *x, int *out) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 32) v = __shfl_xor_sync(FULL, v, 1);
    out[threadIdx.x] = v;
}
__global__ void half_warp_only(const int *x, int *out) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __shfl_xor_sync(FULL, v, 1);
    out[threadIdx.x] = v;
}
"""

# first_warp_only's branch is warp-uniform (test_fission_guards.py); half a
# warp's is not.
FISSION = ["warp_sums", "row_softmax", "warp_scan", "votes", "block_sum_shfl", "first_warp_only"]
FIBERS = {"half_mask": "mask other than",
          "exits_early": "early return",
          "half_warp_only": "thread-dependent condition"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(WARPS_SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, WARPS_SOURCE)


def test_tiers_and_reasons(mods):
    fis, fib = mods
    for k in FISSION:
        assert fis[k].tier == "fission", (k, fis[k].attributes["tier_reason"])
        assert "warp function" in fis[k].attributes["tier_reason"]
        assert fib[k].tier == "fibers"
    for k, why in FIBERS.items():
        assert fis[k].tier == "fibers"
        assert why in fis[k].attributes["tier_reason"], (k, fis[k].attributes["tier_reason"])


def _both(mods, name, grid, block, *args):
    """Runs `name` on fibers and on fission with copies of args; the outputs
    (or the errors) must be the same. Returns fission's arrays and error."""
    fis, fib = mods
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    errs = []
    for mod, xs in ((fib, a), (fis, b)):
        try:
            mod[name][grid, block](*xs)
            errs.append(None)
        except ql.LaunchError as exc:
            errs.append(str(exc))
    assert errs[0] == errs[1], name
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), name
    return b, errs[1]


@pytest.mark.parametrize("n, block", [(1, 32), (64, 64), (1000, 96), (4096, 1024)])
def test_warp_sums(mods, n, block):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    grid = -(-n // block)
    out = np.full(grid * block // 32, np.nan, np.float32)
    (_, out, _), err = _both(mods, "warp_sums", grid, block, x, out, n)
    assert err is None
    ref = np.pad(x, (0, grid * block - n)).reshape(-1, 32).astype(np.float64).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, cols, per_block", [(1, 1, 1), (8, 100, 4), (6, 31, 2)])
def test_row_softmax(mods, rows, cols, per_block):
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = np.full_like(x, np.nan)
    (_, y, _), err = _both(mods, "row_softmax", rows // per_block, (32, per_block), x, y, cols)
    assert err is None
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("grid, block", [(1, 32), (3, 64), (2, 160)])
def test_warp_scan_broadcast_and_segments(mods, grid, block):
    rng = np.random.default_rng(block)
    n = grid * block
    x = rng.integers(-50, 50, n).astype(np.int32)
    outs = [np.full(n, -7, np.int32) for _ in range(3)]
    (_, scan, total, swapped), err = _both(mods, "warp_scan", grid, block, x, *outs)
    assert err is None
    w = x.reshape(-1, 32)
    np.testing.assert_array_equal(scan, np.cumsum(w, 1).ravel())
    np.testing.assert_array_equal(total, np.repeat(w.sum(1), 32))
    np.testing.assert_array_equal(swapped, x.reshape(-1, 2)[:, ::-1].ravel())


@pytest.mark.parametrize("grid, block", [(1, 32), (2, 128)])
def test_votes(mods, grid, block):
    rng = np.random.default_rng(grid)
    n = grid * block
    x = rng.integers(-3, 8, n).astype(np.int32)
    x[:32] = np.abs(x[:32])           # warp 0: all lanes >= 0
    ballot = np.zeros(n, np.uint32)
    any_all = np.full(n, -1, np.int32)
    (_, ballot, any_all), err = _both(mods, "votes", grid, block, x, ballot, any_all)
    assert err is None
    w = x.reshape(-1, 32)
    bits = ((w > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(1)
    np.testing.assert_array_equal(ballot, np.repeat(bits.astype(np.uint32), 32))
    ref = (w > 5).any(1).astype(np.int32) | ((w >= 0).all(1).astype(np.int32) << 1)
    np.testing.assert_array_equal(any_all, np.repeat(ref, 32))


@pytest.mark.parametrize("n, block", [(1, 32), (5000, 256), (2048, 1024)])
def test_block_sum_with_shuffles_and_a_barrier(mods, n, block):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    grid = -(-n // block)
    out = np.full(grid, np.nan, np.float32)
    (_, out, _), err = _both(mods, "block_sum_shfl", grid, block, x, out, n)
    assert err is None
    ref = np.pad(x, (0, grid * block - n)).reshape(grid, block).astype(np.float64).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_a_block_of_partial_warps_runs_on_fibers(mods):
    """48 threads: the full mask names lanes 48..63, which do not exist;
    the launch goes to the fibers, so it fails (or not) exactly as there."""
    x = np.arange(1, 49, dtype=np.float32)
    out = np.zeros(2, np.float32)
    _, err = _both(mods, "warp_sums", 1, 48, x, out, 48)
    assert err is not None and "warp_sums" in err


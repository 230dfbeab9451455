"""Region fission of warp functions under warp-uniform branches
(`if (wid == 0)`, `if (threadIdx.x < 32)`): the branch's condition stored
per thread once, every thread loop inside it over the threads that took it.
Each kernel runs both ways, fission and fibers, on the same inputs (same
bits), and against NumPy; what the pass cannot prove warp-uniform stays on
fibers with the reason."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, poisoned, run_both_tiers, compile_tier_ahead, tier_prefetch

GUARDS_SOURCE = r"""
#define FULL 0xffffffffu

// The block reduction real kernels write: warp sums, partials through
// shared memory, then the first warp alone reduces the partials.
__global__ void block_sum(const float *x, float *out, int n) {
    __shared__ float part[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32, wid = threadIdx.x / warpSize;
    float v = i < n ? x[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    if (lane == 0) part[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (int)(blockDim.x / 32) ? part[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// Both branches hold warp functions; the condition on a copy of threadIdx.x.
__global__ void split_warps(const int *x, unsigned *a, int *b) {
    const unsigned tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    if (tid >= 64) {
        a[i] = __ballot_sync(FULL, x[i] > 0);
        b[i] = __shfl_xor_sync(FULL, x[i], 3);
    } else {
        a[i] = (unsigned)__shfl_sync(FULL, x[i], 7);
        const int some = __any_sync(FULL, x[i] > 90);
        b[i] = some + 2 * __all_sync(FULL, x[i] > -90);
    }
}

// Nested guards (odd warps, then the upper half of the block) and a
// block-uniform loop inside them; 2-D blocks of whole-warp rows.
__global__ void odd_warps(const float *x, float *y) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int i = row * blockDim.x + threadIdx.x;
    const int w = threadIdx.x >> 5;
    float v = x[i];
    if (w & 1) {
        for (int o = 1; o < 32; o <<= 1) v += __shfl_xor_sync(FULL, v, o);
        if (threadIdx.x > 63) v = __shfl_up_sync(FULL, v, 1) * 0.5f;
    }
    __syncwarp();
    y[i] = v;
}

// Must stay on fibers: half a warp takes the branch.
__global__ void half_warp(const int *x, int *y) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// Must stay on fibers: through a float, threadIdx.x / 32 is not per warp.
__global__ void float_warp_index(const int *x, int *y) {
    int v = x[threadIdx.x];
    if ((float)threadIdx.x / 32 < 0.5f) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// Must stay on fibers: a block barrier under a warp-uniform branch.
__global__ void barrier_in_warp_branch(int *y) {
    __shared__ int s;
    if (threadIdx.x / 32 == 0) { s = 1; __syncthreads(); }
    y[threadIdx.x] = s;
}
"""




@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, GUARDS_SOURCE)


def test_tiers_and_reasons(mods):
    fis, fib = mods
    for k in ("block_sum", "split_warps", "odd_warps"):
        assert fis[k].tier == "fission", (k, fis[k].attributes["tier_reason"])
        assert "warp-uniform branch" in fis[k].attributes["tier_reason"]
        assert fib[k].tier == "fibers"
    assert fis["half_warp"].tier == "fibers"
    assert "thread-dependent" in fis["half_warp"].attributes["tier_reason"]
    assert fis["float_warp_index"].tier == "fibers"
    assert fis["barrier_in_warp_branch"].tier == "fibers"



@pytest.mark.parametrize("n,block", [(1, 32), (31, 64), (1000, 256), (4133, 1024),
                                     (100, 96)])
def test_block_sum(mods, n, block):
    rng = np.random.default_rng(n + block)
    x = rng.standard_normal(n).astype(np.float32)
    grid = (n + block - 1) // block
    out = run_both_tiers(mods, "block_sum", grid, block, x, poisoned(grid, np.float32), n)[1]
    pad = np.zeros(grid * block, np.float32)
    pad[:n] = x
    ref = pad.reshape(grid, block).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("grid,block", [(1, 128), (3, 96), (2, 1024)])
def test_split_warps(mods, grid, block):
    rng = np.random.default_rng(block)
    n = grid * block
    x = rng.integers(-100, 100, n).astype(np.int32)
    a, b = run_both_tiers(mods, "split_warps", grid, block, x, poisoned(n, np.uint32),
                          poisoned(n, np.int32))[1:]
    t = np.arange(n) % block
    w = x.reshape(-1, 32)
    lane = np.arange(n) % 32
    hi = t >= 64
    bits = (w > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    ballot = np.repeat(bits.sum(axis=1), 32).astype(np.uint32)
    np.testing.assert_array_equal(a[hi], ballot[hi])
    np.testing.assert_array_equal(b[hi], x[(np.arange(n) - lane) + (lane ^ 3)][hi])
    np.testing.assert_array_equal(a[~hi], np.repeat(w[:, 7], 32).astype(np.uint32)[~hi])
    anyv = np.repeat((w > 90).any(axis=1), 32).astype(np.int32)
    allv = np.repeat((w > -90).all(axis=1), 32).astype(np.int32)
    np.testing.assert_array_equal(b[~hi], (anyv + 2 * allv)[~hi])


@pytest.mark.parametrize("block", [(64, 2), (128, 1), (96, 3)])
def test_odd_warps(mods, block):
    rng = np.random.default_rng(sum(block))
    grid = 2
    n = grid * block[0] * block[1]
    x = rng.standard_normal(n).astype(np.float32)
    y = run_both_tiers(mods, "odd_warps", grid, block, x, poisoned(n, np.float32))[1]
    bx = block[0]
    xs = x.reshape(-1, 32).astype(np.float32)
    ref = x.copy()
    t = np.arange(n) % bx
    for wi in range(xs.shape[0]):
        lanes = np.arange(wi * 32, wi * 32 + 32)
        if (t[lanes[0]] >> 5) & 1:
            s = xs[wi].astype(np.float64).sum()
            ref[lanes] = s
            if t[lanes[0]] > 63:
                up = np.concatenate([[s], np.full(31, s)])
                ref[lanes] = (up * 0.5).astype(np.float32)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_rows_that_split_warps_run_on_fibers(mods):
    """blockDim (16, 4): a warp spans two rows, threadIdx.x / 32 is not
    warp-uniform there; the launch runs on fibers, with the same result."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(128).astype(np.float32)
    run_both_tiers(mods, "odd_warps", 2, (16, 4), x, poisoned(128, np.float32))


ROWS_SOURCE = r"""
#define FULL 0xffffffffu

// Row-wise guards on threadIdx.y (one warp never spans rows when blockDim.x
// is a multiple of 32), and a guard on a barrier loop's counter: the warp
// `r` of each row shifts its values down in round r, then the block syncs.
__global__ void row_rounds(const float *x, float *y) {
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const int i = blockIdx.x * blockDim.x * blockDim.y + t;
    float v = x[i];
    if (threadIdx.y == 1) {
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    }
    for (int r = 0; r < 2; ++r) {
        if ((int)(threadIdx.x / 32) == r) v = __shfl_down_sync(FULL, v, 1) * 2.0f;
        __syncthreads();
    }
    y[i] = v;
}
"""


@pytest.fixture(scope="module")
def rows(cpu):
    return both_tiers(cpu, ROWS_SOURCE)


def _row_rounds_ref(x, block):
    bx, by = block
    ref = x.astype(np.float32).copy().reshape(-1, by, bx)
    for b in range(ref.shape[0]):
        flat = ref[b].reshape(-1)
        if by > 1:
            for w in range(bx // 32):   # row 1's warps: the warp sum everywhere
                seg = flat[bx + 32 * w: bx + 32 * w + 32]
                seg[:] = np.float32(seg.astype(np.float64).sum())
        for row in range(by):
            for r in range(min(2, bx // 32)):
                a = row * bx + 32 * r
                seg = flat[a: a + 32].copy()
                flat[a: a + 32] = np.concatenate([seg[1:], seg[-1:]]) * np.float32(2)
    return ref.reshape(-1)


@pytest.mark.parametrize("block", [(32, 2), (64, 3), (96, 1)])
def test_row_and_counter_guards(rows, block):
    fis, fib = rows
    assert fis.row_rounds.tier == "fission", fis.row_rounds.attributes["tier_reason"]
    assert "2 warp-uniform branch(es)" in fis.row_rounds.attributes["tier_reason"]
    rng = np.random.default_rng(block[0] + block[1])
    n = 2 * block[0] * block[1]
    x = rng.standard_normal(n).astype(np.float32)
    y = run_both_tiers(rows, "row_rounds", 2, block, x, poisoned(n, np.float32))[1]
    np.testing.assert_allclose(y, _row_rounds_ref(x, block), rtol=1e-5, atol=1e-5)


def test_row_guard_with_rows_that_split_warps(rows):
    """blockDim (16, 4): threadIdx.y differs inside a warp; the launch runs
    on fibers, which raise (half of each warp is at another shuffle)."""
    x = np.random.default_rng(3).standard_normal(128).astype(np.float32)
    fis, fib = rows
    for m in (fis, fib):
        with pytest.raises(ql.LaunchError, match=r"__shfl_(xor|down)_sync"):
            m.row_rounds[2, (16, 4)](x, poisoned(128, np.float32))


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(GUARDS_SOURCE, ROWS_SOURCE)
compile_ahead = compile_tier_ahead

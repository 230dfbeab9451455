"""Region fission through cooperative-groups tiles: `tiled_partition<N>`
tiles of at most 32 threads, their shuffles, votes, ranks and sync, and
cg::reduce / inclusive_scan / exclusive_scan, lowered to warp functions
before the pass (backends/cpu/fission_tiles.py). Each kernel runs both ways,
fission and fibers: same bits, same errors; and against NumPy. What the
lowering cannot keep exact stays on fibers, with the reason."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, poisoned, run_both_tiers, compile_tier_ahead, tier_prefetch

TILE_SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// The block's sum: each warp reduces, warp 0 reduces the warps' partials.
__global__ void tile_block_sums(const float *x, float *out, int n) {
    __shared__ float part[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += x[i];
    float v = cg::reduce(warp, acc, cg::plus<float>());
    if (warp.thread_rank() == 0) part[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? part[warp.thread_rank()] : 0.f;
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) out[blockIdx.x] = v;
    }
}

// Helpers taking a tile, by reference and by value, as most code writes them.
__device__ float tile_sum(const cg::thread_block_tile<16> &t, float v) {
    for (int o = t.size() / 2; o > 0; o /= 2) v += t.shfl_down(v, o);
    return v;
}

__device__ float tile_spread(cg::thread_block_tile<16> t, float v) {
    const float first = t.shfl(v, 0);
    const float prev = t.shfl_up(v, 1);
    const float mirror = t.shfl_xor(v, 15);
    return first + 2.f * prev + 4.f * mirror;
}

__global__ void tile_shuffles(const float *x, float *sums, float *spread) {
    auto t16 = cg::tiled_partition<16>(cg::this_thread_block());
    const int i = blockIdx.x * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
    const float v = x[i];
    const float s = tile_sum(t16, v);
    sums[i] = t16.thread_rank() == 0 ? s : -1.f;
    spread[i] = tile_spread(t16, v);
    t16.sync();
}

// Votes of a tile under a warp and of a whole warp.
__global__ void tile_votes(const float *x, unsigned *out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(block);
    cg::thread_block_tile<32> w = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * blockDim.x * blockDim.y + block.thread_rank();
    const float v = x[i];
    const unsigned b8 = t8.ballot(v > 0.f);
    const int any8 = t8.any(v > 1.f);
    const int all8 = t8.all(v > -1.f);
    const unsigned b32 = w.ballot(v > 0.5f);
    const unsigned bf = t8.ballot(v * 0.5f);        // an int parameter: |v| < 2 counts as 0
    const int all32 = w.all(v < 3.f);
    cg::sync(w);
    out[4 * i] = b8;
    out[4 * i + 1] = (unsigned)any8 | (unsigned)all8 << 1 | (unsigned)all32 << 2;
    out[4 * i + 2] = b32;
    out[4 * i + 3] = t8.meta_group_rank() * 100u + t8.thread_rank() + (bf << 16);
}

"""

# Apart: the HIP device's cooperative groups have no scan.h (tests/hip/test_corpus.py).
SCAN_SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

// Scans and reductions with cooperative groups' other operators.
__global__ void tile_scans(const int *x, const float *y, int *inc, int *exc, float *fin,
                           float *mins, double *maxs, unsigned *xors) {
    cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block());
    auto t4 = cg::tiled_partition<4>(cg::this_thread_block());
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    inc[i] = cg::inclusive_scan(w, x[i]);
    exc[i] = cg::exclusive_scan(t4, x[i], cg::greater<int>());
    fin[i] = cg::inclusive_scan(w, y[i], cg::plus<float>());
    mins[i] = cg::reduce(w, y[i], cg::less<float>());
    maxs[i] = cg::reduce(t4, (double)y[i], cg::greater<double>());
    xors[i] = cg::reduce(w, (unsigned)x[i], cg::bit_xor<unsigned>());
}
"""

REFUSED_SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void tile_of_tile(float *y) {
    auto w = cg::tiled_partition<32>(cg::this_thread_block());
    auto q = cg::tiled_partition<8>(w);
    y[threadIdx.x] = q.shfl_down(y[threadIdx.x], 1);
}

__device__ void keep(const cg::thread_block_tile<32> *t, float *y) {
    y[threadIdx.x] = t->shfl_down(y[threadIdx.x], 1);
}

__global__ void tile_address(float *y) {
    cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block());
    keep(&w, y);
}

__global__ void tile_discarded(float *y) {
    auto w = cg::tiled_partition<32>(cg::this_thread_block());
    (void)w;
    y[threadIdx.x] = w.shfl_down(y[threadIdx.x], 1);
}

__global__ void matches(unsigned *y) {
    auto w = cg::tiled_partition<32>(cg::this_thread_block());
    y[threadIdx.x] = w.match_any(y[threadIdx.x] & 3u);
}

struct Pair { float a, b; };

__global__ void struct_shuffle(Pair *p) {
    auto w = cg::tiled_partition<32>(cg::this_thread_block());
    p[threadIdx.x] = w.shfl_down(p[threadIdx.x], 1);
}

__global__ void lambda_op(float *y) {
    auto w = cg::tiled_partition<32>(cg::this_thread_block());
    y[threadIdx.x] = cg::reduce(w, y[threadIdx.x], [](float a, float b) { return a * b; });
}

#define LANE (t.thread_rank() + 1)
__global__ void macro_rank(float *y, int *z) {
    auto t = cg::tiled_partition<16>(cg::this_thread_block());
    y[threadIdx.x] = t.shfl(y[threadIdx.x], 0);
    z[threadIdx.x] = LANE;
}

#define SETUP auto t = cg::tiled_partition<16>(cg::this_thread_block()); z[threadIdx.x] = 1
__global__ void macro_decl(float *y, int *z) {
    SETUP;
    y[threadIdx.x] = t.shfl(y[threadIdx.x], 0);
}

__global__ void explicit_type(float *y) {
    auto t = cg::tiled_partition<32>(cg::this_thread_block());
    y[threadIdx.x] = (t).shfl<int>(y[threadIdx.x], 0);
}

__global__ void xor_past_tile(float *y, int m) {
    auto t = cg::tiled_partition<8>(cg::this_thread_block());
    y[threadIdx.x] = t.shfl_xor(y[threadIdx.x], m);
}

__global__ void shuffle_in_branch(float *y) {
    auto q = cg::tiled_partition<32>(cg::this_thread_block());
    y[threadIdx.x] = q.meta_group_rank() == 0 ? q.shfl(y[threadIdx.x], 3) : 0.f;
}

__global__ void divergent(float *y) {
    auto t = cg::tiled_partition<16>(cg::this_thread_block());
    if (t.meta_group_rank() % 2 == 0) y[threadIdx.x] = t.shfl_down(y[threadIdx.x], 1);
}
"""

# Apart: wider than any AMD wavefront (tests/hip/test_corpus.py).
WIDE_SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void wide_tile(float *y) {
    cg::thread_block_tile<128> t = cg::tiled_partition<128>(cg::this_thread_block());
    y[threadIdx.x] = t.shfl(y[threadIdx.x], 0);
}
"""

REFUSED = {"tile_of_tile": "other than the thread block",
           "tile_address": "cooperative group of type",
           "tile_discarded": "used other than by its members",
           "matches": "member 'match_any'", "struct_shuffle": "a tile operation on",
           "lambda_op": "an operator of type",
           "divergent": "condition that reads a tile's rank", "macro_rank": "spelled by a macro",
           "macro_decl": "declared by a macro", "explicit_type": "explicit template arguments",
           "xor_past_tile": "cannot prove below 8", "shuffle_in_branch": "a branch of ?:"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(TILE_SOURCE, SCAN_SOURCE, plain=(REFUSED_SOURCE, WIDE_SOURCE,))
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, TILE_SOURCE)


@pytest.fixture(scope="module")
def scans(cpu):
    return both_tiers(cpu, SCAN_SOURCE)


@pytest.fixture(scope="module")
def refused(cpu):
    return ql.compile(REFUSED_SOURCE, device=cpu)


def _groups(x, size):
    return x.reshape(-1, size)


@pytest.mark.parametrize("name", ["tile_block_sums", "tile_shuffles", "tile_votes",
                                  "tile_scans"])
def test_tile_kernels_run_as_fission(mods, scans, name):
    both = scans if name == "tile_scans" else mods
    k = both[0][name]
    assert k.tier == "fission", k.attributes["tier_reason"]
    assert "tile operation(s) lowered" in k.attributes["tier_reason"]
    assert both[1][name].tier == "fibers"


@pytest.mark.parametrize("grid,block,n", [(1, 32, 1), (3, 64, 1000), (4, 96, 31 * 97),
                                          (2, 1024, 5000)])
def test_tile_block_sums(mods, rng, grid, block, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = run_both_tiers(mods, "tile_block_sums", grid, block, x, poisoned(grid, np.float32),
                         np.int32(n))[1]
    stride = grid * block
    for b in range(grid):
        idx = np.concatenate([np.arange(b * block + t, n, stride) for t in range(block)])
        np.testing.assert_allclose(out[b], x[idx].astype(np.float64).sum(), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("grid,block", [(1, 32), (3, 64), (2, 160), (1, (32, 3))])
def test_tile_shuffles(mods, rng, grid, block):
    n = grid * (block if isinstance(block, int) else block[0] * block[1])
    x = rng.standard_normal(n).astype(np.float32)
    sums, spread = run_both_tiers(mods, "tile_shuffles", grid, block, x,
                                  poisoned(n, np.float32), poisoned(n, np.float32))[1:]
    g = _groups(x, 16)
    want = np.full((n // 16, 16), -1.0)
    want[:, 0] = g.astype(np.float64).sum(1)
    np.testing.assert_allclose(sums, want.ravel(), rtol=1e-5, atol=1e-5)
    prev = np.concatenate([g[:, :1], g[:, :-1]], 1)        # rank 0 reads its own value
    want = g[:, :1] + 2 * prev + 4 * g[:, ::-1]
    np.testing.assert_allclose(spread, want.ravel(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("grid,block", [(1, 32), (2, 96), (1, (64, 2))])
def test_tile_votes(mods, rng, grid, block):
    n = grid * (block if isinstance(block, int) else block[0] * block[1])
    x = (rng.standard_normal(n) * 1.5).astype(np.float32)
    out = run_both_tiers(mods, "tile_votes", grid, block, x, poisoned(4 * n, np.uint32))[1]
    out = out.reshape(n, 4)
    bits8 = 1 << np.arange(8)
    g8, g32 = _groups(x, 8), _groups(x, 32)
    np.testing.assert_array_equal(out[:, 0], np.repeat(((g8 > 0) * bits8).sum(1), 8))
    flags = (np.repeat((g8 > 1).any(1), 8) | np.repeat((g8 > -1).all(1), 8) << 1 |
             np.repeat((g32 < 3).all(1), 32) << 2)
    np.testing.assert_array_equal(out[:, 1], flags)
    bits32 = 1 << np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(out[:, 2], np.repeat(((g32 > 0.5) * bits32).sum(1), 32))
    lin = np.arange(n) % (n // grid)
    bf = np.repeat(((np.abs(g8 * np.float32(0.5)) >= 1) * bits8).sum(1), 8)
    np.testing.assert_array_equal(out[:, 3], lin // 8 * 100 + lin % 8 + (bf << 16))


@pytest.mark.parametrize("grid,block", [(1, 32), (3, 64), (1, 256)])
def test_tile_scans(scans, rng, grid, block):
    n = grid * block
    x = rng.integers(-50, 50, n).astype(np.int32)
    y = rng.standard_normal(n).astype(np.float32)
    outs = run_both_tiers(scans, "tile_scans", grid, block, x, y, poisoned(n, np.int32),
                          poisoned(n, np.int32), poisoned(n, np.float32),
                          poisoned(n, np.float32), poisoned(n, np.float64),
                          poisoned(n, np.uint32))[2:]
    inc, exc, fin, mins, maxs, xors = outs
    np.testing.assert_array_equal(inc, np.cumsum(_groups(x, 32), 1).ravel())
    g4 = _groups(x, 4)
    run = np.maximum.accumulate(g4, 1)
    want = np.concatenate([np.zeros((n // 4, 1), np.int32), run[:, :-1]], 1)
    np.testing.assert_array_equal(exc, want.ravel())
    np.testing.assert_allclose(fin, np.cumsum(_groups(y.astype(np.float64), 32), 1).ravel(),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(mins, np.repeat(_groups(y, 32).min(1), 32))
    np.testing.assert_array_equal(maxs, np.repeat(_groups(y.astype(np.float64), 4).max(1), 4))
    want = np.bitwise_xor.reduce(_groups(x.astype(np.uint32), 32), 1)
    np.testing.assert_array_equal(xors, np.repeat(want, 32))


def test_partial_warp_block_runs_on_fibers_same_bits(mods, rng):
    """A block of 48 threads (three tiles of 16, the last warp partial): the
    launch runs on fibers in both modules, with the same results."""
    x = rng.standard_normal(48).astype(np.float32)
    sums = run_both_tiers(mods, "tile_shuffles", 1, 48, x, poisoned(48, np.float32),
                          poisoned(48, np.float32))[1]
    np.testing.assert_allclose(sums[::16], _groups(x.astype(np.float64), 16).sum(1),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_stays_on_fibers(refused, name):
    k = refused[name]
    assert k.tier == "fibers", k.attributes["tier_reason"]
    assert REFUSED[name] in k.attributes["tier_reason"], k.attributes["tier_reason"]


def test_wide_tile_stays_on_fibers(cpu, rng):
    k = ql.compile(WIDE_SOURCE, device=cpu).wide_tile
    assert k.tier == "fibers" and "of 128 threads" in k.attributes["tier_reason"]
    y = rng.standard_normal(256).astype(np.float32)
    want = np.repeat(y[::128], 128)
    k[1, 256](y)
    np.testing.assert_array_equal(y, want)


def test_refused_kernels_still_run(refused, rng):
    y = rng.standard_normal(64).astype(np.float32)
    want = y.copy()
    refused.tile_of_tile[1, 64](y)
    g = _groups(want, 8)
    np.testing.assert_array_equal(y, np.concatenate([g[:, 1:], g[:, -1:]], 1).ravel())

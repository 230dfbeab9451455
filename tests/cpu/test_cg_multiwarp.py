"""Cooperative-groups tiles of more than one warp on the CPU device:
tiled_partition<64> ... <1024> with and without block_tile_memory, against
NumPy on random inputs (outputs poisoned before each launch): reduce, shfl,
any/all, ranks, the scans; and CUDA's rules where a tile cannot be formed or
its sync cannot complete, as LaunchErrors."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

# Non-template kernels (one per tile size) so the NVRTC corpus
# (tests/nvrtc/test_corpus.py) compiles them as written, for sm_80 and sm_90.
SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

template <unsigned N, class Block>
__device__ void tile_body(const Block &block, const float *in, const int *ints, float *sum,
                          float *bcast, int *isum, int *votes, int *ranks, int *inc, int *exc) {
    auto tile = cg::tiled_partition<N>(block);
    const int g = blockIdx.x * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
    const float v = in[g];
    sum[g] = cg::reduce(tile, v, cg::plus<float>());
    bcast[g] = tile.shfl(v, 5);
    isum[g] = cg::reduce(tile, ints[g], cg::plus<int>());
    votes[g] = tile.any(ints[g] == 7) + 2 * tile.all(ints[g] != 3);
    ranks[g] = (int)tile.thread_rank() + 10000 * (int)tile.meta_group_rank()
               + 1000000 * (int)tile.meta_group_size() + 100 * (int)(tile.size() == N)
               + 100 * (int)(tile.num_threads() == N);
    tile.sync();
    inc[g] = cg::inclusive_scan(tile, ints[g]);
    exc[g] = cg::exclusive_scan(tile, ints[g], cg::plus<int>());
}

#define ARGS const float *in, const int *ints, float *sum, float *bcast, int *isum, \
             int *votes, int *ranks, int *inc, int *exc
#define PASS in, ints, sum, bcast, isum, votes, ranks, inc, exc

__global__ void mem64(ARGS) {
    __shared__ cg::block_tile_memory<1024> scratch;
    tile_body<64>(cg::this_thread_block(scratch), PASS);
}
__global__ void mem128(ARGS) {
    __shared__ cg::block_tile_memory<1024> scratch;
    tile_body<128>(cg::this_thread_block(scratch), PASS);
}
__global__ void mem256(ARGS) {
    __shared__ cg::block_tile_memory<1024> scratch;
    tile_body<256>(cg::this_thread_block(scratch), PASS);
}
__global__ void mem512(ARGS) {
    __shared__ cg::block_tile_memory<1024> scratch;
    tile_body<512>(cg::this_thread_block(scratch), PASS);
}
__global__ void mem1024(ARGS) {
    __shared__ cg::block_tile_memory<1024> scratch;
    tile_body<1024>(cg::this_thread_block(scratch), PASS);
}
// Without block_tile_memory (sm_80 and later in CUDA; the CPU takes both).
__global__ void plain64(ARGS) { tile_body<64>(cg::this_thread_block(), PASS); }
__global__ void plain128(ARGS) { tile_body<128>(cg::this_thread_block(), PASS); }

// A shuffle of an 8-byte struct across a 64-tile (CUDA's limit for tiles of
// more than one warp); src_rank from the host, the same for every thread.
struct pair_t { float a; int b; };
__global__ void pairs(const float *in, float *a_out, int *b_out, int src) {
    __shared__ cg::block_tile_memory<256> scratch;
    auto tile = cg::tiled_partition<64>(cg::this_thread_block(scratch));
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    pair_t p = {in[g], g};
    pair_t r = tile.shfl(p, src);
    a_out[g] = r.a;
    b_out[g] = r.b;
}
// Each thread names its own src_rank (undefined in a multi-warp tile).
__global__ void own_src(int *out) {
    auto tile = cg::tiled_partition<64>(cg::this_thread_block());
    out[threadIdx.x] = tile.shfl((int)threadIdx.x, (int)(tile.thread_rank() ^ 1));
}

// A 32-tile of a 64-tile: its meta group is within the parent.
__global__ void nested(int *out) {
    auto t64 = cg::tiled_partition<64>(cg::this_thread_block());
    auto t32 = cg::tiled_partition<32>(t64);
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = (int)t32.meta_group_rank() * 10 + (int)t32.meta_group_size()
             + 100 * (int)t64.meta_group_rank();
}

// A block of 256 threads in a block_tile_memory for 128.
__global__ void small_memory(int *out) {
    __shared__ cg::block_tile_memory<128> scratch;
    auto tile = cg::tiled_partition<64>(cg::this_thread_block(scratch));
    out[threadIdx.x] = (int)tile.thread_rank();
}

// Threads of rank >= keep leave before the sync: the ones that stay still get
// through it (exited threads release it, as they release __syncthreads).
__global__ void leavers(int *out, int keep) {
    auto tile = cg::tiled_partition<128>(cg::this_thread_block());
    if ((int)tile.thread_rank() >= keep) return;
    tile.sync();
    out[threadIdx.x] = tile.any(1) + tile.all(1);
}

// Half of each tile waits at __syncthreads, the other half at the tile's sync.
__global__ void split_sync(int *out) {
    auto tile = cg::tiled_partition<64>(cg::this_thread_block());
    if (tile.thread_rank() < 32) tile.sync();
    else __syncthreads();
    out[threadIdx.x] = 1;
}
"""

OUTS = [("sum", np.float32), ("bcast", np.float32), ("isum", np.int32), ("votes", np.int32),
        ("ranks", np.int32), ("inc", np.int32), ("exc", np.int32)]


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def run_tiles(kernel, grid, block, rng):
    total = grid * int(np.prod(block))
    x = rng.standard_normal(total).astype(np.float32)
    ints = rng.integers(-50, 50, total).astype(np.int32)
    ints[rng.random(total) < 0.01] = 7
    ints[rng.random(total) < 0.01] = 3
    outs = {name: poisoned(total, dt) for name, dt in OUTS}
    kernel[grid, block](x, ints, *outs.values())
    return x, ints, outs


def check_tiles(n, block, x, ints, outs):
    t = np.arange(x.size)
    rank = t % n
    xs, ii = x.reshape(-1, n), ints.reshape(-1, n)
    np.testing.assert_allclose(outs["sum"], xs.astype(np.float64).sum(1).repeat(n),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(outs["bcast"], xs[:, 5].repeat(n))
    np.testing.assert_array_equal(outs["isum"], ii.sum(1).repeat(n))
    votes = (ii == 7).any(1).astype(np.int32) + 2 * (ii != 3).all(1)
    np.testing.assert_array_equal(outs["votes"], votes.repeat(n))
    meta = (t % block) // n
    np.testing.assert_array_equal(outs["ranks"],
                                  rank + 10000 * meta + 1000000 * (block // n) + 200)
    inc = np.cumsum(ii, 1)
    np.testing.assert_array_equal(outs["inc"], inc.ravel())
    np.testing.assert_array_equal(outs["exc"], (inc - ii).ravel())


@pytest.mark.parametrize("n,block", [(64, 64), (64, 128), (64, 256), (64, 1024),
                                     (128, 128), (128, 384), (128, 1024), (256, 256),
                                     (256, 768), (512, 1024), (1024, 1024)])
def test_tiles_with_block_tile_memory(mod, rng, n, block):
    x, ints, outs = run_tiles(mod[f"mem{n}"], 3, block, rng)
    check_tiles(n, block, x, ints, outs)


@pytest.mark.parametrize("n,block", [(64, 192), (128, 256)])
def test_tiles_without_block_tile_memory(mod, rng, n, block):
    x, ints, outs = run_tiles(mod[f"plain{n}"], 2, block, rng)
    check_tiles(n, block, x, ints, outs)


def test_a_two_dimensional_block(mod, rng):
    # threads are ranked x fastest: a (32, 4) block holds two 64-tiles
    x, ints, outs = run_tiles(mod["mem64"], 2, (32, 4), rng)
    check_tiles(64, 128, x, ints, outs)


@pytest.mark.parametrize("src", [0, 37, 63])
def test_shfl_of_a_struct_across_a_64_tile(mod, rng, src):
    grid, block = 2, 256
    total = grid * block
    v = rng.standard_normal(total).astype(np.float32)
    a, b = poisoned(total, np.float32), poisoned(total, np.int32)
    mod["pairs"][grid, block](v, a, b, src)
    want = np.arange(total) // 64 * 64 + src
    np.testing.assert_array_equal(a, v[want])
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("kernel,src,why", [
    ("pairs", 64, r"src_rank 64 is not a rank of the tile"),
    ("own_src", None, r"src_rank \d+ differs from the src_rank of the tile's first thread \(1\)"),
])
def test_undefined_multiwarp_shfl_is_a_launch_error(mod, kernel, src, why):
    out = poisoned(128, np.int32)
    args = (poisoned(128, np.float32), poisoned(128, np.float32), out, src) if src else (out,)
    with pytest.raises(ql.LaunchError, match=r"thread_block_tile<64>::shfl in block \(0, 0, "
                       r"0\), thread \(\d+, 0, 0\): " + why):
        mod[kernel][1, 128](*args)


def test_nested_tile_ranks_are_within_the_parent(mod):
    out = poisoned(256, np.int32)
    mod["nested"][1, 256](out)
    t = np.arange(256)
    np.testing.assert_array_equal(out, (t % 64) // 32 * 10 + 2 + 100 * (t // 64))


@pytest.mark.parametrize("block", [96, 160])
def test_block_not_a_multiple_of_the_tile_is_a_launch_error(mod, rng, block):
    # CUDA: the parent group's size must be evenly divisible by the tile size
    with pytest.raises(ql.LaunchError, match=rf"tiled_partition<64> in block \(0, 0, 0\), "
                       rf"thread \(\d+, 0, 0\): the parent group has {block} threads, not a "
                       r"multiple of 64") as info:
        run_tiles(mod["mem64"], 1, block, rng)
    assert "mem64" in str(info.value)


def test_block_larger_than_block_tile_memory_is_a_launch_error(mod):
    out = poisoned(256, np.int32)
    with pytest.raises(ql.LaunchError, match=r"block_tile_memory<128>.*the block has 256 "
                       r"threads, more than the memory's MaxBlockSize 128"):
        mod["small_memory"][1, 256](out)
    mod["small_memory"][1, 128](out[:128])
    np.testing.assert_array_equal(out[:128], np.arange(128) % 64)


@pytest.mark.parametrize("keep", [1, 50, 127, 128])
def test_exited_threads_release_a_tile_sync(mod, keep):
    out = poisoned(256, np.int32)
    mod["leavers"][1, 256](out, keep)
    t = np.arange(256)
    np.testing.assert_array_equal(out[t % 128 < keep], 2)
    assert (out[t % 128 >= keep] == np.iinfo(np.int32).max).all()


def test_tile_sync_against_syncthreads_is_a_deadlock(mod):
    out = poisoned(128, np.int32)
    with pytest.raises(ql.LaunchError) as info:
        mod["split_sync"][1, 128](out)
    msg = str(info.value)
    assert "split_sync" in msg and "deadlock in block (0, 0, 0)" in msg
    assert "threads 0-31 wait at thread_block_tile<64>::sync" in msg
    assert "threads 32-63 wait at __syncthreads" in msg


def test_the_module_still_launches_after_a_failure(mod, rng):
    with pytest.raises(ql.LaunchError):
        run_tiles(mod["mem128"], 1, 192, rng)
    x, ints, outs = run_tiles(mod["mem128"], 2, 256, rng)
    check_tiles(128, 256, x, ints, outs)


@pytest.mark.parametrize("arch", ["sm_70", "sm_80"])
def test_without_block_tile_memory_at_any_arch(cpu, rng, arch):
    # CUDA needs block_tile_memory before sm_80; the CPU device takes both
    m = ql.compile(SOURCE, device=cpu, options=[f"-arch={arch}"])
    x, ints, outs = run_tiles(m["plain128"], 2, 256, rng)
    check_tiles(128, 256, x, ints, outs)

"""Grid groups and cooperative launches on the CPU device:
cooperative_groups::this_grid() and grid.sync() with
k.configure(grid, block, cooperative=True); every block resident at once,
each on a thread of its own. Random inputs, outputs poisoned before each
launch, NumPy references; grids that cannot be co-resident are refused with
the limit, and grid.sync() outside a cooperative launch, or one that some
block never reaches, is a LaunchError instead of a hang."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import runtime

from .conftest import poisoned

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Phase 1: every thread writes; grid.sync(); phase 2: every thread reads what
// a thread of another block (the next block, cyclically) wrote.
__global__ void two_phase(const float *in, float *mid, float *out,
                          unsigned long long *ranks, unsigned long long *info) {
    cg::grid_group grid = cg::this_grid();
    const unsigned long long i = grid.thread_rank();
    mid[i] = in[i] * 2.0f + 1.0f;
    grid.sync();
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    out[i] = mid[(i + threads) % grid.size()] - in[i];
    ranks[i] = grid.block_rank() * 100000 + (i - grid.block_rank() * threads);
    if (i == 0) {
        info[0] = grid.num_blocks();
        info[1] = grid.size();
        info[2] = grid.num_threads();
        info[3] = grid.is_valid();
        info[4] = grid.dim_blocks().x * 10000 + grid.dim_blocks().y * 100 + grid.dim_blocks().z;
    }
}

// A block sum in __shared__ memory per block, then block 0 adds the blocks'
// sums after grid.sync(); then again on the doubled input, many times over.
__global__ void block_sums(const int *in, int *partial, int *total, int rounds) {
    __shared__ int acc[256];
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    for (int r = 0; r < rounds; ++r) {
        acc[threadIdx.x] = in[grid.thread_rank()] * (r + 1);
        block.sync();
        for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
            if (threadIdx.x < s) acc[threadIdx.x] += acc[threadIdx.x + s];
            block.sync();
        }
        if (threadIdx.x == 0) partial[blockIdx.x] = acc[0];
        grid.sync();
        if (grid.thread_rank() == 0) {
            int t = 0;
            for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
            total[r] = t;
        }
        grid.sync();   // partial is rewritten by the next round
    }
}

// Dynamic shared memory of the launch, per block.
__global__ void dyn_shared(const float *in, float *out) {
    extern __shared__ float tile[];
    cg::grid_group grid = cg::this_grid();
    tile[threadIdx.x] = in[grid.thread_rank()];
    grid.sync();
    out[grid.thread_rank()] = tile[blockDim.x - 1 - threadIdx.x];
}

__global__ void validity(int *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = cg::this_grid().is_valid();
}

// Block 0 calls grid.sync() once more than the others: a GPU hangs.
__global__ void uneven(int *out) {
    cg::grid_group grid = cg::this_grid();
    grid.sync();
    if (blockIdx.x == 0) grid.sync();
    out[grid.thread_rank()] = 1;
}

// Block 1 fails an assert while the others wait at grid.sync().
__global__ void fails(int *out) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 1 && threadIdx.x == 3) assert(out[0] == 12345);
    grid.sync();
    out[grid.thread_rank()] = 1;
}

// Half of a block at grid.sync(), half at __syncthreads: a deadlock in the block.
__global__ void split(int *out) {
    if (threadIdx.x < 16) cg::this_grid().sync();
    else __syncthreads();
    out[threadIdx.x] = 1;
}

// No grid.sync(): a plain kernel may be launched cooperatively too.
__global__ void saxpy(float a, const float *x, float *y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def run_two_phase(kernel, grid, block, rng, **launch):
    nblocks, threads = int(np.prod(grid)), int(np.prod(block))
    n = nblocks * threads
    x = rng.standard_normal(n).astype(np.float32)
    mid, out = poisoned(n, np.float32), poisoned(n, np.float32)
    ranks, info = poisoned(n, np.uint64), poisoned(5, np.uint64)
    kernel.configure(grid, block, cooperative=True, **launch)(x, mid, out, ranks, info)
    return x, mid, out, ranks, info, threads, nblocks


@pytest.mark.parametrize("grid,block", [(1, 64), (1, (8, 4)), (2, 32), (7, 96), (16, 256),
                                        ((3, 2), 128), ((2, 2, 2), (16, 2))])
def test_two_phase_reads_other_blocks_after_grid_sync(mod, rng, grid, block):
    x, mid, out, ranks, info, threads, nblocks = run_two_phase(mod["two_phase"], grid, block,
                                                               rng)
    n = x.size
    want_mid = x * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(mid, want_mid)
    np.testing.assert_array_equal(out, np.roll(want_mid, -threads) - x)
    t = np.arange(n)
    np.testing.assert_array_equal(ranks, t // threads * 100000 + t % threads)
    g = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (grid, 1, 1)
    np.testing.assert_array_equal(info, [nblocks, n, n, 1, g[0] * 10000 + g[1] * 100 + g[2]])


def test_launch_spelling_and_a_stream(mod, rng):
    n, block = 4 * 64, 64
    x = rng.standard_normal(n).astype(np.float32)
    mid, out = poisoned(n, np.float32), poisoned(n, np.float32)
    ranks, info = poisoned(n, np.uint64), poisoned(5, np.uint64)
    mod["two_phase"].configure(4, block, cooperative=True)(x, mid, out, ranks, info)
    np.testing.assert_array_equal(out, np.roll(x * np.float32(2) + 1, -block) - x)
    s = ql.Stream(mod.device)
    out2 = poisoned(n, np.float32)
    mod["two_phase"].configure(4, block, 0, s, cooperative=True)(x, mid, out2, ranks, info)
    np.testing.assert_array_equal(out2, out)


@pytest.mark.parametrize("grid,block,rounds", [(1, 256, 3), (5, 64, 20), (12, 128, 7)])
def test_shared_memory_per_block_and_many_grid_syncs(mod, rng, grid, block, rounds):
    v = rng.integers(-1000, 1000, grid * block).astype(np.int32)
    partial, total = poisoned(grid, np.int32), poisoned(rounds, np.int32)
    mod["block_sums"].configure(grid, block, cooperative=True)(v, partial, total, rounds)
    np.testing.assert_array_equal(total, v.sum() * np.arange(1, rounds + 1))
    np.testing.assert_array_equal(partial, v.reshape(grid, block).sum(1) * rounds)


def test_dynamic_shared_memory(mod, rng):
    grid, block = 6, 128
    x = rng.standard_normal(grid * block).astype(np.float32)
    out = poisoned(x.size, np.float32)
    mod["dyn_shared"].configure(grid, block, block * 4, cooperative=True)(x, out)
    np.testing.assert_array_equal(out, x.reshape(grid, block)[:, ::-1].ravel())


def test_is_valid_only_in_a_cooperative_launch(mod):
    out = poisoned(128, np.int32)
    mod["validity"][2, 64](out)
    assert (out == 0).all()
    mod["validity"].configure(2, 64, cooperative=True)(out)
    assert (out == 1).all()


def test_grid_sync_without_a_cooperative_launch_is_a_launch_error(mod, rng):
    n = 2 * 32
    args = (rng.standard_normal(n).astype(np.float32), poisoned(n, np.float32),
            poisoned(n, np.float32), poisoned(n, np.uint64), poisoned(5, np.uint64))
    with pytest.raises(ql.LaunchError, match=r"kernel 'two_phase' failed on the CPU device: "
                       r"grid\.sync\(\) in block \(\d, 0, 0\), thread \(\d+, 0, 0\): the "
                       r"kernel was not launched cooperatively.*cooperative=True"):
        mod["two_phase"][2, 32](*args)


def test_grid_of_one_block(mod, rng):
    x, mid, out, ranks, info, threads, _ = run_two_phase(mod["two_phase"], 1, 1024, rng)
    want = x * np.float32(2) + 1
    np.testing.assert_array_equal(out, want - x)   # its own block's, one grid-size away
    np.testing.assert_array_equal(info[:4], [1, 1024, 1024, 1])


def test_over_limit_grid_is_refused_before_it_runs(mod, rng):
    lim = runtime.cooperative_limit(1024)
    assert lim.stack_bytes >= 64 * 1024 and lim.max_blocks == 1024
    assert lim.by_memory == lim.memory_budget // (1024 * lim.stack_bytes)
    assert lim.by_maps == (lim.max_maps - lim.maps_in_use - 2048) // (2 * 1024 + 4)
    assert 1 <= lim.blocks == min(lim.by_memory, lim.by_maps, lim.max_blocks)
    limit = lim.blocks
    n = (limit + 1) * 1024
    x = np.zeros(n, np.float32)
    mid = poisoned(n, np.float32)
    with pytest.raises(ql.LaunchError, match=rf"a cooperative launch of {limit + 1} blocks of "
                       rf"1024 threads cannot be co-resident on the CPU device, which holds at "
                       rf"most {limit} such blocks now.*a quarter of the host's memory.*"
                       rf"vm\.max_map_count"):
        mod["two_phase"].configure(limit + 1, 1024, cooperative=True)(
            x, mid, mid, poisoned(n, np.uint64), poisoned(5, np.uint64))
    assert np.isnan(mid).all()   # nothing ran
    # the limit itself launches
    n = limit * 1024
    x = rng.standard_normal(n).astype(np.float32)
    mid, out = poisoned(n, np.float32), poisoned(n, np.float32)
    mod["two_phase"].configure(limit, 1024, cooperative=True)(
        x, mid, out, poisoned(n, np.uint64), poisoned(5, np.uint64))
    np.testing.assert_array_equal(out, np.roll(x * np.float32(2) + 1, -1024) - x)
    # tiny blocks meet the cap on threads, one a block
    assert runtime.cooperative_limit(1).blocks == 1024
    with pytest.raises(ql.LaunchError, match=r"of 1025 blocks of 1 threads.*at most 1024 "
                       r"such blocks"):
        mod["validity"].configure(1025, 1, cooperative=True)(poisoned(1025, np.int32))


def test_a_grid_sync_that_some_block_never_reaches_is_a_launch_error(mod):
    out = poisoned(4 * 32, np.int32)
    with pytest.raises(ql.LaunchError, match=r"grid\.sync\(\) in block \(0, 0, 0\) can never "
                       r"complete: 1 block of the grid waits at it and 3 have exited without "
                       r"reaching it"):
        mod["uneven"].configure(4, 32, cooperative=True)(out)


def test_a_failing_block_stops_the_waiting_ones(mod):
    out = poisoned(4 * 32, np.int32)
    with pytest.raises(ql.LaunchError, match=r"device-side assert failed: out\[0\] == 12345.*"
                       r"block \(1, 0, 0\), thread \(3, 0, 0\)"):
        mod["fails"].configure(4, 32, cooperative=True)(out)
    # and the module still launches
    out[:] = 0
    out[0] = 12345
    mod["fails"].configure(4, 32, cooperative=True)(out)
    assert (out == 1).all()


def test_grid_sync_against_syncthreads_is_a_deadlock(mod):
    out = poisoned(32, np.int32)
    with pytest.raises(ql.LaunchError) as info:
        mod["split"].configure(2, 32, cooperative=True)(out)
    msg = str(info.value)
    assert "deadlock in block" in msg and "threads 0-15 wait at grid.sync()" in msg
    assert "threads 16-31 wait at __syncthreads" in msg


def test_a_kernel_without_grid_sync_launches_cooperatively(mod, rng):
    n = 1000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    want = np.float32(3) * x + y
    mod["saxpy"].configure(8, 128, cooperative=True)(3.0, x, y, n)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)  # fma or not


def test_cooperative_launch_is_not_recorded_in_a_graph(mod):
    out = poisoned(64, np.int32)
    with pytest.raises(ql.LaunchError, match="cannot be recorded in a ql.graph"):
        with ql.graph(device=mod.device):
            mod["validity"].configure(1, 64, cooperative=True)(out)


def test_repeated_cooperative_launches(mod, rng):
    # each launch starts and ends a thread per block; nothing piles up
    for _ in range(30):
        x, mid, out, *_ = run_two_phase(mod["two_phase"], 8, 64, rng)
        np.testing.assert_array_equal(out, np.roll(x * np.float32(2) + 1, -64) - x)


def test_debug_build_launches_cooperatively(cpu, mod):
    dmod = ql.compile(SOURCE, device=cpu, debug=True)
    out = poisoned(128, np.int32)
    dmod["validity"].configure(2, 64, cooperative=True)(out)
    assert (out == 1).all()
    # k.launch stays the plain C path: cooperative only through configure
    with pytest.raises(TypeError):
        dmod["validity"].launch(2, 64, out, cooperative=True)
    with pytest.raises(TypeError):
        mod["validity"].launch(2, 64, out, cooperative=True)


FAULT_SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void crash(int *out, int *bad) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 2 && threadIdx.x == 5) bad[1 << 28] = 1;
    grid.sync();
    out[grid.thread_rank()] = 1;
}
"""


def test_a_fault_in_one_block_stops_the_waiting_ones(cpu):
    k = ql.compile(FAULT_SOURCE, device=cpu)["crash"]
    out = poisoned(4 * 32, np.int32)
    with pytest.raises(ql.LaunchError, match=r"invalid memory access: write to address 0x[0-9a-f]+ "
                       r"\(SIGSEGV\) in block \(2, 0, 0\), thread \(5, 0, 0\)"):
        k.configure(4, 32, cooperative=True)(out, out)
    k.configure(4, 32, cooperative=True)(out, np.zeros((1 << 28) + 1, np.int32))  # lazily zeroed
    assert (out == 1).all()

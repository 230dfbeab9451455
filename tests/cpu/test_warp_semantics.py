"""Warp functions on the CPU device, exactly as CUDA defines them, against a
small pure-Python model written from the CUDA C++ Programming Guide
("Warp Shuffle Functions", "Warp Vote Functions", "Warp Match Functions",
"Warp Reduce Functions", "Cooperative Groups"), then the bad input: masks
naming exited or missing lanes, deadlocks and failed device asserts, each a
LaunchError after which the process launches normally.

The model, lane by lane (lane = linear thread id % 32, warps of 32 in order
of the linear thread id, x fastest):

* shuffles: with base = lane & ~(width - 1),
  - __shfl_sync(src):       base + src mod width (always inside the segment);
  - __shfl_up_sync(d):      lane - d, or the own value if that is below base;
  - __shfl_down_sync(d):    lane + d, or the own value if that is past the segment;
  - __shfl_xor_sync(m):     lane ^ m, or the own value if that lies in a *later*
    segment (an earlier one may be read, the guide says so explicitly);
  reading a lane that is not in mask is undefined: a LaunchError (the cases
  that do are tested in test_warp_undefined.py; the model runs the others).
* __ballot_sync: bit i set iff lane i is in mask and its predicate is non-zero;
  __any_sync / __all_sync over the lanes of mask.
* __match_any_sync: the lanes of mask holding the same value (bitwise);
  __match_all_sync: mask if all lanes of mask agree (pred = 1), else 0 (pred = 0).
* __reduce_*_sync over the lanes of mask (add wraps modulo 2^32; min/max
  signed for int, unsigned for unsigned).
"""
import re
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// The lanes of the calling thread's warp that exist in this block.
__device__ unsigned lanes_of_my_warp() {
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const unsigned left = n - (t & ~31u);
    return left >= 32 ? 0xffffffffu : (1u << left) - 1u;
}

// Case c: the lanes of mask[c] (that exist) run shuffle kind[c] (0 idx,
// 1 up, 2 down, 3 xor) with arg[c] and width[c]; the others skip it.
template <typename T>
__global__ void shuffles(const T *in, T *out, const int *kind, const int *arg,
                         const int *width, const unsigned *mask, int ncase) {
    const int n = gridDim.x * blockDim.x;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x % 32, warp = lanes_of_my_warp();
    const T v = in[g];
    for (int c = 0; c < ncase; ++c) {
        const unsigned m = mask[c] & warp;
        if (m >> lane & 1u) {
            T r;
            switch (kind[c]) {
            case 0: r = __shfl_sync(m, v, arg[c], width[c]); break;
            case 1: r = __shfl_up_sync(m, v, (unsigned)arg[c], width[c]); break;
            case 2: r = __shfl_down_sync(m, v, (unsigned)arg[c], width[c]); break;
            default: r = __shfl_xor_sync(m, v, arg[c], width[c]); break;
            }
            out[c * n + g] = r;
        }
        __syncwarp(warp);
    }
}

// The default width (warpSize) and literal masks, as most code calls them.
extern "C" __global__ void shuffle_defaults(const float *in, float *out) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
    const float v = in[g];
    out[0 * n + g] = __shfl_sync(0xffffffff, v, 7);
    out[1 * n + g] = __shfl_up_sync(0xffffffff, v, 3);
    out[2 * n + g] = __shfl_down_sync(0xffffffff, v, 5);
    out[3 * n + g] = __shfl_xor_sync(0xffffffff, v, 19);
}

extern "C" __global__ void votes(const int *pred, unsigned *ballot, int *any, int *all,
                                 const unsigned *mask, int ncase) {
    const int n = gridDim.x * blockDim.x;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x % 32, warp = lanes_of_my_warp();
    for (int c = 0; c < ncase; ++c) {
        const unsigned m = mask[c] & warp;
        if (m >> lane & 1u) {
            const int p = pred[c * n + g];
            ballot[c * n + g] = __ballot_sync(m, p);
            any[c * n + g] = __any_sync(m, p);
            all[c * n + g] = __all_sync(m, p);
        }
        __syncwarp(warp);
    }
}

template <typename T>
__global__ void matches(const T *in, unsigned *any_out, unsigned *all_out, int *pred_out,
                        const unsigned *mask, int ncase) {
    const int n = gridDim.x * blockDim.x;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x % 32, warp = lanes_of_my_warp();
    for (int c = 0; c < ncase; ++c) {
        const unsigned m = mask[c] & warp;
        if (m >> lane & 1u) {
            const T v = in[c * n + g];
            any_out[c * n + g] = __match_any_sync(m, v);
            int pred = -7;
            all_out[c * n + g] = __match_all_sync(m, v, &pred);
            pred_out[c * n + g] = pred;
        }
        __syncwarp(warp);
    }
}

// out[(op * ncase + c) * n + g] for op = add, min, max.
template <typename T>
__global__ void reduce_arith(const T *in, T *out, const unsigned *mask, int ncase) {
    const int n = gridDim.x * blockDim.x;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x % 32, warp = lanes_of_my_warp();
    for (int c = 0; c < ncase; ++c) {
        const unsigned m = mask[c] & warp;
        if (m >> lane & 1u) {
            const T v = in[c * n + g];
            out[(0 * ncase + c) * n + g] = __reduce_add_sync(m, v);
            out[(1 * ncase + c) * n + g] = __reduce_min_sync(m, v);
            out[(2 * ncase + c) * n + g] = __reduce_max_sync(m, v);
        }
        __syncwarp(warp);
    }
}

// out[(op * ncase + c) * n + g] for op = and, or, xor.
extern "C" __global__ void reduce_bits(const unsigned *in, unsigned *out,
                                       const unsigned *mask, int ncase) {
    const int n = gridDim.x * blockDim.x;
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned lane = threadIdx.x % 32, warp = lanes_of_my_warp();
    for (int c = 0; c < ncase; ++c) {
        const unsigned m = mask[c] & warp;
        if (m >> lane & 1u) {
            const unsigned v = in[c * n + g];
            out[(0 * ncase + c) * n + g] = __reduce_and_sync(m, v);
            out[(1 * ncase + c) * n + g] = __reduce_or_sync(m, v);
            out[(2 * ncase + c) * n + g] = __reduce_xor_sync(m, v);
        }
        __syncwarp(warp);
    }
}

// __activemask() where the whole warp is converged, then in both arms of a
// divergent branch.
extern "C" __global__ void active(const int *p, unsigned *whole, unsigned *taken,
                                  unsigned *not_taken) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    whole[g] = __activemask();
    if (p[g]) {
        taken[g] = __activemask();
    } else {
        not_taken[g] = __activemask();
    }
}

// The lanes of mask write shared memory, __syncwarp(mask), then each reads
// what the next lane of mask (cyclically) wrote: a value written after the
// reader passed an incomplete __syncwarp would be stale.
extern "C" __global__ void syncwarp_exchange(const int *in, int *out, unsigned mask) {
    __shared__ int s[64];
    const unsigned lane = threadIdx.x % 32, w0 = threadIdx.x & ~31u;
    const unsigned m = mask & lanes_of_my_warp();
    if (m >> lane & 1u) {
        s[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
        __syncwarp(m);
        const unsigned above = lane == 31 ? 0u : m & ~((2u << lane) - 1u);
        const unsigned src = (unsigned)__ffs(above ? above : m) - 1u;
        int r = s[w0 + src];
        __syncwarp(m);
        s[threadIdx.x] = -1;    // overwritten only once every lane of m has read
        __syncwarp(m);
        out[blockIdx.x * blockDim.x + threadIdx.x] = r;
    }
}

// One row of K ints per thread, see tile_model() in the test.
template <unsigned N>
__global__ void tiles(const int *in, const int *pred, const int *arg, int *out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
    const unsigned t = block.thread_rank(), g = blockIdx.x * block.size() + t;
    const int v = in[g], p = pred[g];
    int *o = out + g * 16;
    o[0] = tile.thread_rank();
    o[1] = tile.size();
    o[2] = tile.meta_group_rank();
    o[3] = tile.meta_group_size();
    o[4] = tile.shfl(v, (int)((tile.thread_rank() * 3 + arg[0]) % N));
    o[5] = tile.shfl(v, arg[0] % N);
    o[6] = tile.shfl_down(v, arg[1]);
    o[7] = tile.shfl_up(v, arg[1]);
    o[8] = tile.shfl_xor(v, arg[2] % N);
    o[9] = tile.any(p);
    o[10] = tile.all(p);
    o[11] = (int)tile.ballot(p);
    o[12] = cg::reduce(tile, v, cg::plus<int>());
    o[13] = cg::reduce(tile, v, cg::greater<int>());
    tile.sync();
    o[14] = tile.num_threads();
    block.sync();
    o[15] = (int)block.size();
}

// The same tile operations where the block ends inside a tile.
template <unsigned N>
__global__ void partial_tile(const int *pred, int *out) {
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<N>(block);
    const unsigned t = block.thread_rank();
    const int p = pred[t];
    out[t * 5 + 0] = (int)tile.ballot(p);
    out[t * 5 + 1] = tile.any(p);
    out[t * 5 + 2] = tile.all(p);
    tile.sync();
    out[t * 5 + 3] = tile.thread_rank();
    out[t * 5 + 4] = tile.meta_group_rank();
}

// Threads past n return before the barriers; the ones left still pass
// both (exited threads release later barriers, as on the GPU).
extern "C" __global__ void early_exit_barrier(const int *x, int *out, int n) {
    __shared__ int s[256];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = x[i];
    __syncthreads();
    const int live = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
    const int r = s[live - 1 - threadIdx.x];
    __syncthreads();
    s[threadIdx.x] = 0;
    out[i] = r;
}

// this_thread_block() in a 3D block: rank, size and a block-wide reversal
// through shared memory across block.sync() and cg::sync().
extern "C" __global__ void block_group(const int *in, int *rank, int *size, int *rev) {
    __shared__ int s[1024];
    cg::thread_block block = cg::this_thread_block();
    const unsigned r = block.thread_rank(), n = block.size();
    const unsigned base = (blockIdx.x) * n;
    s[r] = in[base + r];
    block.sync();
    const int got = s[n - 1 - r];
    cg::sync(block);
    s[r] = 0;
    block.sync();
    rank[base + r] = (int)r;
    size[base + r] = (int)n;
    rev[base + r] = got;
}
"""

SHFL_TYPES = {
    "int": np.int32, "unsigned": np.uint32, "long long": np.int64,
    "unsigned long long": np.uint64, "long": np.int64, "float": np.float32,
    "double": np.float64, "__half": np.float16,
    "__half2": np.uint32,   # two halves, moved as one 32-bit value: compared bitwise
}
TILE_SIZES = (1, 2, 4, 8, 16, 32)
MATCH_TYPES = {"int": np.int32, "unsigned long long": np.uint64, "float": np.float32,
               "double": np.float64}


@pytest.fixture(scope="module")
def mod(cpu):
    exprs = ([f"shuffles<{t}>" for t in SHFL_TYPES] + [f"matches<{t}>" for t in MATCH_TYPES]
             + ["reduce_arith<int>", "reduce_arith<unsigned>"]
             + [f"tiles<{n}>" for n in TILE_SIZES] + ["partial_tile<32>", "partial_tile<16>"])
    return ql.compile(SOURCE, device=cpu, name_expressions=exprs)


# ----------------------------------------------------------------- the model
IDX, UP, DOWN, XOR = 0, 1, 2, 3
FULL = 0xFFFFFFFF


def warp_lanes(block):
    """Per thread of a 1D block: (lane, warp base, lanes that exist in its warp)."""
    t = np.arange(block)
    base = t & ~31
    exist = np.array([FULL if block - b >= 32 else (1 << (block - b)) - 1 for b in base],
                     dtype=np.int64)
    return t % 32, base, exist


def shfl_source(kind, lane, arg, width):
    """The lane a shuffle reads, per the guide (own lane when out of range)."""
    base = lane & ~(width - 1)
    if kind == IDX:
        return base + arg % width
    if kind == UP:
        s = lane - arg
        return s if s >= base else lane
    if kind == DOWN:
        s = lane + arg
        return s if s < base + width else lane
    s = lane ^ arg
    return s if s < base + width else lane   # earlier segments may be read


def in_mask(m, lane):
    return (m >> lane) & 1 == 1


def expected_shuffles(values, cases, grid, block):
    """(expected, checked, untouched) arrays of shape (ncase, n)."""
    n = grid * block
    lanes, bases, exist = warp_lanes(block)
    exp = np.zeros((len(cases), n), values.dtype)
    checked = np.zeros((len(cases), n), bool)
    untouched = np.zeros((len(cases), n), bool)
    for c, (kind, arg, width, mask) in enumerate(cases):
        for g in range(n):
            t = g % block
            lane, w0, m = lanes[t], g - lanes[t], mask & int(exist[t])
            if not in_mask(m, lane):
                untouched[c, g] = True
                continue
            src = shfl_source(kind, lane, arg, width)
            if src != lane and not in_mask(m, src):
                continue   # reading a lane that does not take part: undefined
            exp[c, g] = values[w0 + src]
            checked[c, g] = True
    return exp, checked, untouched


PARTIAL_MASKS = (0x55555555, 0xAAAAAAAA, 0x0000FFFF, 0xFFFF0000, 0x00000001, 0x80000000,
                 0x0F0F0F0F, 0x9E3779B9, 0x00FF00F0)


def shuffle_cases():
    cases = []
    for w in (1, 2, 4, 8, 16, 32):
        for a in sorted({0, 1, w - 1, w, w + 1, 31, 32, 45, -1}):
            cases.append((IDX, a, w, FULL))
        for a in sorted({0, 1, 2, w - 1, w, min(w + 1, 31), 16, 31}):
            cases.append((UP, a, w, FULL))
            cases.append((DOWN, a, w, FULL))
        for a in sorted({0, 1, w - 1, w, min(2 * w - 1, 31), 31}):
            cases.append((XOR, a, w, FULL))
    for m in PARTIAL_MASKS:
        for w in (32, 8, 2):
            cases += [(IDX, 4, w, m), (IDX, 1, w, m), (UP, 2, w, m), (DOWN, 1, w, m),
                      (DOWN, 2, w, m), (XOR, 2, w, m), (XOR, 1, w, m)]
    return cases


def reads_outside(case, block):
    """Whether some thread of a 1D block reads a lane outside its mask."""
    kind, arg, width, mask = case
    lanes, _, exist = warp_lanes(block)
    for t in range(block):
        m = mask & int(exist[t])
        if in_mask(m, lanes[t]) and not in_mask(m, shfl_source(kind, lanes[t], arg, width)):
            return True
    return False


def random_values(rng, dtype, n):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        v = rng.standard_normal(n) * 1000
        return v.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


# --------------------------------------------------------------- shuffles
@pytest.mark.parametrize("ctype", list(SHFL_TYPES))
@pytest.mark.parametrize("grid, block", [(2, 64), (1, 48)])
def test_shuffles_against_the_model(mod, rng, ctype, grid, block):
    dtype = SHFL_TYPES[ctype]
    cases = [c for c in shuffle_cases() if not reads_outside(c, block)]
    n = grid * block
    values = random_values(rng, dtype, n)
    kind, arg, width, mask = (np.array([c[i] for c in cases]) for i in range(4))
    out = poisoned((len(cases), n), dtype)
    mod[f"shuffles<{ctype}>"][grid, block](values, out, kind.astype(np.int32),
                                          arg.astype(np.int32), width.astype(np.int32),
                                          mask.astype(np.uint32), len(cases))
    exp, checked, untouched = expected_shuffles(values, cases, grid, block)
    ok = bits(out) == bits(exp)
    bad = np.argwhere(checked & ~ok)
    assert bad.size == 0, [
        (dict(zip(("kind", "arg", "width", "mask"), cases[c])), f"thread {g}",
         f"got {out[c, g]!r}", f"want {exp[c, g]!r}") for c, g in bad[:5]]
    assert np.all(bits(out)[untouched] == bits(poisoned(1, dtype))[0]), \
        "a lane outside the mask wrote a result"


def test_shuffle_default_width(mod, rng):
    n = 96
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned((4, n), np.float32)
    mod.shuffle_defaults[1, n](x, out)
    lane = np.arange(n) % 32
    w0 = np.arange(n) - lane
    np.testing.assert_array_equal(out[0], x[w0 + 7])
    np.testing.assert_array_equal(out[1], np.where(lane >= 3, x[np.arange(n) - 3], x))
    np.testing.assert_array_equal(out[2], np.where(lane + 5 < 32, x[(np.arange(n) + 5) % n], x))
    np.testing.assert_array_equal(out[3], x[w0 + (lane ^ 19)])


def test_shuffle_reduction_idioms(mod, rng):
    """The two reductions every CUDA text shows, built from the modelled
    cases: xor butterfly (all lanes get the sum) and shfl_down (lane 0 does)."""
    n = 64
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    cases = ([(XOR, 1 << k, 32, FULL) for k in range(5)])
    acc = x.copy()
    for kind, a, w, m in cases:
        out = poisoned((1, n), np.int32)
        mod["shuffles<int>"][1, n](acc, out, np.int32([kind]), np.int32([a]), np.int32([w]),
                                   np.uint32([m]), 1)
        acc = acc + out[0]
    sums = x.reshape(2, 32).sum(axis=1)
    np.testing.assert_array_equal(acc, np.repeat(sums, 32))


# ------------------------------------------------------------------ votes
VOTE_MASKS = (FULL,) + PARTIAL_MASKS


@pytest.mark.parametrize("grid, block", [(2, 64), (1, 48), (3, 33)])
def test_ballot_any_all(mod, rng, grid, block):
    n = grid * block
    densities = (0.0, 0.05, 0.5, 0.95, 1.0)
    cases = [(m, d) for m in VOTE_MASKS for d in densities]
    pred = np.zeros((len(cases), n), np.int32)
    for c, (_, d) in enumerate(cases):
        on = rng.random(n) < d
        pred[c] = np.where(on, rng.choice([1, -3, 7, 1 << 30], n), 0)
    masks = np.array([m for m, _ in cases], np.uint32)
    ballot = poisoned((len(cases), n), np.uint32)
    anyv = poisoned((len(cases), n), np.int32)
    allv = poisoned((len(cases), n), np.int32)
    mod.votes[grid, block](pred, ballot, anyv, allv, masks, len(cases))
    lanes, _, exist = warp_lanes(block)
    for c, (mask, _) in enumerate(cases):
        for g in range(n):
            t = g % block
            lane, m = lanes[t], mask & int(exist[t])
            w0 = g - lane
            if not in_mask(m, lane):
                assert ballot[c, g] == poisoned(1, np.uint32)[0]
                continue
            want = sum(1 << q for q in range(32) if in_mask(m, q) and pred[c, w0 + q] != 0)
            assert ballot[c, g] == want, (hex(mask), g, hex(ballot[c, g]), hex(want))
            assert bool(anyv[c, g]) == (want != 0)
            assert bool(allv[c, g]) == (want == m)


# ---------------------------------------------------------------- matches
@pytest.mark.parametrize("ctype", list(MATCH_TYPES))
def test_match_any_all(mod, rng, ctype):
    dtype = MATCH_TYPES[ctype]
    grid, block = 2, 48   # the second warp of each block has 16 lanes
    n = grid * block
    pools = (1, 2, 3, 7, 1000)
    cases = [(m, k) for m in (FULL, 0x55555555, 0x0000FFFF, 0x00000100, 0xF0F0F00F)
             for k in pools]
    vals = np.zeros((len(cases), n), dtype)
    for c, (_, k) in enumerate(cases):
        pool = random_values(rng, dtype, k)
        vals[c] = pool[rng.integers(0, k, n)]
    masks = np.array([m for m, _ in cases], np.uint32)
    any_out = poisoned((len(cases), n), np.uint32)
    all_out = poisoned((len(cases), n), np.uint32)
    pred_out = poisoned((len(cases), n), np.int32)
    mod[f"matches<{ctype}>"][grid, block](vals, any_out, all_out, pred_out, masks, len(cases))
    lanes, _, exist = warp_lanes(block)
    vb = bits(vals)
    for c, (mask, _) in enumerate(cases):
        for g in range(n):
            t = g % block
            lane, m = lanes[t], mask & int(exist[t])
            w0 = g - lane
            if not in_mask(m, lane):
                assert any_out[c, g] == poisoned(1, np.uint32)[0]
                continue
            same = sum(1 << q for q in range(32) if in_mask(m, q) and vb[c, w0 + q] == vb[c, g])
            assert any_out[c, g] == same, (hex(mask), g)
            all_same = same == m
            assert all_out[c, g] == (m if all_same else 0)
            assert pred_out[c, g] == int(all_same)


# ------------------------------------------------------------- reductions
REDUCE_MASKS = (FULL, 0x55555555, 0x0000FFFF, 0x80000001, 0x00000004, 0x9E3779B9)


@pytest.mark.parametrize("ctype, dtype", [("int", np.int32), ("unsigned", np.uint32)])
def test_reduce_add_min_max(mod, rng, ctype, dtype):
    grid, block = 2, 48
    n = grid * block
    info = np.iinfo(dtype)
    ncase = len(REDUCE_MASKS) * 2
    vals = np.zeros((ncase, n), dtype)
    masks = np.zeros(ncase, np.uint32)
    for c in range(ncase):
        masks[c] = REDUCE_MASKS[c // 2]
        if c % 2:   # full range: sums wrap around
            vals[c] = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        else:       # small values, negative ones for int
            vals[c] = rng.integers(-50 if ctype == "int" else 0, 50, n).astype(dtype)
    out = poisoned((3, ncase, n), dtype)
    mod[f"reduce_arith<{ctype}>"][grid, block](vals, out, masks, ncase)
    lanes, _, exist = warp_lanes(block)
    for c in range(ncase):
        for g in range(n):
            t = g % block
            lane, m = lanes[t], int(masks[c]) & int(exist[t])
            w0 = g - lane
            if not in_mask(m, lane):
                assert np.all(out[:, c, g] == info.max)   # poisoned: untouched
                continue
            group = [int(vals[c, w0 + q]) for q in range(32) if in_mask(m, q)]
            add = sum(group) % 2**32
            if ctype == "int" and add >= 2**31:
                add -= 2**32
            assert (int(out[0, c, g]), int(out[1, c, g]), int(out[2, c, g])) == \
                (add, min(group), max(group)), (hex(m), g)


def test_reduce_and_or_xor(mod, rng):
    grid, block = 2, 48
    n = grid * block
    ncase = len(REDUCE_MASKS) * 2
    vals = np.zeros((ncase, n), np.uint32)
    masks = np.zeros(ncase, np.uint32)
    for c in range(ncase):
        masks[c] = REDUCE_MASKS[c // 2]
        r = rng.integers(0, 2**32, n, dtype=np.uint32)
        vals[c] = r if c % 2 else (r | np.uint32(0xF0F00000))   # keep some common bits set
    out = poisoned((3, ncase, n), np.uint32)
    mod.reduce_bits[grid, block](vals, out, masks, ncase)
    lanes, _, exist = warp_lanes(block)
    for c in range(ncase):
        for g in range(n):
            t = g % block
            lane, m = lanes[t], int(masks[c]) & int(exist[t])
            w0 = g - lane
            if not in_mask(m, lane):
                continue
            group = [int(vals[c, w0 + q]) for q in range(32) if in_mask(m, q)]
            a, o, x = FULL, 0, 0
            for v in group:
                a, o, x = a & v, o | v, x ^ v
            assert (int(out[0, c, g]), int(out[1, c, g]), int(out[2, c, g])) == (a, o, x)


# -------------------------------------------- __activemask and __syncwarp
@pytest.mark.parametrize("block", [64, 48, 7])
def test_activemask_in_divergent_branches(mod, rng, block):
    grid = 2
    n = grid * block
    p = (rng.random(n) < 0.4).astype(np.int32)
    whole, taken, not_taken = (poisoned(n, np.uint32) for _ in range(3))
    mod.active[grid, block](p, whole, taken, not_taken)
    lanes, _, exist = warp_lanes(block)
    for g in range(n):
        t = g % block
        lane, e = lanes[t], int(exist[t])
        w0 = g - lane
        took = sum(1 << q for q in range(32) if in_mask(e, q) and p[w0 + q])
        assert whole[g] == e
        if p[g]:
            assert taken[g] == took, (g, hex(taken[g]), hex(took))
            assert not_taken[g] == poisoned(1, np.uint32)[0]
        else:
            assert not_taken[g] == e & ~took, (g, hex(not_taken[g]), hex(e & ~took))


@pytest.mark.parametrize("mask", [FULL, 0x55555555, 0x0000FFFF, 0x80000001, 0x00000010,
                                  0x9E3779B9])
@pytest.mark.parametrize("block", [64, 48])
def test_syncwarp_with_partial_masks(mod, rng, mask, block):
    grid = 3
    n = grid * block
    lanes, _, exist = warp_lanes(block)
    for _ in range(2):   # fresh values each time: stale shared memory would show
        x = rng.integers(0, 2**31 - 1, n).astype(np.int32)
        out = poisoned(n, np.int32)
        mod.syncwarp_exchange[grid, block](x, out, mask)
        for g in range(n):
            t = g % block
            lane, m = lanes[t], mask & int(exist[t])
            if not in_mask(m, lane):
                assert out[g] == np.iinfo(np.int32).max
                continue
            above = [q for q in range(lane + 1, 32) if in_mask(m, q)]
            src = above[0] if above else min(q for q in range(32) if in_mask(m, q))
            assert out[g] == x[g - lane + src]


# ---------------------------------------------------- cooperative groups
def tile_model(N, block, v, p, arg):
    """Expected rows of the `tiles` kernel for one block of 1D rank order."""
    rows = np.zeros((block, 16), np.int64)
    for t in range(block):
        tile, r = divmod(t, N)
        first = tile * N
        members = range(first, first + N)
        pv = [p[q] for q in members]
        ballot = sum(1 << i for i, q in enumerate(pv) if q)
        down = t + arg[1] if r + arg[1] < N else t
        up = t - arg[1] if r - arg[1] >= 0 else t
        rows[t] = [r, N, tile, block // N,
                   v[first + (r * 3 + arg[0]) % N], v[first + arg[0] % N],
                   v[down], v[up], v[first + (r ^ (arg[2] % N))],
                   int(any(pv)), int(all(pv)), ballot,
                   sum(v[q] for q in members), max(v[q] for q in members), N, block]
    return rows


@pytest.mark.parametrize("N", TILE_SIZES)
def test_tiled_partition(mod, rng, N):
    bx, by = 16, 4     # 2D block: ranks are linear, x fastest
    block, grid = bx * by, 2
    n = grid * block
    v = rng.integers(-10**6, 10**6, n).astype(np.int32)
    # predicates: per tile, sometimes all set, sometimes none, sometimes mixed
    p = np.zeros(n, np.int32)
    for first in range(0, n, N):
        mode = rng.integers(0, 3)
        p[first:first + N] = (1 if mode == 0 else 0) if mode < 2 else \
            (rng.random(N) < 0.5)
    for arg in ([1, 1, 1], [5, N - 1, 3], [N + 2, N, 2 * N - 1]):
        out = poisoned((n, 16), np.int32)
        mod[f"tiles<{N}>"][grid, (bx, by)](v, p, np.int32(arg), out)
        for b in range(grid):
            want = tile_model(N, block, v[b * block:(b + 1) * block],
                              p[b * block:(b + 1) * block], arg)
            got = out[b * block:(b + 1) * block].astype(np.int64)
            got[:, 11] = out[b * block:(b + 1) * block, 11].view(np.uint32)
            bad = np.argwhere(got != want)
            assert bad.size == 0, [(f"block {b} rank {t} field {f}", got[t, f], want[t, f])
                                   for t, f in bad[:5]]


@pytest.mark.parametrize("N, block", [(32, 48), (16, 40)])
def test_tile_in_a_partial_warp(mod, rng, N, block):
    """A tile the block ends in: its missing lanes are not active (as in
    CUDA); ballot/any/all/sync work over the lanes that exist."""
    p = (rng.random(block) < 0.5).astype(np.int32)
    out = poisoned((block, 5), np.int32)
    mod[f"partial_tile<{N}>"][1, block](p, out)
    for t in range(block):
        first = t // N * N
        members = range(first, min(first + N, block))
        ballot = sum(1 << (q - first) for q in members if p[q])
        assert list(out[t]) == [ballot, int(any(p[q] for q in members)),
                                int(all(p[q] for q in members)), t % N, t // N]


@pytest.mark.parametrize("block", [(4, 3, 2), (32, 1, 1), (5, 7, 3), (16, 16, 4)])
def test_this_thread_block(mod, rng, block):
    size = block[0] * block[1] * block[2]
    grid = 2
    x = rng.integers(-99999, 99999, grid * size).astype(np.int32)
    rank, sz, rev = (poisoned(grid * size, np.int32) for _ in range(3))
    mod.block_group[grid, block](x, rank, sz, rev)
    np.testing.assert_array_equal(rank, np.tile(np.arange(size), grid))
    np.testing.assert_array_equal(sz, np.full(grid * size, size))
    np.testing.assert_array_equal(rev, x.reshape(grid, size)[:, ::-1].ravel())


@pytest.mark.parametrize("n, block", [(1, 64), (100, 64), (129, 128), (200, 96)])
def test_exited_threads_release_barriers(mod, rng, n, block):
    grid = cdiv(n, block)
    x = rng.integers(-10**6, 10**6, n).astype(np.int32)
    out = poisoned(n, np.int32)
    mod.early_exit_barrier[grid, block](x, out, n)
    want = np.concatenate([x[b:b + block][::-1] for b in range(0, n, block)])
    np.testing.assert_array_equal(out, want)


def cdiv(a, b):
    return (a + b - 1) // b


# ------------------------------------------------------------- bad input
BAD_SOURCE = r"""
extern "C" __global__ void fine(const int *x, int *out) {
    __shared__ int s[256];
    s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[blockDim.x - 1 - threadIdx.x]
        + __shfl_xor_sync(0xffffffff, (int)threadIdx.x, 1);
}
// In block `bad`, lanes 16-31 of warp 0 return before the others' __syncwarp.
extern "C" __global__ void exited_lane(int *out, int bad) {
    if (blockIdx.x == bad && threadIdx.x >= 16 && threadIdx.x < 32) return;
    __syncwarp();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
// In block `bad`, thread 3 passes a mask without its own lane.
extern "C" __global__ void missing_self(int *out, int bad) {
    unsigned mask = 0xffffffffu;
    if (blockIdx.x == bad && threadIdx.x == 3) mask = 0x1u;
    out[blockIdx.x * blockDim.x + threadIdx.x] = __ballot_sync(mask, 1);
}
// A full mask in a block whose last warp is partial: names missing lanes.
extern "C" __global__ void full_mask(int *out) {
    out[threadIdx.x] = __any_sync(0xffffffffu, 1);
}
// Block (bx, by): lanes 0-15 of warp 0 wait at the barrier, lanes 16-31 at
// a __syncwarp() that needs lanes 0-15: neither can complete.
extern "C" __global__ void deadlock_half_warp(int *out, int bx, int by) {
    const bool bad = blockIdx.x == (unsigned)bx && blockIdx.y == (unsigned)by;
    if (bad && threadIdx.x < 16) __syncthreads();
    else __syncwarp();
    out[0] = 1;
}
// The classic bug: a full-mask shuffle in a divergent branch, a barrier
// after it. The lanes that skipped the shuffle wait at the barrier, the
// others wait for them at the shuffle.
extern "C" __global__ void deadlock_divergent_shfl(const float *x, float *out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (v > 0) v += __shfl_down_sync(0xffffffff, v, 1);
    __syncthreads();
    out[i] = v;
}
extern "C" __global__ void checked(const int *x, int *out) {
    __shared__ int s[128];
    s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    assert(s[threadIdx.x] >= 0);  // THE ASSERT
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def bad(cpu):
    return ql.compile(BAD_SOURCE, device=cpu)


def still_works(bad, rng):
    """A normal launch of the same module right after a failed one."""
    grid, block = 4, 64
    x = rng.integers(-1000, 1000, grid * block).astype(np.int32)
    out = poisoned(grid * block, np.int32)
    bad.fine[grid, block](x, out)
    t = np.arange(block)
    want = x.reshape(grid, block)[:, ::-1] + (t ^ 1)
    np.testing.assert_array_equal(out, want.ravel())


def test_mask_naming_an_exited_lane(bad, rng):
    with pytest.raises(ql.LaunchError) as info:
        bad.exited_lane[4, 64](np.zeros(256, np.int32), 2)
    msg = str(info.value)
    assert "kernel 'exited_lane'" in msg
    assert "__syncwarp" in msg and "0xffffffff" in msg, msg
    assert re.search(r"block \(2, 0, 0\), thread \(\d+, 0, 0\)", msg), msg
    assert "exited" in msg
    still_works(bad, rng)
    out = poisoned(256, np.int32)
    bad.exited_lane[4, 64](out, -1)   # no block exits early: fine
    assert np.all(out == 1)


def test_mask_without_the_calling_lane(bad, rng):
    with pytest.raises(ql.LaunchError) as info:
        bad.missing_self[3, 64](np.zeros(192, np.int32), 1)
    msg = str(info.value)
    assert "kernel 'missing_self'" in msg
    assert "__ballot_sync" in msg and "0x00000001" in msg, msg
    assert "block (1, 0, 0), thread (3, 0, 0)" in msg, msg
    assert "calling lane" in msg, msg
    still_works(bad, rng)
    out = poisoned(192, np.int32)
    bad.missing_self[3, 64](out, -1)
    assert np.all(out.view(np.uint32) == FULL)


def test_full_mask_in_a_partial_warp(bad, rng):
    with pytest.raises(ql.LaunchError, match=r"mask 0xffffffff in block \(0, 0, 0\), "
                       r"thread \(32, 0, 0\).*lane 16, which does not exist"):
        bad.full_mask[1, 48](np.zeros(48, np.int32))
    still_works(bad, rng)
    out = poisoned(64, np.int32)
    bad.full_mask[1, 64](out)
    assert np.all(out == 1)


def test_deadlock_half_warp(bad, rng):
    with pytest.raises(ql.LaunchError) as info:
        bad.deadlock_half_warp[(2, 3), 64](np.zeros(1, np.int32), 1, 2)
    msg = str(info.value)
    assert "kernel 'deadlock_half_warp'" in msg
    assert "deadlock in block (1, 2, 0)" in msg, msg
    # the waiting threads, and where they wait
    assert "0-15" in msg and "16-31" in msg, msg
    assert "__syncthreads" in msg and "__syncwarp" in msg, msg
    still_works(bad, rng)
    out = poisoned(1, np.int32)
    bad.deadlock_half_warp[(2, 3), 64](out, -1, -1)
    assert out[0] == 1


def test_deadlock_divergent_shuffle(bad, rng):
    grid, block = 5, 64
    x = np.abs(rng.standard_normal(grid * block)).astype(np.float32) + 1
    x[3 * block + 40] = -1.0     # block 3's second warp diverges
    with pytest.raises(ql.LaunchError) as info:
        bad.deadlock_divergent_shfl[grid, block](x, poisoned(grid * block, np.float32))
    msg = str(info.value)
    assert "kernel 'deadlock_divergent_shfl'" in msg
    assert "deadlock in block (3, 0, 0)" in msg, msg
    assert "__shfl_down_sync" in msg and "__syncthreads" in msg, msg
    still_works(bad, rng)
    x[3 * block + 40] = 2.0      # no divergence: the same kernel completes
    out = poisoned(grid * block, np.float32)
    bad.deadlock_divergent_shfl[grid, block](x, out)
    lane = np.arange(grid * block) % 32
    nxt = np.where(lane < 31, np.roll(x, -1), x)
    np.testing.assert_allclose(out, x + nxt, rtol=1e-6)


def test_failed_device_assert(bad, rng):
    grid, block = 4, 128
    x = rng.integers(0, 1000, grid * block).astype(np.int32)
    x[2 * block + 37] = -5
    line = BAD_SOURCE.splitlines().index(
        "    assert(s[threadIdx.x] >= 0);  // THE ASSERT") + 1
    with pytest.raises(ql.LaunchError) as info:
        bad.checked[grid, block](x, poisoned(grid * block, np.int32))
    msg = str(info.value)
    assert "kernel 'checked'" in msg
    assert "s[threadIdx.x] >= 0" in msg
    assert f"kernel.cu:{line}" in msg, msg
    assert "block (2, 0, 0)" in msg and "thread (37, 0, 0)" in msg, msg
    still_works(bad, rng)
    x[2 * block + 37] = 5
    out = poisoned(grid * block, np.int32)
    bad.checked[grid, block](x, out)
    np.testing.assert_array_equal(out, x)


def test_errors_back_to_back(bad, rng):
    """Several failures in a row, in different kernels, then normal work."""
    for _ in range(3):
        with pytest.raises(ql.LaunchError, match="deadlock"):
            bad.deadlock_half_warp[(2, 3), 64](np.zeros(1, np.int32), 0, 0)
        with pytest.raises(ql.LaunchError, match="exited"):
            bad.exited_lane[4, 64](np.zeros(256, np.int32), 0)
    still_works(bad, rng)


ASSERT_H_SCRIPT = r'''
import numpy as np, quicklaunch as ql
mod = ql.compile("""
#include <assert.h>
extern "C" __global__ void checked(const int *x) {
    __syncthreads();
    assert(x[threadIdx.x] >= 0);
}
""", device="cpu")
x = np.zeros(32, np.int32)
x[5] = -1
try:
    mod.checked[1, 32](x)
except ql.LaunchError as exc:
    print("LaunchError:", exc)
'''


def test_failed_assert_with_assert_h_included():
    """CUDA code often includes <assert.h> itself; run in a child process,
    since the failure mode is the death of the process."""
    proc = subprocess.run([sys.executable, "-c", ASSERT_H_SCRIPT], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"LaunchError: kernel 'checked' failed.*x\[threadIdx.x\] >= 0 at "
                     r"kernel.cu:5.*thread \(5, 0, 0\)", proc.stdout), proc.stdout

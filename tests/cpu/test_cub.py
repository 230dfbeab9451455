"""CUB's block collectives on the CPU device (the stand-ins in
backends/cpu/include/cub/): cub::BlockReduce (Sum, Reduce with an operator,
num_valid, items per thread; the three algorithms) and cub::BlockScan
(inclusive and exclusive sums and scans, block aggregates, items per thread,
a prefix callback over tiles) at block sizes 32, 96, 100, 128, 256 and 1024,
against NumPy on random inputs, outputs poisoned. Integer results are exact;
float sums equal a NumPy model of the documented order bit for bit and lie
within the error bound of that order. The sources also compile with NVRTC
(tests/nvrtc/test_corpus.py); warp collectives, load/store and radix sort are
in test_cub_warp.py and test_cub_sort.py."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SIZES = (32, 96, 100, 128, 256, 1024)
ALGOS = {"warp": "cub::BLOCK_REDUCE_WARP_REDUCTIONS", "raking": "cub::BLOCK_REDUCE_RAKING",
         "commutative": "cub::BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY"}
REDUCE_CASES = [(b, "warp") for b in SIZES] + [(b, a) for b in (100, 1024)
                                              for a in ("raking", "commutative")]
ITEMS = 4
GRID = 3

_REDUCE_HEAD = r"""
#include <cub/block/block_reduce.cuh>

struct MaxOp {
    __device__ int operator()(int a, int b) const { return a < b ? b : a; }
};

template <int B, cub::BlockReduceAlgorithm A>
__device__ void reduce_body(const int *xi, const float *xf, int *sums, float *fsums,
                            int *maxes, int *partial, int *items_sum, int n_valid) {
    typedef cub::BlockReduce<int, B, A> ReduceInt;
    typedef cub::BlockReduce<float, B, A> ReduceFloat;
    __shared__ typename ReduceInt::TempStorage ti;
    __shared__ typename ReduceFloat::TempStorage tf;
    const int g = blockIdx.x * B + threadIdx.x;
    const int s = ReduceInt(ti).Sum(xi[g]);
    const float f = ReduceFloat(tf).Sum(xf[g]);
    __syncthreads();
    const int m = ReduceInt(ti).Reduce(xi[g], MaxOp());
    __syncthreads();
    const int p = ReduceInt(ti).Sum(xi[g], n_valid);
    __syncthreads();
    int items[4];
    for (int i = 0; i < 4; i++) items[i] = xi[(blockIdx.x * B + threadIdx.x) * 4 + i];
    const int t = ReduceInt(ti).Sum(items);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = s;
        fsums[blockIdx.x] = f;
        maxes[blockIdx.x] = m;
        partial[blockIdx.x] = p;
        items_sum[blockIdx.x] = t;
    }
}
"""
_REDUCE_KERNEL = ("extern \"C\" __global__ void reduce_%d_%s(const int *xi, const float *xf, "
                  "int *sums, float *fsums, int *maxes, int *partial, int *items_sum, "
                  "int n_valid) {\n    reduce_body<%d, %s>(xi, xf, sums, fsums, maxes, partial, "
                  "items_sum, n_valid);\n}\n")
REDUCE_SOURCE = _REDUCE_HEAD + "".join(_REDUCE_KERNEL % (b, a, b, ALGOS[a])
                                       for b, a in REDUCE_CASES)

_SCAN_HEAD = r"""
#include <cub/block/block_scan.cuh>

struct MaxOp {
    __device__ int operator()(int a, int b) const { return a < b ? b : a; }
};

/* The running total of a scan over consecutive tiles (CUB's prefix callback). */
struct RunningTotal {
    int total;
    __device__ RunningTotal(int start) : total(start) {}
    __device__ int operator()(int block_aggregate) {
        const int old = total;
        total += block_aggregate;
        return old;
    }
};

template <int B>
__device__ void scan_body(const int *x, const float *xf, int *inc, int *exc, int *aggs,
                          int *maxscan, int *maxexc, float *finc, int *inc4, int *exc4,
                          int *tiles) {
    typedef cub::BlockScan<int, B> ScanInt;
    typedef cub::BlockScan<float, B, cub::BLOCK_SCAN_WARP_SCANS> ScanFloat;
    __shared__ typename ScanInt::TempStorage t;
    __shared__ typename ScanFloat::TempStorage tf;
    const int g = blockIdx.x * B + threadIdx.x;
    int a, b, agg_in, agg_ex;
    ScanInt(t).InclusiveSum(x[g], a, agg_in);
    __syncthreads();
    ScanInt(t).ExclusiveSum(x[g], b, agg_ex);
    __syncthreads();
    inc[g] = a;
    exc[g] = b;
    int m, e;
    ScanInt(t).InclusiveScan(x[g], m, MaxOp());
    __syncthreads();
    ScanInt(t).ExclusiveScan(x[g], e, -1000, MaxOp());
    __syncthreads();
    maxscan[g] = m;
    maxexc[g] = e;
    float f;
    ScanFloat(tf).InclusiveSum(xf[g], f);
    finc[g] = f;
    int items[4], in4[4], ex4[4], agg4;
    for (int i = 0; i < 4; i++) items[i] = x[g * 4 + i];
    ScanInt(t).InclusiveSum(items, in4);
    __syncthreads();
    ScanInt(t).ExclusiveSum(items, ex4, agg4);
    __syncthreads();
    for (int i = 0; i < 4; i++) {
        inc4[g * 4 + i] = in4[i];
        exc4[g * 4 + i] = ex4[i];
    }
    RunningTotal running(5);
    for (int tile = 0; tile < 3; tile++) {
        const int at = (blockIdx.x * 3 + tile) * B + threadIdx.x;
        int out;
        ScanInt(t).ExclusiveSum(x[at], out, running);
        __syncthreads();
        tiles[at] = out;
    }
    if (threadIdx.x == 0) {
        aggs[3 * blockIdx.x] = agg_in;
        aggs[3 * blockIdx.x + 1] = agg_ex;
        aggs[3 * blockIdx.x + 2] = agg4;
    }
}
"""
_SCAN_KERNEL = ("extern \"C\" __global__ void scan_%d(const int *x, const float *xf, int *inc, "
                "int *exc, int *aggs, int *maxscan, int *maxexc, float *finc, int *inc4, "
                "int *exc4, int *tiles) {\n    scan_body<%d>(x, xf, inc, exc, aggs, maxscan, "
                "maxexc, finc, inc4, exc4, tiles);\n}\n")
SCAN_SOURCE = _SCAN_HEAD + "".join(_SCAN_KERNEL % (b, b) for b in SIZES)


_AHEAD = {"reduce_mod": "REDUCE_SOURCE", "scan_mod": "SCAN_SOURCE",
     "test_typedef_kernel_stays_on_fibers": "TYPEDEF_SOURCE",
     "test_multidimensional_blocks": "DIMS_SOURCE", "test_argmax": "ARGMAX_SOURCE"}


def prefetch_job(item):
    """The source a selected test compiles (tests/prefetch.py)."""
    from tests.prefetch import named
    return named(item, _AHEAD)


def compile_ahead(name):
    """One prefetch job (in the worker process): a source's plain CPU build."""
    ql.compile(globals()[name], device="cpu")


@pytest.fixture(scope="module", autouse=True)
def _compiled_ahead(request):
    """This module's sources compiled ahead on both cores (tests/prefetch.py);
    the tests then read the compile cache."""
    from tests.prefetch import ahead
    ahead(request)

@pytest.fixture(scope="module")
def reduce_mod(cpu):
    return ql.compile(REDUCE_SOURCE, device=cpu)


@pytest.fixture(scope="module")
def scan_mod(cpu):
    return ql.compile(SCAN_SOURCE, device=cpu)


def _tree(v):
    """CUB's shuffle-tree order (rank i takes rank i + s for s = 1, 2, 4...)."""
    v = list(v)
    s = 1
    while s < len(v):
        for i in range(0, len(v) - s, 2 * s):
            v[i] = v[i] + v[i + s]
        s *= 2
    return v[0]


def _model(x, algo):
    """A block's float32 sum in the documented order of `algo`."""
    x = [np.float32(e) for e in x]
    n = len(x)
    if algo == "warp":
        total = _tree(x[:32])
        for w in range(32, n, 32):
            total = np.float32(total + _tree(x[w:w + 32]))
        return total
    if n <= 32:
        return _tree(x)
    seg = (n + 31) // 32
    parts = []
    for r in range(0, n, seg):
        acc = x[r]
        for e in x[r + 1:r + seg]:
            acc = np.float32(acc + e)
        parts.append(acc)
    return _tree(parts)


def _depth(n, algo):
    """The most additions any input goes through in `algo`'s order."""
    if algo == "warp":
        return int(np.ceil(np.log2(min(n, 32)))) + (n + 31) // 32 - 1
    seg = 1 if n <= 32 else (n + 31) // 32
    return seg - 1 + int(np.ceil(np.log2(max(2, -(-n // seg)))))


@pytest.mark.parametrize("block,algo", REDUCE_CASES)
def test_block_reduce(reduce_mod, block, algo):
    rng = np.random.default_rng(block * 7 + len(algo))
    xi = rng.integers(-1000, 1000, GRID * block * ITEMS).astype(np.int32)
    xf = rng.standard_normal(GRID * block).astype(np.float32)
    outs = [poisoned(GRID, np.int32), poisoned(GRID, np.float32)] + \
        [poisoned(GRID, np.int32) for _ in range(3)]
    n_valid = block - 5 if block > 5 else 1
    reduce_mod[f"reduce_{block}_{algo}"][GRID, block](xi, xf, *outs, n_valid)
    sums, fsums, maxes, partial, items = outs
    blocks = xi[:GRID * block].reshape(GRID, block)
    np.testing.assert_array_equal(sums, blocks.sum(1))
    np.testing.assert_array_equal(maxes, blocks.max(1))
    np.testing.assert_array_equal(partial, blocks[:, :n_valid].sum(1))
    np.testing.assert_array_equal(items, xi.reshape(GRID, block * ITEMS).sum(1))
    fb = xf.reshape(GRID, block)
    exact = fb.astype(np.float64).sum(1)
    bound = _depth(block, algo) * np.finfo(np.float32).eps * np.abs(fb).astype(np.float64).sum(1)
    assert np.all(np.abs(fsums - exact) <= bound), (fsums, exact, bound)
    np.testing.assert_array_equal(fsums, [_model(row, algo) for row in fb])


@pytest.mark.parametrize("block", SIZES)
def test_block_scan(scan_mod, block):
    rng = np.random.default_rng(block)
    x = rng.integers(-50, 100, GRID * ITEMS * block).astype(np.int32)
    xf = rng.standard_normal(GRID * block).astype(np.float32)
    n = GRID * block
    inc, exc, maxscan, maxexc = (poisoned(n, np.int32) for _ in range(4))
    aggs = poisoned(3 * GRID, np.int32)
    finc = poisoned(n, np.float32)
    inc4, exc4 = poisoned(n * ITEMS, np.int32), poisoned(n * ITEMS, np.int32)
    tiles = poisoned(GRID * 3 * block, np.int32)
    scan_mod[f"scan_{block}"][GRID, block](x, xf, inc, exc, aggs, maxscan, maxexc, finc,
                                           inc4, exc4, tiles)
    rows = x[:n].reshape(GRID, block)
    np.testing.assert_array_equal(inc.reshape(GRID, block), np.cumsum(rows, 1))
    np.testing.assert_array_equal(exc.reshape(GRID, block), np.cumsum(rows, 1) - rows)
    np.testing.assert_array_equal(maxscan.reshape(GRID, block), np.maximum.accumulate(rows, 1))
    ex_max = np.maximum.accumulate(np.concatenate([np.full((GRID, 1), -1000), rows[:, :-1]], 1), 1)
    np.testing.assert_array_equal(maxexc.reshape(GRID, block), ex_max)
    # floats: thread 0 scans left to right, as np.add.accumulate does in float32
    np.testing.assert_array_equal(finc.reshape(GRID, block),
                                  np.add.accumulate(xf.reshape(GRID, block), 1,
                                                    dtype=np.float32))
    items = x[:n * ITEMS].reshape(GRID, block * ITEMS)
    np.testing.assert_array_equal(inc4.reshape(GRID, -1), np.cumsum(items, 1))
    np.testing.assert_array_equal(exc4.reshape(GRID, -1), np.cumsum(items, 1) - items)
    agg = aggs.reshape(GRID, 3)
    np.testing.assert_array_equal(agg[:, 0], rows.sum(1))
    np.testing.assert_array_equal(agg[:, 1], rows.sum(1))
    np.testing.assert_array_equal(agg[:, 2], items.sum(1))
    per_block = x[:GRID * 3 * block].reshape(GRID, 3 * block)
    np.testing.assert_array_equal(tiles.reshape(GRID, -1), 5 + np.cumsum(per_block, 1) - per_block)


def test_block_size_mismatch_is_a_launch_error(reduce_mod):
    x = np.ones(4096, np.int32)
    xf = np.ones(4096, np.float32)
    outs = [poisoned(4, np.int32), poisoned(4, np.float32)] + [poisoned(4, np.int32)] * 3
    with pytest.raises(ql.LaunchError, match=r"cub::BlockReduce in block \(0, 0, 0\).*declared "
                                             r"for 128 threads but the block has 64"):
        reduce_mod["reduce_128_warp"][1, 64](x, xf, *outs, 10)


# A file-scope typedef and the kernel's own barrier: BlockReduce's calls are
# lowered to the library's two halves around its barrier
# (backends/cpu/fission_cub.py), so the kernel runs as fission (an early
# pass failed at the library's barrier as a thread loop; tests/cpu/
# test_fission_corpus.py compares it with fibers bit for bit).
TYPEDEF_SOURCE = r"""
#include <cub/block/block_reduce.cuh>
typedef cub::BlockReduce<int, 64> Reduce64;

extern "C" __global__ void twice(const int *x, int *out) {
    __shared__ Reduce64::TempStorage temp;
    const int v = x[blockIdx.x * 64 + threadIdx.x];
    const int a = Reduce64(temp).Sum(v);
    __syncthreads();
    const int b = Reduce64(temp).Sum(v * v);
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = a;
        out[2 * blockIdx.x + 1] = b;
    }
}
"""


def test_typedef_kernel_runs_as_fission(cpu):
    mod = ql.compile(TYPEDEF_SOURCE, device=cpu)
    assert mod.twice.tier == "fission", mod.twice.attributes["tier_reason"]
    assert "2 CUB collective(s) lowered" in mod.twice.attributes["tier_reason"]
    rng = np.random.default_rng(64)
    x = rng.integers(-30, 30, 64 * GRID).astype(np.int32)
    out = poisoned(2 * GRID, np.int32)
    mod.twice[GRID, 64](x, out)
    rows = x.reshape(GRID, 64).astype(np.int64)
    want = np.stack([rows.sum(1), (rows ** 2).sum(1)], 1)
    np.testing.assert_array_equal(out.reshape(GRID, 2), want)


# Blocks of two and three dimensions (CUB's row-major thread rank), and the
# default constructors, which use storage of the primitive's own.
DIMS_SOURCE = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

extern "C" __global__ void dims_2d(const int *x, int *sums, int *scans) {
    typedef cub::BlockReduce<int, 16, cub::BLOCK_REDUCE_WARP_REDUCTIONS, 8> Reduce;
    typedef cub::BlockScan<int, 16, cub::BLOCK_SCAN_RAKING, 8> Scan;
    const int rank = threadIdx.y * 16 + threadIdx.x;
    const int g = blockIdx.x * 128 + rank;
    const int s = Reduce().Sum(x[g]);
    if (rank == 0) sums[blockIdx.x] = s;
    int out;
    Scan().InclusiveSum(x[g], out);
    scans[g] = out;
}

extern "C" __global__ void dims_3d(const int *x, int *sums, int *scans) {
    typedef cub::BlockReduce<int, 8, cub::BLOCK_REDUCE_RAKING, 4, 2> Reduce;
    typedef cub::BlockScan<int, 8, cub::BLOCK_SCAN_WARP_SCANS, 4, 2> Scan;
    __shared__ typename Reduce::TempStorage rt;
    __shared__ typename Scan::TempStorage st;
    const int rank = (threadIdx.z * 4 + threadIdx.y) * 8 + threadIdx.x;
    const int g = blockIdx.x * 64 + rank;
    const int s = Reduce(rt).Sum(x[g]);
    if (rank == 0) sums[blockIdx.x] = s;
    int out;
    Scan(st).ExclusiveSum(x[g], out);
    scans[g] = out;
}
"""


@pytest.mark.parametrize("kernel,block,threads", [("dims_2d", (16, 8), 128),
                                                  ("dims_3d", (8, 4, 2), 64)])
def test_multidimensional_blocks(cpu, kernel, block, threads):
    mod = ql.compile(DIMS_SOURCE, device=cpu)
    rng = np.random.default_rng(threads)
    x = rng.integers(-99, 99, GRID * threads).astype(np.int32)
    sums, scans = poisoned(GRID, np.int32), poisoned(GRID * threads, np.int32)
    mod[kernel][GRID, block](x, sums, scans)
    rows = x.reshape(GRID, threads)
    np.testing.assert_array_equal(sums, rows.sum(1))
    want = np.cumsum(rows, 1) - (rows if kernel == "dims_3d" else 0)
    np.testing.assert_array_equal(scans.reshape(GRID, threads), want)


# Arg-reductions over cub::KeyValuePair (the first index of the extreme value).
ARGMAX_SOURCE = r"""
#include <cub/block/block_reduce.cuh>

extern "C" __global__ void argmax(const float *x, int *where, float *best, int *where_min) {
    typedef cub::KeyValuePair<int, float> Pair;
    typedef cub::BlockReduce<Pair, 96> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    const int g = blockIdx.x * 96 + threadIdx.x;
    const Pair mine(threadIdx.x, x[g]);
    const Pair top = Reduce(temp).Reduce(mine, cub::ArgMax());
    __syncthreads();
    const Pair low = Reduce(temp).Reduce(mine, cub::ArgMin());
    if (threadIdx.x == 0) {
        where[blockIdx.x] = top.key;
        best[blockIdx.x] = top.value;
        where_min[blockIdx.x] = low.key;
    }
}
"""


def test_argmax(cpu):
    mod = ql.compile(ARGMAX_SOURCE, device=cpu)
    rng = np.random.default_rng(96)
    x = rng.integers(-5, 5, GRID * 96).astype(np.float32)   # ties: the first index wins
    where, best, low = poisoned(GRID, np.int32), poisoned(GRID, np.float32), \
        poisoned(GRID, np.int32)
    mod.argmax[GRID, 96](x, where, best, low)
    rows = x.reshape(GRID, 96)
    np.testing.assert_array_equal(where, rows.argmax(1))
    np.testing.assert_array_equal(best, rows.max(1))
    np.testing.assert_array_equal(low, rows.argmin(1))

"""CUB's warp collectives and block loads/stores on the CPU device (the
stand-ins in backends/cpu/include/cub/): cub::WarpReduce and cub::WarpScan
over logical warps of 32, 16 and 4 lanes (sums, an operator, valid_items,
aggregates, initial values, Broadcast), and cub::BlockLoad/cub::BlockStore in
every algorithm, guarded and not, against NumPy on random inputs, outputs
poisoned. The sources also compile with NVRTC (tests/nvrtc/test_corpus.py)."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

LANES = (32, 16, 4)
WARP_BLOCKS = (32, 128)
GRID = 2

_WARP_HEAD = r"""
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>

struct MinOp {
    __device__ int operator()(int a, int b) const { return b < a ? b : a; }
};

template <int L, int B>
__device__ void warp_body(const int *x, const float *xf, int *red, float *fred, int *mins,
                          int *partial, int *inc, int *exc, int *aggs, int *seeded,
                          int *bcast) {
    typedef cub::WarpReduce<int, L> Reduce;
    typedef cub::WarpReduce<float, L> ReduceF;
    typedef cub::WarpScan<int, L> Scan;
    __shared__ typename Reduce::TempStorage tr[B / L];
    __shared__ typename ReduceF::TempStorage tf[B / L];
    __shared__ typename Scan::TempStorage ts[B / L];
    const int w = threadIdx.x / L;
    const int g = blockIdx.x * B + threadIdx.x;
    const int v = x[g];
    red[g] = Reduce(tr[w]).Sum(v);
    fred[g] = ReduceF(tf[w]).Sum(xf[g]);
    mins[g] = Reduce(tr[w]).Reduce(v, MinOp());
    partial[g] = Reduce(tr[w]).Sum(v, L - 1);
    int a, b, agg;
    Scan(ts[w]).InclusiveSum(v, a);
    Scan(ts[w]).ExclusiveSum(v, b, agg);
    inc[g] = a;
    exc[g] = b;
    aggs[g] = agg;
    int e;
    Scan(ts[w]).ExclusiveScan(v, e, 7, MinOp());
    seeded[g] = e;
    bcast[g] = Scan(ts[w]).Broadcast(v, L - 1);
}
"""
_WARP_KERNEL = ("extern \"C\" __global__ void warp_%d_%d(const int *x, const float *xf, int *red, "
                "float *fred, int *mins, int *partial, int *inc, int *exc, int *aggs, "
                "int *seeded, int *bcast) {\n    warp_body<%d, %d>(x, xf, red, fred, mins, "
                "partial, inc, exc, aggs, seeded, bcast);\n}\n")
WARP_SOURCE = _WARP_HEAD + "".join(_WARP_KERNEL % (l, b, l, b) for l in LANES
                                   for b in WARP_BLOCKS)

LOADS = ("DIRECT", "STRIPED", "VECTORIZE", "TRANSPOSE", "WARP_TRANSPOSE",
         "WARP_TRANSPOSE_TIMESLICED")
LS_THREADS, LS_ITEMS = 64, 3

_LOADSTORE_HEAD = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>

/* Loads with algorithm L into items, writes them as they lie (item i of thread
 * t to raw[t*N + i]); stores raw's blocked items back with algorithm S. Then
 * the guarded forms: a load of valid elements with -1 for the others, and a
 * store of valid elements. */
template <int B, int N, cub::BlockLoadAlgorithm L, cub::BlockStoreAlgorithm S>
__device__ void load_store(const int *in, int *raw, int *out, int *guarded_raw,
                           int *guarded_out, int valid) {
    typedef cub::BlockLoad<int, B, N, L> Load;
    typedef cub::BlockStore<int, B, N, S> Store;
    __shared__ typename Load::TempStorage tl;
    __shared__ typename Store::TempStorage tst;
    const int base = blockIdx.x * B * N;
    int items[N];
    Load(tl).Load(in + base, items);
    for (int i = 0; i < N; i++) raw[base + threadIdx.x * N + i] = items[i];
    for (int i = 0; i < N; i++) items[i] = in[base + threadIdx.x * N + i] * 3 + 1;
    Store(tst).Store(out + base, items);
    __syncthreads();
    int g[N];
    Load(tl).Load(in + base, g, valid, -1);
    for (int i = 0; i < N; i++) guarded_raw[base + threadIdx.x * N + i] = g[i];
    for (int i = 0; i < N; i++) g[i] = in[base + threadIdx.x * N + i] * 5 - 2;
    __syncthreads();
    Store(tst).Store(guarded_out + base, g, valid);
}
"""
_LS_KERNEL = ("extern \"C\" __global__ void ls_%s(const int *in, int *raw, int *out, "
              "int *guarded_raw, int *guarded_out, int valid) {\n    load_store<%d, %d, "
              "cub::BLOCK_LOAD_%s, cub::BLOCK_STORE_%s>(in, raw, out, guarded_raw, "
              "guarded_out, valid);\n}\n")
LOADSTORE_SOURCE = _LOADSTORE_HEAD + "".join(_LS_KERNEL % (a.lower(), LS_THREADS, LS_ITEMS, a, a)
                                             for a in LOADS)


_AHEAD = {"warp_mod": "WARP_SOURCE", "ls_mod": "LOADSTORE_SOURCE",
     "test_block_exchange": "EXCHANGE_SOURCE"}


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
def warp_mod(cpu):
    return ql.compile(WARP_SOURCE, device=cpu)


@pytest.fixture(scope="module")
def ls_mod(cpu):
    return ql.compile(LOADSTORE_SOURCE, device=cpu)


def _tree(v):
    v = list(v)
    s = 1
    while s < len(v):
        for i in range(0, len(v) - s, 2 * s):
            v[i] = np.float32(v[i] + v[i + s])
        s *= 2
    return v[0]


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("block", WARP_BLOCKS)
def test_warp_collectives(warp_mod, lanes, block):
    rng = np.random.default_rng(lanes * 1000 + block)
    n = GRID * block
    x = rng.integers(-100, 100, n).astype(np.int32)
    xf = rng.standard_normal(n).astype(np.float32)
    outs = [poisoned(n, np.int32), poisoned(n, np.float32)] + [poisoned(n, np.int32)
                                                              for _ in range(7)]
    warp_mod[f"warp_{lanes}_{block}"][GRID, block](x, xf, *outs)
    red, fred, mins, partial, inc, exc, aggs, seeded, bcast = (o.reshape(-1, lanes) for o in outs)
    w = x.reshape(-1, lanes)
    # reductions: valid in lane 0 of each logical warp
    np.testing.assert_array_equal(red[:, 0], w.sum(1))
    np.testing.assert_array_equal(mins[:, 0], w.min(1))
    np.testing.assert_array_equal(partial[:, 0], w[:, :lanes - 1].sum(1))
    wf = xf.reshape(-1, lanes)
    np.testing.assert_array_equal(fred[:, 0], [_tree(r) for r in wf])
    exact = wf.astype(np.float64).sum(1)
    bound = np.log2(lanes) * np.finfo(np.float32).eps * np.abs(wf).astype(np.float64).sum(1)
    assert np.all(np.abs(fred[:, 0] - exact) <= bound)
    # scans: every lane
    np.testing.assert_array_equal(inc, np.cumsum(w, 1))
    np.testing.assert_array_equal(exc, np.cumsum(w, 1) - w)
    np.testing.assert_array_equal(aggs, np.repeat(w.sum(1)[:, None], lanes, 1))
    seed = np.minimum.accumulate(np.concatenate([np.full((w.shape[0], 1), 7), w[:, :-1]], 1), 1)
    np.testing.assert_array_equal(seeded, seed)
    np.testing.assert_array_equal(bcast, np.repeat(w[:, -1:], lanes, 1))


def _blocked_view(a):
    return a.reshape(GRID, LS_THREADS, LS_ITEMS)


@pytest.mark.parametrize("algo", LOADS)
def test_block_load_store(ls_mod, algo):
    rng = np.random.default_rng(len(algo))
    n = GRID * LS_THREADS * LS_ITEMS
    x = rng.integers(-10000, 10000, n).astype(np.int32)
    raw, out, graw, gout = (poisoned(n, np.int32) for _ in range(4))
    valid = LS_THREADS * LS_ITEMS - 37
    gout[:] = 123456
    ls_mod[f"ls_{algo.lower()}"][GRID, LS_THREADS](x, raw, out, graw, gout, valid)
    blocks = x.reshape(GRID, LS_THREADS * LS_ITEMS)
    element = np.arange(LS_THREADS * LS_ITEMS)
    if algo == "STRIPED":     # item i of thread t is element i*threads + t
        element = element.reshape(LS_ITEMS, LS_THREADS).T.reshape(-1)
    # (every other algorithm hands out blocked items: item i of thread t is t*N + i)
    want = blocks[:, element]
    np.testing.assert_array_equal(raw.reshape(GRID, -1), want)
    np.testing.assert_array_equal(graw.reshape(GRID, -1), np.where(element < valid, want, -1))
    mask = np.arange(LS_THREADS * LS_ITEMS) < valid
    # stores: raw's blocked items written out by the algorithm
    items = blocks * 3 + 1
    if algo == "STRIPED":     # the items are taken as striped: element i*threads + t
        stored = items.reshape(GRID, LS_THREADS, LS_ITEMS).transpose(0, 2, 1).reshape(GRID, -1)
    else:
        stored = items
    np.testing.assert_array_equal(out.reshape(GRID, -1), stored)
    gitems = blocks * 5 - 2
    if algo == "STRIPED":
        gitems = gitems.reshape(GRID, LS_THREADS, LS_ITEMS).transpose(0, 2, 1).reshape(GRID, -1)
    np.testing.assert_array_equal(gout.reshape(GRID, -1), np.where(mask, gitems, 123456))


EX_THREADS, EX_ITEMS = 64, 3

# cub::BlockExchange between the arrangements, scatters by rank, and loads
# through cub::CacheModifiedInputIterator and cub::ThreadLoad/ThreadStore.
EXCHANGE_SOURCE = r"""
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_load.cuh>
#include <cub/iterator/cache_modified_input_iterator.cuh>
#include <cub/thread/thread_load.cuh>
#include <cub/thread/thread_store.cuh>

extern "C" __global__ void exchanges(const int *in, int *to_striped, int *to_blocked,
                                     int *to_warp, int *reversed, int *through, int *copied) {
    typedef cub::BlockExchange<int, 64, 3> Exchange;
    __shared__ typename Exchange::TempStorage temp;
    const int base = blockIdx.x * 64 * 3;
    const int t = threadIdx.x;
    int items[3], out[3];
    cub::LoadDirectBlocked(t, in + base, items);
    Exchange(temp).BlockedToStriped(items, out);
    __syncthreads();
    for (int i = 0; i < 3; i++) to_striped[base + t * 3 + i] = out[i];
    cub::LoadDirectStriped<64>(t, in + base, items);
    Exchange(temp).StripedToBlocked(items);
    __syncthreads();
    for (int i = 0; i < 3; i++) to_blocked[base + t * 3 + i] = items[i];
    cub::LoadDirectBlocked(t, in + base, items);
    Exchange(temp).BlockedToWarpStriped(items);
    __syncthreads();
    for (int i = 0; i < 3; i++) to_warp[base + t * 3 + i] = items[i];
    int ranks[3];
    cub::LoadDirectBlocked(t, in + base, items);
    for (int i = 0; i < 3; i++) ranks[i] = 64 * 3 - 1 - (t * 3 + i);
    Exchange(temp).ScatterToBlocked(items, ranks);
    for (int i = 0; i < 3; i++) reversed[base + t * 3 + i] = items[i];
    cub::CacheModifiedInputIterator<cub::LOAD_LDG, int> it(in + base);
    cub::LoadDirectBlocked(t, it, items);
    for (int i = 0; i < 3; i++) through[base + t * 3 + i] = items[i] + it[t];
    cub::ThreadStore<cub::STORE_CG>(copied + base + t,
                                    cub::ThreadLoad<cub::LOAD_LDG>(in + base + t));
}
"""


def test_block_exchange(cpu):
    mod = ql.compile(EXCHANGE_SOURCE, device=cpu)
    rng = np.random.default_rng(11)
    per = EX_THREADS * EX_ITEMS
    x = rng.integers(-1000, 1000, GRID * per).astype(np.int32)
    outs = [poisoned(GRID * per, np.int32) for _ in range(6)]
    mod.exchanges[GRID, EX_THREADS](x, *outs)
    to_striped, to_blocked, to_warp, reversed_, through, copied = \
        (o.reshape(GRID, EX_THREADS, EX_ITEMS) for o in outs)
    blocks = x.reshape(GRID, per)
    t = np.arange(EX_THREADS)[:, None]
    i = np.arange(EX_ITEMS)[None, :]
    # item i of thread t after the exchange holds element ...
    np.testing.assert_array_equal(to_striped, blocks[:, i * EX_THREADS + t])
    np.testing.assert_array_equal(to_blocked, blocks[:, t * EX_ITEMS + i])
    warp_striped = (t // 32) * 32 * EX_ITEMS + i * 32 + t % 32
    np.testing.assert_array_equal(to_warp, blocks[:, warp_striped])
    np.testing.assert_array_equal(reversed_, blocks[:, per - 1 - (t * EX_ITEMS + i)])
    np.testing.assert_array_equal(through, blocks[:, t * EX_ITEMS + i] + blocks[:, t])
    np.testing.assert_array_equal(copied.reshape(GRID, per)[:, :EX_THREADS],
                                  blocks[:, :EX_THREADS])

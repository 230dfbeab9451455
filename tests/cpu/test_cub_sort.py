"""cub::BlockRadixSort on the CPU device (backends/cpu/include/cub/): keys
only and keys with values, ascending and descending, blocked and striped
results, a bit range, unsigned, signed and float keys (with -0.0, +0.0 and
infinities), 128 threads x 4 items and 100 threads x 3, against NumPy's
stable sort of CUB's key order on random inputs with many equal keys (so the
stability shows), outputs poisoned. Also compiled by NVRTC
(tests/nvrtc/test_corpus.py)."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SHAPES = ((128, 4), (100, 3))
GRID = 2

_SORT_HEAD = r"""
#include <cub/block/block_radix_sort.cuh>

template <int B, int N>
__device__ void sort_body(const unsigned *ukeys, const int *ikeys, const float *fkeys,
                          unsigned *u_sorted, int *i_sorted, int *i_values, float *f_desc,
                          int *f_values, unsigned *u_bits, unsigned *u_striped) {
    typedef cub::BlockRadixSort<unsigned, B, N> SortU;
    typedef cub::BlockRadixSort<int, B, N, int> SortI;
    typedef cub::BlockRadixSort<float, B, N, int> SortF;
    __shared__ union {
        typename SortU::TempStorage u;
        typename SortI::TempStorage i;
        typename SortF::TempStorage f;
    } temp;
    const int base = blockIdx.x * B * N + threadIdx.x * N;
    unsigned u[N];
    int k[N], v[N];
    float f[N];
    for (int j = 0; j < N; j++) u[j] = ukeys[base + j];
    SortU(temp.u).Sort(u);
    for (int j = 0; j < N; j++) u_sorted[base + j] = u[j];
    __syncthreads();
    for (int j = 0; j < N; j++) {
        k[j] = ikeys[base + j];
        v[j] = base + j;
    }
    SortI(temp.i).Sort(k, v);
    for (int j = 0; j < N; j++) {
        i_sorted[base + j] = k[j];
        i_values[base + j] = v[j];
    }
    __syncthreads();
    for (int j = 0; j < N; j++) {
        f[j] = fkeys[base + j];
        v[j] = base + j;
    }
    SortF(temp.f).SortDescending(f, v);
    for (int j = 0; j < N; j++) {
        f_desc[base + j] = f[j];
        f_values[base + j] = v[j];
    }
    __syncthreads();
    for (int j = 0; j < N; j++) u[j] = ukeys[base + j];
    SortU(temp.u).Sort(u, 4, 12);
    for (int j = 0; j < N; j++) u_bits[base + j] = u[j];
    __syncthreads();
    for (int j = 0; j < N; j++) u[j] = ukeys[base + j];
    SortU(temp.u).SortBlockedToStriped(u);
    for (int j = 0; j < N; j++) u_striped[blockIdx.x * B * N + j * B + threadIdx.x] = u[j];
}
"""
_SORT_KERNEL = ("extern \"C\" __global__ void sort_%d_%d(const unsigned *ukeys, const int *ikeys, "
                "const float *fkeys, unsigned *u_sorted, int *i_sorted, int *i_values, "
                "float *f_desc, int *f_values, unsigned *u_bits, unsigned *u_striped) {\n"
                "    sort_body<%d, %d>(ukeys, ikeys, fkeys, u_sorted, i_sorted, i_values, "
                "f_desc, f_values, u_bits, u_striped);\n}\n")
SORT_SOURCE = _SORT_HEAD + "".join(_SORT_KERNEL % (b, n, b, n) for b, n in SHAPES)


_AHEAD = {"sort_mod": "SORT_SOURCE", "test_histogram_and_discontinuity": "RUNS_SOURCE"}


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
def sort_mod(cpu):
    return ql.compile(SORT_SOURCE, device=cpu)


def _float_order(f):
    """CUB's radix order of float keys: -0.0 as +0.0, then the sign-flip
    twiddle of the bits."""
    b = f.view(np.uint32).copy()
    b[b == 0x80000000] = 0
    return np.where(b & 0x80000000, ~b, b ^ 0x80000000).astype(np.uint32)


@pytest.mark.parametrize("threads,items", SHAPES)
def test_block_radix_sort(sort_mod, threads, items):
    rng = np.random.default_rng(threads + items)
    per = threads * items
    n = GRID * per
    ukeys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ukeys[::3] = rng.integers(0, 64, len(ukeys[::3]))          # small keys, equal low bits
    ikeys = rng.integers(-20, 20, n).astype(np.int32)           # many equal keys
    fkeys = np.round(rng.standard_normal(n), 1).astype(np.float32)
    fkeys[:6] = [-0.0, 0.0, np.inf, -np.inf, -0.0, 0.0]
    outs = [poisoned(n, np.uint32), poisoned(n, np.int32), poisoned(n, np.int32),
            poisoned(n, np.float32), poisoned(n, np.int32), poisoned(n, np.uint32),
            poisoned(n, np.uint32)]
    sort_mod[f"sort_{threads}_{items}"][GRID, threads](ukeys, ikeys, fkeys, *outs)
    u_sorted, i_sorted, i_values, f_desc, f_values, u_bits, u_striped = outs
    for b in range(GRID):
        s = slice(b * per, (b + 1) * per)
        np.testing.assert_array_equal(u_sorted[s], np.sort(ukeys[s]))
        order = np.argsort(ikeys[s], kind="stable")
        np.testing.assert_array_equal(i_sorted[s], ikeys[s][order])
        np.testing.assert_array_equal(i_values[s], order + b * per)
        # descending and stable: sort on the inverted key order
        fdown = np.argsort(~_float_order(fkeys[s]), kind="stable")
        np.testing.assert_array_equal(f_desc[s].view(np.uint32), fkeys[s][fdown].view(np.uint32))
        np.testing.assert_array_equal(f_values[s], fdown + b * per)
        bits = np.argsort((ukeys[s] >> 4) & 0xff, kind="stable")
        np.testing.assert_array_equal(u_bits[s], ukeys[s][bits])
        np.testing.assert_array_equal(u_striped[s], np.sort(ukeys[s]))


# cub::BlockHistogram (both algorithms) and cub::BlockDiscontinuity over a
# block's sorted keys: heads and tails of runs of equal keys, with and without
# the neighbouring tiles' items.
RUNS_SOURCE = r"""
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cuda/std/functional>

extern "C" __global__ void runs(const unsigned char *bytes, const int *keys,
                                unsigned *histo_sort, unsigned *histo_atomic, int *heads,
                                int *tails, int *heads_pred, int *tails_succ) {
    typedef cub::BlockHistogram<unsigned char, 64, 4, 32> HistSort;
    typedef cub::BlockHistogram<unsigned char, 64, 4, 32, cub::BLOCK_HISTO_ATOMIC> HistAtomic;
    typedef cub::BlockDiscontinuity<int, 64> Disc;
    __shared__ typename HistSort::TempStorage ths;
    __shared__ typename HistAtomic::TempStorage tha;
    __shared__ typename Disc::TempStorage td;
    __shared__ unsigned bins_sort[32];
    __shared__ unsigned bins_atomic[32];
    const int base = blockIdx.x * 256 + threadIdx.x * 4;
    unsigned char b[4];
    int k[4], h[4], t[4];
    for (int i = 0; i < 4; i++) {
        b[i] = bytes[base + i];
        k[i] = keys[base + i];
    }
    HistSort(ths).Histogram(b, bins_sort);
    HistAtomic(tha).Histogram(b, bins_atomic);
    __syncthreads();
    if (threadIdx.x < 32) {
        histo_sort[blockIdx.x * 32 + threadIdx.x] = bins_sort[threadIdx.x];
        histo_atomic[blockIdx.x * 32 + threadIdx.x] = bins_atomic[threadIdx.x];
    }
    Disc(td).FlagHeads(h, k, cuda::std::not_equal_to<int>());
    __syncthreads();
    Disc(td).FlagTails(t, k, cuda::std::not_equal_to<int>());
    for (int i = 0; i < 4; i++) {
        heads[base + i] = h[i];
        tails[base + i] = t[i];
    }
    __syncthreads();
    Disc(td).FlagHeads(h, k, cuda::std::not_equal_to<int>(), 3);
    __syncthreads();
    Disc(td).FlagTails(t, k, cuda::std::not_equal_to<int>(), 3);
    for (int i = 0; i < 4; i++) {
        heads_pred[base + i] = h[i];
        tails_succ[base + i] = t[i];
    }
}
"""


def test_histogram_and_discontinuity(cpu):
    mod = ql.compile(RUNS_SOURCE, device=cpu)
    rng = np.random.default_rng(32)
    per = 256
    n = GRID * per
    data = rng.integers(0, 32, n).astype(np.uint8)
    keys = np.sort(rng.integers(0, 40, (GRID, per)), axis=1).astype(np.int32).reshape(-1)
    keys[:3] = 3                      # block 0 starts with the predecessor's value
    hs, ha = poisoned(GRID * 32, np.uint32), poisoned(GRID * 32, np.uint32)
    flags = [poisoned(n, np.int32) for _ in range(4)]
    mod.runs[GRID, 64](data, keys, hs, ha, *flags)
    want = np.stack([np.bincount(data[b * per:(b + 1) * per], minlength=32) for b in range(GRID)])
    np.testing.assert_array_equal(hs.reshape(GRID, 32), want)
    np.testing.assert_array_equal(ha.reshape(GRID, 32), want)
    k = keys.reshape(GRID, per)
    heads, tails, heads_pred, tails_succ = (f.reshape(GRID, per) for f in flags)
    inner_heads = (k[:, 1:] != k[:, :-1]).astype(np.int32)
    np.testing.assert_array_equal(heads[:, 1:], inner_heads)
    np.testing.assert_array_equal(heads[:, 0], 1)
    np.testing.assert_array_equal(tails[:, :-1], inner_heads)
    np.testing.assert_array_equal(tails[:, -1], 1)
    np.testing.assert_array_equal(heads_pred[:, 1:], inner_heads)
    np.testing.assert_array_equal(heads_pred[:, 0], (k[:, 0] != 3).astype(np.int32))
    np.testing.assert_array_equal(tails_succ[:, -1], (k[:, -1] != 3).astype(np.int32))

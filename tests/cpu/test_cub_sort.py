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

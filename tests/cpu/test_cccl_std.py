"""libcu++ on the CPU device (backends/cpu/include/cuda/): <cuda/std/cstdint>,
<limits>, <type_traits>, <utility>, <array>, <complex>, <functional>,
<cuda/atomic> and <cuda/std/atomic> in kernels, against NumPy on random
inputs, outputs poisoned: cuda::atomic_ref at every thread scope (integer
adds, min/max, exchange, a compare-exchange loop, float adds, in global and
shared memory), cuda::std::complex arithmetic and functions, and the
compile-time pieces (static_asserts the kernel compiles with). Also compiled
by NVRTC (tests/nvrtc/test_corpus.py)."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <cuda/std/array>
#include <cuda/std/functional>
#include <cuda/functional>
#include <cuda/atomic>
#include <cuda/std/atomic>

static_assert(cuda::std::is_same<cuda::std::int64_t, long long>::value ||
              cuda::std::is_same<cuda::std::int64_t, long>::value, "int64_t");
static_assert(cuda::std::numeric_limits<cuda::std::uint16_t>::max() == 65535, "limits");
static_assert(cuda::std::is_integral<cuda::std::uint8_t>::value, "traits");

/* bins: a histogram through block-scope atomics in shared memory, added to
 * global bins with device-scope ones; stats: [sum, min, max] of the values
 * (integer atomics: the result does not depend on the order). */
extern "C" __global__ void atomics(const int *x, int n, int *bins, int *stats) {
    __shared__ int local[16];
    if (threadIdx.x < 16) local[threadIdx.x] = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const int v = x[i];
        cuda::atomic_ref<int, cuda::thread_scope_block> bin(local[v & 15]);
        bin.fetch_add(1, cuda::std::memory_order_relaxed);
        cuda::atomic_ref<int, cuda::thread_scope_device> sum(stats[0]);
        sum += v;
        cuda::atomic_ref<int, cuda::thread_scope_system>(stats[1]).fetch_min(v);
        cuda::atomic_ref<int>(stats[2]).fetch_max(v);
    }
    __syncthreads();
    if (threadIdx.x < 16) {
        cuda::atomic_ref<int, cuda::thread_scope_device> out(bins[threadIdx.x]);
        out.fetch_add(cuda::atomic_ref<int, cuda::thread_scope_block>(local[threadIdx.x])
                          .exchange(0));
    }
}

/* fsum: a float sum through cuda::std::atomic_ref; flags: the first thread
 * (1 + its index) to claim each slot by compare-exchange, wins counted. */
extern "C" __global__ void claims(const int *x, const float *xf, int n, float *fsum,
                                  unsigned *flags, int *wins) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuda::std::atomic_ref<float> f(*fsum);
    f.fetch_add(xf[i]);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> flag(flags[x[i] & 63]);
    unsigned expected = 0;
    if (flag.compare_exchange_strong(expected, 1u + (unsigned)i))
        cuda::atomic_ref<int, cuda::thread_scope_device>(*wins)++;
}

/* pairs, arrays, limits and functors at run time. */
extern "C" __global__ void utilities(const int *x, int n, int *out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuda::std::array<int, 3> a = {x[i], x[i] * 2, -x[i]};
    cuda::std::pair<int, int> p = cuda::std::make_pair(a[0], a[2]);
    cuda::std::swap(p.first, p.second);
    const int lim = cuda::std::numeric_limits<cuda::std::int8_t>::max();
    out[4 * i] = p.first;
    out[4 * i + 1] = cuda::maximum<int>()(a[1], lim) + cuda::minimum<>()(a[1], -lim);
    out[4 * i + 2] = cuda::std::plus<int>()(a[0], a[1]);
    out[4 * i + 3] = (int)a.size() + (int)sizeof(cuda::std::int16_t);
}
"""

COMPLEX_SOURCE = r"""
#include <cuda/std/complex>

/* z = a*b, a/b, |a|, arg(a), exp(a), sqrt(a), conj(a)*a, polar(|a|, arg(b))
 * for complex<float> and complex<double>. */
template <class T>
__device__ void complex_body(const T *a, const T *b, T *out, int n) {
    typedef cuda::std::complex<T> C;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const C x(a[2 * i], a[2 * i + 1]), y(b[2 * i], b[2 * i + 1]);
    const C r[6] = {x * y, x / y, cuda::std::exp(x), cuda::std::sqrt(x), cuda::std::conj(x) * x,
                    cuda::std::polar(cuda::std::abs(x), cuda::std::arg(y))};
    for (int k = 0; k < 6; k++) {
        out[14 * i + 2 * k] = r[k].real();
        out[14 * i + 2 * k + 1] = r[k].imag();
    }
    out[14 * i + 12] = cuda::std::abs(x);
    out[14 * i + 13] = cuda::std::arg(x);
}
extern "C" __global__ void complex_f(const float *a, const float *b, float *out, int n) {
    complex_body<float>(a, b, out, n);
}
extern "C" __global__ void complex_d(const double *a, const double *b, double *out, int n) {
    complex_body<double>(a, b, out, n);
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


@pytest.fixture(scope="module")
def cmod(cpu):
    return ql.compile(COMPLEX_SOURCE, device=cpu)


@pytest.mark.parametrize("n", [1, 31, 1000])
def test_atomic_ref(mod, n):
    rng = np.random.default_rng(n)
    x = rng.integers(-500, 500, n).astype(np.int32)
    xf = rng.standard_normal(n).astype(np.float32)
    bins = np.zeros(16, np.int32)
    stats = np.array([0, 2**31 - 1, -2**31], np.int32)
    mod.atomics[(n + 127) // 128, 128](x, n, bins, stats)
    np.testing.assert_array_equal(bins, np.bincount(x & 15, minlength=16))
    np.testing.assert_array_equal(stats, [x.sum(), x.min(), x.max()])
    fsum = np.zeros(1, np.float32)
    flags = np.zeros(64, np.uint32)
    wins = np.zeros(1, np.int32)
    mod.claims[(n + 127) // 128, 128](x, xf, n, fsum, flags, wins)
    bound = n * np.finfo(np.float32).eps * np.abs(xf).sum()    # any order of the adds
    assert abs(float(fsum[0]) - xf.astype(np.float64).sum()) <= bound
    slots = np.unique(x & 63)
    assert wins[0] == len(slots)
    assert np.all(flags[np.setdiff1d(np.arange(64), slots)] == 0)
    winners = flags[slots].astype(np.int64) - 1
    np.testing.assert_array_equal(x[winners] & 63, slots)


@pytest.mark.parametrize("n", [1, 31, 300])
def test_utilities(mod, n):
    rng = np.random.default_rng(n + 1)
    x = rng.integers(-300, 300, n).astype(np.int32)
    out = poisoned(4 * n, np.int32)
    mod.utilities[(n + 63) // 64, 64](x, n, out)
    o = out.reshape(n, 4)
    np.testing.assert_array_equal(o[:, 0], -x)
    np.testing.assert_array_equal(o[:, 1], np.maximum(2 * x, 127) + np.minimum(2 * x, -127))
    np.testing.assert_array_equal(o[:, 2], 3 * x)
    np.testing.assert_array_equal(o[:, 3], 5)


@pytest.mark.parametrize("kernel,dtype,rtol", [("complex_f", np.float32, 2e-6),
                                               ("complex_d", np.float64, 1e-14)])
def test_complex(cmod, kernel, dtype, rtol):
    rng = np.random.default_rng(3)
    n = 257
    a = rng.standard_normal(2 * n).astype(dtype)
    b = rng.standard_normal(2 * n).astype(dtype)
    a[:2] = [0.0, 0.0]          # |0| and arg(0)
    b[2:4] = [1e-3, -2.0]
    out = poisoned(14 * n, dtype)
    cmod[kernel][(n + 63) // 64, 64](a, b, out, n)
    x = a[0::2].astype(np.complex128) + 1j * a[1::2]
    y = b[0::2].astype(np.complex128) + 1j * b[1::2]
    want = [x * y, x / y, np.exp(x), np.sqrt(x), np.conj(x) * x,
            np.abs(x) * np.exp(1j * np.angle(y))]
    o = out.reshape(n, 14).astype(np.float64)
    for k, w in enumerate(want):
        got = o[:, 2 * k] + 1j * o[:, 2 * k + 1]
        scale = np.maximum(np.abs(w), 1.0)
        assert np.all(np.abs(got - w) <= 8 * rtol * scale), k
    np.testing.assert_allclose(o[:, 12], np.abs(x), rtol=rtol)
    np.testing.assert_allclose(o[:, 13], np.angle(x), rtol=rtol, atol=rtol)

"""The tier-1 row loop over the global x index (ql_cpu_export.h): every
specialised block width, the index spelled the ways kernels spell it, a
row split at n anywhere inside a block, and coordinates read on their own,
against NumPy, outputs poisoned first."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
// the index as most kernels write it, and in the other order
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void axpy_swapped(float a, const float *x, float *y, int n) {
    int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (n > i) y[i] = a * x[i] + y[i];
}
// unsigned index, a bound that is not a kernel parameter, a reversed store
extern "C" __global__ void reverse(const int *in, int *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[n - 1 - i] = in[i] * 3 + 1;
}
// each thread's coordinates, read apart from the index
extern "C" __global__ void coords(unsigned *tx, unsigned *bx, int *gid, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tx[i] = threadIdx.x;
    bx[i] = blockIdx.x;
    gid[i] = i;
}
// a grid-stride loop: fewer threads than elements
extern "C" __global__ void scale_strided(double *v, double s, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        v[i] *= s;
}
"""

WIDTHS = (32, 64, 128, 256, 512, 1024, 96)


def sizes(b):
    # ... and one over 16384 threads: spread over the worker pool
    return sorted({1, b - 1, b, b + 1, 3 * b + 7, 5 * b - 31, 40_000 + b // 3})


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


@pytest.mark.parametrize("block", WIDTHS)
@pytest.mark.parametrize("kernel", ["axpy", "axpy_swapped"])
def test_axpy_rows(mod, rng, block, kernel):
    for n in sizes(block):
        x = rng.standard_normal(n + 9).astype(np.float32)
        y = rng.standard_normal(n + 9).astype(np.float32)
        want = y.copy()
        want[:n] = np.float32(1.25) * x[:n] + y[:n]
        getattr(mod, kernel)[(n + block - 1) // block, block](1.25, x, y, n)
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6, err_msg=f"n={n}")
        assert np.array_equal(y[n:], want[n:])   # past n: untouched


@pytest.mark.parametrize("block", WIDTHS)
def test_unsigned_reversed(mod, rng, block):
    for n in sizes(block):
        a = rng.integers(-1000, 1000, n, dtype=np.int32)
        out = poisoned(n, np.int32)
        mod.reverse[(n + block - 1) // block, block](a, out, n)
        np.testing.assert_array_equal(out, (a * 3 + 1)[::-1])


@pytest.mark.parametrize("block", WIDTHS)
def test_coordinates(mod, block):
    n = 7 * block + block // 2 + 1
    grid = (n + block - 1) // block
    tx, bx = poisoned(n, np.uint32), poisoned(n, np.uint32)
    gid = poisoned(n, np.int32)
    mod.coords[grid, block](tx, bx, gid, n)
    i = np.arange(n)
    np.testing.assert_array_equal(gid, i)
    np.testing.assert_array_equal(tx, i % block)
    np.testing.assert_array_equal(bx, i // block)


@pytest.mark.parametrize("grid, block", [(1, 32), (3, 64), (7, 256), (2, 1024)])
def test_grid_stride(mod, rng, grid, block):
    n = grid * block * 3 + 5
    v = rng.standard_normal(n)
    want = v * 0.5
    mod.scale_strided[grid, block](v, 0.5, n)
    np.testing.assert_array_equal(v, want)

"""1D, 2D and 3D grids and blocks against NumPy, with sizes that are not
multiples of the block, small launches (run on the caller) and large ones
(spread over the worker pool)."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
// out[r, c] = in[c, r] for an (rows x cols) input
extern "C" __global__ void transpose(const double *in, double *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
// Each element records its flat global id, from 3D coordinates.
extern "C" __global__ void ids3(long long *out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz)
        out[((long long)z * ny + y) * nx + x] = ((long long)z * ny + y) * nx + x
            + 1000000000LL * (gridDim.x * blockDim.x == (unsigned)((nx + blockDim.x - 1) / blockDim.x) * blockDim.x);
}
extern "C" __global__ void dims(unsigned *out) {
    if (threadIdx.x + threadIdx.y + threadIdx.z + blockIdx.x + blockIdx.y + blockIdx.z == 0) {
        out[0] = blockDim.x; out[1] = blockDim.y; out[2] = blockDim.z;
        out[3] = gridDim.x; out[4] = gridDim.y; out[5] = gridDim.z; out[6] = warpSize;
    }
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


SIZES_1D = [(n, b) for n in (1, 31, 32, 33, 255, 257, 10_007, 1_000_003)
            for b in (1, 32, 96, 256, 1024) if n // b <= 100_000]


@pytest.mark.parametrize("n, block", SIZES_1D)
def test_1d(mod, rng, n, block):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expected = np.float32(0.75) * x + y
    run = mod.axpy.configure((n + block - 1) // block, block)
    run(0.75, x, y, n)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("rows, cols, block", [(1, 1, (16, 16)), (17, 33, (8, 4)),
                                               (300, 511, (32, 8)), (1024, 3, (1, 256))])
def test_2d(mod, rng, rows, cols, block):
    a = rng.standard_normal((rows, cols))
    out = poisoned((cols, rows), np.float64)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    mod.transpose[grid, block](a, out, rows, cols)
    np.testing.assert_array_equal(out, a.T)


@pytest.mark.parametrize("shape, block", [((5, 7, 3), (4, 4, 2)), ((64, 33, 17), (8, 8, 4)),
                                          ((1, 1, 70), (1, 1, 64))])
def test_3d(mod, shape, block):
    nx, ny, nz = shape
    out = poisoned(nz * ny * nx, np.int64)
    grid = tuple((s + b - 1) // b for s, b in zip(shape, block))
    mod.ids3[grid, block](out, nx, ny, nz)
    np.testing.assert_array_equal(out, np.arange(nx * ny * nz) + 1_000_000_000)


@pytest.mark.parametrize("grid, block", [(7, 3), ((2, 3), (4, 5)), ((2, 3, 4), (5, 6, 7)),
                                         ((70000, 1, 1), (1, 1, 1))])
def test_built_in_dims(mod, grid, block):
    out = poisoned(7, np.uint32)
    mod.dims.launch(grid, block, out)
    g = (grid,) if isinstance(grid, int) else grid
    b = (block,) if isinstance(block, int) else block
    g, b = g + (1,) * (3 - len(g)), b + (1,) * (3 - len(b))
    np.testing.assert_array_equal(out, list(b) + list(g) + [32])


def test_three_launch_paths_agree(mod, rng):
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    results = []
    for path in ("indexed", "configured", "direct"):
        y = np.ones(n, np.float32)
        if path == "indexed":
            mod.axpy[20, 256](2.0, x, y, n)
        elif path == "configured":
            mod.axpy.configure(20, 256)(2.0, x, y, n)
        else:
            mod.axpy.launch(20, 256, 2.0, x, y, n)
        results.append(y)
    for y in results:
        np.testing.assert_array_equal(y, np.float32(2.0) * x + 1)

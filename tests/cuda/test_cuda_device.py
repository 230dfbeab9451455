"""The CUDA device on a real GPU: the same kernels as the CPU device, checked
against NumPy with poisoned outputs and edge sizes; memory, interop, globals,
large dynamic shared memory, launches from other threads, and bad input."""
import threading

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
#include <cuda_fp16.h>
struct Affine { float scale; int shift; double bias; };
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void affine(Affine p, const int *x, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = p.scale * (x[i] + p.shift) + p.bias;
}
__global__ void halve(const __half *x, float *out, __half k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __half2float(x[i]) * __half2float(k);
}
template <typename T> __global__ void block_sum(const T *x, T *out, int n) {
    extern __shared__ unsigned char raw[];
    T *tile = reinterpret_cast<T *>(raw);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}
__constant__ float coef[4];
__device__ int counter;
extern "C" __global__ void poly(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = coef[0] + x[i] * (coef[1] + x[i] * (coef[2] + x[i] * coef[3]));
        atomicAdd(&counter, 1);
    }
}
// Uses more than 48 KiB of dynamic shared memory: one float per thread,
// repeated `copies` times.
extern "C" __global__ void big_shared(float *out, int copies) {
    extern __shared__ float s[];
    for (int c = 0; c < copies; ++c) s[c * blockDim.x + threadIdx.x] = c + threadIdx.x;
    __syncthreads();
    float acc = 0;
    for (int c = 0; c < copies; ++c) acc += s[c * blockDim.x + (blockDim.x - 1 - threadIdx.x)];
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


@pytest.fixture(scope="module")
def mod(gpu):
    return ql.compile(SOURCE, device=gpu, name_expressions=["block_sum<float>",
                                                            "block_sum<double>"])


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def poisoned(gpu, n, dtype):
    buf = ql.empty(n, dtype, device=gpu)
    fill = np.full(n, np.nan if np.dtype(dtype).kind == "f" else -1).astype(dtype)
    return buf.copy_from(fill)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 4099, 1 << 20])
def test_saxpy_all_paths(mod, gpu, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, grid = ql.asarray(x, device=gpu), (n + 255) // 256
    for launch in ("indexed", "configured", "direct"):
        dy = ql.asarray(y, device=gpu)
        if launch == "indexed":
            mod.saxpy[grid, 256](1.5, dx, dy, n)
        elif launch == "configured":
            mod.saxpy.configure(grid, 256)(1.5, dx, dy, n)
        else:
            mod.saxpy.launch(grid, 256, 1.5, dx, dy, n)
        np.testing.assert_allclose(dy.numpy(), np.float32(1.5) * x + y, rtol=1e-6)


def test_struct_by_value_and_half(mod, gpu, rng):
    n = 777
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    out = poisoned(gpu, n, np.float64)
    params = np.array([(0.5, 3, 0.25)], dtype=[("scale", "<f4"), ("shift", "<i4"),
                                            ("bias", "<f8")])
    mod.affine[(n + 127) // 128, 128](params[0], ql.asarray(x, device=gpu), out, n)
    np.testing.assert_allclose(out.numpy(), 0.5 * (x + 3) + 0.25)
    h = rng.standard_normal(n).astype(np.float16)
    fout = poisoned(gpu, n, np.float32)
    mod.halve[(n + 127) // 128, 128](ql.asarray(h, device=gpu), fout, 0.5, n)
    np.testing.assert_allclose(fout.numpy(), h.astype(np.float32) * 0.5, rtol=1e-3)


@pytest.mark.parametrize("dtype, expr", [(np.float32, "block_sum<float>"),
                                         (np.float64, "block_sum<double>")])
def test_template_with_dynamic_shared(mod, gpu, rng, dtype, expr):
    n, block = 5000, 256
    x = rng.standard_normal(n).astype(dtype)
    blocks = (n + block - 1) // block
    out = poisoned(gpu, blocks, dtype)
    mod[expr][blocks, block, block * np.dtype(dtype).itemsize](ql.asarray(x, device=gpu), out, n)
    padded = np.zeros(blocks * block, dtype)
    padded[:n] = x
    np.testing.assert_allclose(out.numpy(), padded.reshape(blocks, block).sum(1), rtol=1e-4)


def test_globals(mod, gpu, rng):
    coef = mod.get_global("coef")
    assert coef.shape == (4,) and coef.dtype == np.float32
    c = rng.standard_normal(4).astype(np.float32)
    coef.copy_from(c)
    counter = mod.get_global("counter")
    counter.copy_from(np.zeros((), np.int32))
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = poisoned(gpu, n, np.float32)
    mod.poly[4, 256](ql.asarray(x, device=gpu), y, n)
    np.testing.assert_allclose(y.numpy(), c[0] + x * (c[1] + x * (c[2] + x * c[3])), rtol=1e-5)
    assert int(counter.numpy()) == n


def test_dynamic_shared_above_48k(mod, gpu):
    block, copies = 256, 100  # 100 KiB
    out = poisoned(gpu, 2 * block, np.float32)
    mod.big_shared[2, block, block * copies * 4](out, copies)
    t = np.arange(block)
    expected = sum(c + (block - 1 - t) for c in range(copies)).astype(np.float32)
    np.testing.assert_allclose(out.numpy(), np.tile(expected, 2))


class CaiOnly:
    """Another library's array, as far as the launcher can tell."""

    def __init__(self, buf):
        self._buf = buf
        self.__cuda_array_interface__ = buf.__cuda_array_interface__


class DlpackOnly:
    def __init__(self, buf):
        self._buf = buf

    def __dlpack__(self, stream=None):
        return self._buf.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._buf.__dlpack_device__()


@pytest.mark.parametrize("wrap", [CaiOnly, DlpackOnly, lambda b: b.ptr],
                         ids=["cuda_array_interface", "dlpack", "int-address"])
def test_foreign_arrays(mod, gpu, rng, wrap):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy = ql.asarray(x, device=gpu), ql.asarray(y, device=gpu)
    mod.saxpy[4, 256](2.0, wrap(dx), wrap(dy), n)
    np.testing.assert_allclose(dy.numpy(), 2 * x + y, rtol=1e-6)


def test_torch_and_cupy_when_installed(mod, gpu, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    ran = 0
    try:
        import torch
        tx = torch.from_numpy(x).cuda(gpu.ordinal)
        ty = torch.zeros(n, device=f"cuda:{gpu.ordinal}")
        mod.saxpy[4, 256](3.0, tx, ty, n)
        torch.cuda.synchronize()
        np.testing.assert_allclose(ty.cpu().numpy(), 3 * x, rtol=1e-6)
        back = torch.from_dlpack(ql.asarray(x, device=gpu))
        np.testing.assert_array_equal(back.cpu().numpy(), x)
        ran += 1
    except ImportError:
        pass
    try:
        import cupy
        with cupy.cuda.Device(gpu.ordinal):
            cx, cy = cupy.asarray(x), cupy.zeros(n, cupy.float32)
            mod.saxpy[4, 256](3.0, cx, cy, n)
            np.testing.assert_allclose(cupy.asnumpy(cy), 3 * x, rtol=1e-6)
        ran += 1
    except ImportError:
        pass
    if not ran:
        pytest.skip("neither torch nor CuPy is installed")


def test_launch_from_a_new_thread(mod, gpu, rng):
    """A thread with no current context: the launcher retries after making
    the device's context current."""
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    dx = ql.asarray(x, device=gpu)
    dy = ql.zeros(n, np.float32, device=gpu)
    errors = []

    def work():
        try:
            mod.saxpy[4, 256](1.0, dx, dy, n)
            gpu.synchronize()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join(60)
    assert not errors
    np.testing.assert_allclose(dy.numpy(), x)


def test_bad_input(mod, gpu):
    x = np.ones(10, np.float32)
    with pytest.raises(ql.LaunchTypeError, match=r"kernel 'saxpy', parameter 2 'x'.*NumPy "
                       r"array is host memory.*ql.asarray"):
        mod.saxpy[1, 32](1.0, x, x, 10)
    with pytest.raises(ql.LaunchValueError, match="block"):
        mod.saxpy[1, 2048](1.0, None, None, 0)
    with pytest.raises(ql.LaunchValueError, match="shared"):
        mod.saxpy[1, 32, 10 << 20](1.0, None, None, 0)


def test_debug_launch_checks_pointer_owner(gpu):
    dbg = ql.compile(SOURCE, device=gpu, debug=True)
    host = np.ones(4, np.float32)
    with pytest.raises(ql.LaunchValueError, match="not memory the CUDA driver knows"):
        dbg.saxpy[1, 4](1.0, host.ctypes.data, host.ctypes.data, 4)

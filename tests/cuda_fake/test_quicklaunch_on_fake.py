"""quicklaunch's CUDA device end to end against the fake driver: device
discovery, NVRTC compile and module load, memory and copies, interop, and
the exact parameter bytes every launch path hands to cuLaunchKernel."""
import shutil
import struct
import threading

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import devices
from quicklaunch.backends.cuda import driver

from .api import last_launch, load

SOURCE = r"""
#include <cuda_fp16.h>
struct Affine { float scale; int shift; double bias; };
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void mixed(Affine p, __half h, bool flag, long long big, float4 v, char c,
                      double d, unsigned short u, const int *x) {}
__constant__ float coef[4];
namespace tables { __device__ int lut[8]; }
extern "C" __global__ void big_shared(float *out) { extern __shared__ float s[]; }
"""


@pytest.fixture
def fake_gpu(fake_libcuda, tmp_path, monkeypatch):
    """quicklaunch pointed at a fresh copy of the fake driver, with its
    device and driver caches emptied before and after."""
    pytest.importorskip("quicklaunch.backends.cuda.nvrtc")
    from quicklaunch.backends.cuda import nvrtc
    try:
        nvrtc.load()
    except ql.CompileError as exc:
        pytest.skip(f"NVRTC is not installed: {exc}")
    for name in [n for n in __import__("os").environ if n.startswith("FAKE_CUDA_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "libcuda.so.1"
    shutil.copyfile(fake_libcuda, path)
    monkeypatch.setenv("QUICKLAUNCH_LIBCUDA", str(path))
    monkeypatch.setattr(devices, "_devices", {})
    monkeypatch.setattr(devices, "_default_probe", [])
    driver._reset_for_tests()
    yield load(path)
    driver._reset_for_tests()


@pytest.fixture
def gpu(fake_gpu):
    return ql.device("cuda")


@pytest.fixture
def mod(gpu):
    return ql.compile(SOURCE, device=gpu)


def test_device_from_the_driver(fake_gpu):
    dev = ql.device()  # a usable GPU is the default
    assert dev.kind == "cuda" and dev.name == "cuda:0" and dev.arch == "sm_90"
    assert dev.limits.max_shared_per_block == 232448
    assert dev.limits.max_block_dims == (1024, 1024, 64)
    assert "sm_90" in dev.description and "132 SMs" in dev.description
    assert ql.device("cuda:0") is dev
    with pytest.raises(ql.DeviceError, match=r"device 'cuda:3': this machine has 1 CUDA "
                                             r"device \(cuda:0 to cuda:0\)"):
        ql.device("cuda:3")
    dev.synchronize()


def test_init_failure_is_a_clean_device_error(fake_gpu, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_INIT_ERROR", "999")
    driver._reset_for_tests()
    with pytest.raises(ql.DeviceError, match=r"did not initialise: cuInit failed: "
                                             r"CUDA_ERROR_UNKNOWN \(999\)"):
        ql.device("cuda")
    assert ql.device().kind == "cpu"


def test_launch_paths_pass_exact_bytes(mod, gpu, fake_gpu):
    rng = np.random.default_rng(3)
    n = 1000
    x = ql.asarray(rng.standard_normal(n).astype(np.float32), device=gpu)
    y = ql.zeros(n, np.float32, device=gpu)
    a = float(rng.standard_normal())
    expected = struct.pack("<f4xQQi", a, x.ptr, y.ptr, n)
    calls = [lambda: mod.saxpy[4, 256](a, x, y, n),
             lambda: mod.saxpy.configure((4, 1, 1), 256)(a, x, y, n),
             lambda: mod.saxpy.launch(4, 256, a, x, y, n)]
    for call in calls:
        call()
        rec = last_launch(fake_gpu)
        assert rec["name"] == "saxpy" and rec["grid"] == (4, 1, 1)
        assert rec["block"] == (256, 1, 1) and rec["shared"] == 0 and rec["nparams"] == 4
        # float at 0, pointers at 8 and 16, int at 24 (the PTX layout)
        assert rec["params"][:4] + rec["params"][8:28] == expected[:4] + expected[8:28]


def test_every_parameter_kind(mod, gpu, fake_gpu):
    k = mod.mixed
    assert [p.kind for p in k.params] == ["struct", "half", "bool", "int64", "struct", "int8",
                                          "float64", "uint16", "const pointer"]
    affine = np.array([(0.5, -3, 2.25)], dtype=[("scale", "<f4"), ("shift", "<i4"),
                                             ("bias", "<f8")])[0]
    v = np.array([1, 2, 3, 4], np.float32).tobytes()
    xs = ql.zeros(4, np.int32, device=gpu)
    k[1, 1](affine, 1.5, True, -2**40, v, -7, 3.25, 65535, xs)
    raw = last_launch(fake_gpu)["params"]
    offsets, at = [], 0
    for p in k.params:
        at = (at + p.align - 1) // p.align * p.align
        offsets.append(at)
        at += p.size
    got = [raw[o:o + p.size] for o, p in zip(offsets, k.params)]
    assert got[0] == affine.tobytes()
    assert got[1] == np.float16(1.5).tobytes()
    assert got[2] == b"\x01"
    assert got[3] == struct.pack("<q", -2**40)
    assert got[4] == v
    assert got[5] == struct.pack("<b", -7)
    assert got[6] == struct.pack("<d", 3.25)
    assert got[7] == struct.pack("<H", 65535)
    assert got[8] == struct.pack("<Q", xs.ptr)


def test_memory_round_trip_and_exports(gpu):
    rng = np.random.default_rng(5)
    host = rng.standard_normal((3, 5)).astype(np.float64)
    buf = ql.asarray(host, device=gpu)
    assert buf.device is gpu and buf.shape == (3, 5)
    np.testing.assert_array_equal(buf.numpy(), host)
    z = ql.zeros(7, np.int16, device=gpu)
    np.testing.assert_array_equal(z.numpy(), np.zeros(7, np.int16))
    z.copy_from(np.arange(7))
    np.testing.assert_array_equal(z.numpy(), np.arange(7))
    cai = buf.__cuda_array_interface__
    assert cai["data"] == (buf.ptr, False) and cai["shape"] == (3, 5)
    assert cai["typestr"] == "<f8" and cai["version"] == 3 and cai["stream"] == 1
    assert buf.__dlpack_device__() == (2, 0)
    with pytest.raises(ValueError, match="shape"):
        z.copy_from(np.arange(8))


class CaiOnly:
    def __init__(self, buf, strides=None, readonly=False):
        self.__cuda_array_interface__ = dict(buf.__cuda_array_interface__, strides=strides,
                                             data=(buf.ptr, readonly))


class DlpackOnly:
    def __init__(self, buf):
        self._buf = buf

    def __dlpack__(self, stream=None):
        return self._buf.__dlpack__(stream=stream)


class TorchLike:
    def __init__(self, buf, cuda=True, contiguous=True, device=0):
        self._buf, self.is_cuda, self._contiguous, self._device = buf, cuda, contiguous, device

    def data_ptr(self):
        return self._buf.ptr

    def is_contiguous(self):
        return self._contiguous

    def get_device(self):
        return self._device


@pytest.mark.parametrize("wrap", [CaiOnly, DlpackOnly, TorchLike, lambda b: b.ptr],
                         ids=["cai", "dlpack", "data_ptr", "int"])
def test_foreign_arrays_resolve_to_their_address(mod, gpu, fake_gpu, wrap):
    x, y = ql.zeros(8, np.float32, device=gpu), ql.zeros(8, np.float32, device=gpu)
    mod.saxpy[1, 8](1.0, wrap(x), wrap(y), 8)
    assert last_launch(fake_gpu)["params"][8:24] == struct.pack("<QQ", x.ptr, y.ptr)


@pytest.mark.parametrize("arg, error, pattern", [
    (lambda b: np.ones(8, np.float32), ql.LaunchTypeError,
     r"parameter 3 'y'.*NumPy array is host memory, not memory of device cuda:0; copy it "
     r"with ql.asarray"),
    (lambda b: ql.zeros(8, np.float32, device="cpu"), ql.LaunchValueError,
     r"parameter 3 'y'.*another device"),
    (lambda b: CaiOnly(b, strides=(8,)), ql.LaunchValueError, r"'y'.*strided"),
    (lambda b: CaiOnly(b, readonly=True), ql.LaunchValueError, r"'y'.*read-only"),
    (lambda b: TorchLike(b, cuda=False), ql.LaunchTypeError, r"'y'.*not on a CUDA device"),
    (lambda b: TorchLike(b, contiguous=False), ql.LaunchValueError, r"'y'.*not contiguous"),
    (lambda b: TorchLike(b, device=1), ql.LaunchValueError, r"'y'.*lives on cuda:1"),
    (lambda b: "y", ql.LaunchTypeError, r"'y'.*got str"),
], ids=["numpy", "cpu-buffer", "strided", "readonly", "host-tensor", "noncontiguous",
        "other-gpu", "str"])
def test_bad_pointer_arguments(mod, gpu, arg, error, pattern):
    x = ql.zeros(8, np.float32, device=gpu)
    with pytest.raises(error, match=pattern):
        mod.saxpy[1, 8](1.0, x, arg(x), 8)


def test_limits_and_large_dynamic_shared(mod, gpu, fake_gpu):
    out = ql.zeros(256, np.float32, device=gpu)
    mod.big_shared[1, 256, 100 * 1024](out)  # above 48 KiB: granted at load
    assert last_launch(fake_gpu)["shared"] == 100 * 1024
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'big_shared': shared_mem is 232449 "
                       r"bytes; device cuda:0 allows 0 to 232448"):
        mod.big_shared[1, 256, 232449](out)
    with pytest.raises(ql.LaunchValueError, match="block dimension x is 2048"):
        mod.big_shared[1, 2048](out)


def test_launch_failure_names_the_status(mod, gpu, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "719")
    x = ql.zeros(8, np.float32, device=gpu)
    with pytest.raises(ql.LaunchError, match=r"launch of kernel 'saxpy' failed: "
                                             r"CUDA_ERROR_LAUNCH_FAILED \(719\)"):
        mod.saxpy[1, 8](1.0, x, x, 8)


def test_launch_from_a_thread_without_a_context(mod, gpu, fake_gpu):
    x = ql.zeros(8, np.float32, device=gpu)
    before = fake_gpu.fake_cuda_launch_count()
    errors = []

    def work():
        try:
            mod.saxpy[1, 8](2.0, x, x, 8)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert not errors
    assert fake_gpu.fake_cuda_launch_count() == before + 1


def test_globals(mod, gpu):
    coef = mod.get_global("coef")
    assert coef.shape == (4,) and coef.dtype == np.float32
    coef.copy_from([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(mod.get_global("coef").numpy(), [1, 2, 3, 4])
    lut = mod.get_global("tables::lut")
    assert lut.nbytes == 32


def test_debug_launch_asks_the_driver_who_owns_a_pointer(gpu):
    dbg = ql.compile(SOURCE, device=gpu, debug=True)
    host = np.ones(8, np.float32)
    x = ql.zeros(8, np.float32, device=gpu)
    with pytest.raises(ql.LaunchValueError, match=r"'y': address 0x[0-9a-f]+ is not memory the "
                                                  r"CUDA driver knows"):
        dbg.saxpy[1, 8](1.0, x, host.ctypes.data, 8)
    dbg.saxpy[1, 8](1.0, x, x.ptr, 8)


def test_buffers_on_two_gpus(fake_gpu, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_DEVICES", "2")
    driver._reset_for_tests()
    g0, g1 = ql.device("cuda:0"), ql.device("cuda:1")
    m0 = ql.compile(SOURCE, device=g0)
    x1 = ql.zeros(8, np.float32, device=g1)
    with pytest.raises(ql.LaunchValueError, match="another device"):
        m0.saxpy[1, 8](1.0, x1, x1, 8)
    dbg = ql.compile(SOURCE, device=g0, debug=True)
    with pytest.raises(ql.LaunchValueError, match=r"belongs to cuda:1, but the kernel runs on "
                                                  r"cuda:0"):
        dbg.saxpy[1, 8](1.0, CaiOnly(x1), CaiOnly(x1), 8)


def test_launch_benchmark_runs_on_a_gpu_device(gpu, fake_gpu):
    """The launch benchmark's plumbing on a CUDA device (timings not asserted):
    device buffers as arguments, cuLaunchKernel as the C baseline's entry."""
    from quicklaunch.bench.launch import measure
    before = fake_gpu.fake_cuda_launch_count()
    result = measure(gpu, iters=20, repeats=1)
    assert result["device"] == "cuda:0"
    assert all(v > 0 for row in result["rows"].values() for v in row.values())
    assert fake_gpu.fake_cuda_launch_count() > before

"""quicklaunch's HIP device against a fake HIP runtime (fake_libamdhip64.c,
built here with the C compiler): the device opens, code objects from hiprtc
load, memory round-trips, and launches reach hipModuleLaunchKernel through
the C fast path with exactly the parameter bytes the kernel expects, the
configuration, the stream; other libraries' arrays arrive through DLPack
(ROCm device type 10) and data_ptr(). No AMD GPU is needed; hiprtc is."""
import ctypes
import itertools
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import quicklaunch as ql

SOURCE_FILE = Path(__file__).with_name("fake_libamdhip64.c")
_copies = itertools.count()


class FakeLaunch(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_size_t), ("nparams", ctypes.c_int),
                ("bytes", ctypes.c_ubyte * 1024)]


@pytest.fixture(scope="session")
def fake_lib(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the fake HIP runtime")
    out = tmp_path_factory.mktemp("fakehip") / "libamdhip64.so"
    subprocess.run([cc, "-O1", "-g", "-shared", "-fPIC", "-Wall", "-o", str(out),
                    str(SOURCE_FILE)], check=True, capture_output=True)
    return out


@pytest.fixture
def fake(fake_lib, tmp_path, monkeypatch):
    """quicklaunch pointed at a fresh copy of the fake runtime; yields the
    copy loaded with ctypes (the same instance quicklaunch opens)."""
    from quicklaunch import devices, streams
    from quicklaunch.backends.hip import driver
    copy = tmp_path / f"libamdhip64-{next(_copies)}.so"
    shutil.copyfile(fake_lib, copy)
    monkeypatch.setenv("QUICKLAUNCH_LIBHIP", str(copy))
    for name in ("FAKE_HIP_DEVICES", "FAKE_HIP_ARCH", "FAKE_HIP_WAVE", "FAKE_HIP_INIT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "_devices", {})
    driver._reset_for_tests()
    lib = ctypes.CDLL(str(copy))
    yield lib
    driver._reset_for_tests()


def last(lib) -> FakeLaunch:
    return FakeLaunch.in_dll(lib, "fake_last")


def expect(lib, kernel):
    sizes = (ctypes.c_size_t * len(kernel.params))(*[p.size for p in kernel.params])
    lib.fake_expect(len(kernel.params), sizes)


SAXPY = r"""
struct Pair { char c; double d; };
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void mixed(Pair p, __half h, signed char c, unsigned long long u, bool b) {}
__device__ float table[8];
__constant__ int coef = 3;
"""


def test_device_opens(fake):
    dev = ql.device("hip")
    assert dev is ql.device("hip:0") and dev.kind == "hip" and dev.name == "hip:0"
    assert dev.arch == "gfx90a" and dev.backend.target == "gfx90a:sramecc+:xnack-"
    assert dev.limits.warp_size == 64 and dev.limits.max_shared_per_block == 65536
    assert "Fake AMD GPU 0, gfx90a:sramecc+:xnack-, 104 CUs, wave64" in dev.description
    assert not dev.host_memory and dev.id == 0x200
    with pytest.raises(ql.DeviceError, match=r"'hip:1': this machine has 1 AMD GPU "
                                             r"\(hip:0 to hip:0\)"):
        ql.device("hip:1")
    dev.synchronize()


def test_no_gpu_is_a_device_error(fake, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_INIT", "101")
    with pytest.raises(ql.DeviceError, match=r"did not initialise: hipInit failed: "
                                             r"hipErrorInvalidDevice \(101\).*no AMD GPU is "
                                             r"usable.*use device='cpu'"):
        ql.device("hip")
    from quicklaunch.backends.hip import driver
    assert driver.probe()[0] == 0 and not driver.available()


def test_launch_reaches_hipModuleLaunchKernel(fake):
    dev = ql.device("hip")
    mod = ql.compile(SAXPY, device=dev)
    k = mod.saxpy
    assert [p.name for p in k.params] == ["a", "x", "y", "n"]
    x = ql.asarray(np.arange(100, dtype=np.float32), device=dev)
    y = ql.zeros(100, device=dev)
    expect(fake, k)
    k[(4, 2), 64, 128](2.5, x, y, 100)
    rec = last(fake)
    assert rec.name == b"saxpy" and tuple(rec.grid) == (4, 2, 1)
    assert tuple(rec.block) == (64, 1, 1) and rec.shared == 128 and rec.stream == 0
    assert bytes(rec.bytes[:24]) == struct.pack("<fQQi", 2.5, x.ptr, y.ptr, 100)
    run = k.configure(1, 32)
    before = ctypes.c_int.in_dll(fake, "fake_launches").value
    for _ in range(10):
        run(1.0, x, y, 7)
    assert ctypes.c_int.in_dll(fake, "fake_launches").value == before + 10


def test_struct_half_and_small_arguments(fake):
    mod = ql.compile(SAXPY, device="hip")
    k = mod.get_kernel("mixed")
    assert [(p.size, p.align) for p in k.params] == [(16, 8), (2, 2), (1, 1), (8, 8), (1, 1)]
    expect(fake, k)
    pair = struct.pack("<b7xd", -3, 1.25)
    k[1, 1](pair, 0.5, -7, 2**64 - 1, True)
    rec = bytes(last(fake).bytes[:28])
    assert rec == pair + np.float16(0.5).tobytes() + b"\xf9" + struct.pack("<Q", 2**64 - 1) + b"\x01"


def test_memory_round_trip_and_globals(fake):
    dev = ql.device("hip")
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    buf = ql.asarray(a, device=dev)
    assert buf.device is dev and np.array_equal(buf.numpy(), a)
    buf.copy_from(a * 2)
    assert np.array_equal(np.asarray(buf), a * 2)
    assert not ql.zeros((5,), np.float64, device=dev).numpy().any()
    iface = buf.__cuda_array_interface__
    assert iface["data"] == (buf.ptr, False) and iface["shape"] == (3, 4)
    assert buf.__dlpack_device__() == (10, 0)
    mod = ql.compile(SAXPY, device=dev)
    table = mod.get_global("table")
    assert table.shape == (8,) and table.dtype == np.float32
    table.copy_from(np.ones(8, np.float32))
    assert mod.get_global("coef").shape == ()
    with pytest.raises(KeyError, match="no __device__ or __constant__ variable 'missing'"):
        mod.get_global("missing")


def test_other_libraries_arrays(fake):
    dev = ql.device("hip")
    mod = ql.compile(SAXPY, device=dev)
    k = mod.saxpy
    x = ql.asarray(np.ones(4, np.float32), device=dev)

    class ViaDLPack:       # a ROCm array known only by DLPack (device type 10)
        def __init__(self, buf):
            self.buf = buf

        def __dlpack__(self, stream=None):
            return self.buf.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.buf.__dlpack_device__()

    class TorchLike:       # torch on ROCm: is_cuda, get_device() = the HIP ordinal
        is_cuda = True

        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

        def is_contiguous(self):
            return True

        def get_device(self):
            return 0

    expect(fake, k)
    k[1, 4](1.0, ViaDLPack(x), TorchLike(x.ptr), 4)
    assert bytes(last(fake).bytes[4:20]) == struct.pack("<QQ", x.ptr, x.ptr)
    cpu = ql.asarray(np.ones(4, np.float32), device="cpu")
    with pytest.raises(ql.LaunchValueError, match=r"lives on DLPack device \(1, 0\), not on "
                                                  r"the kernel's device hip:0"):
        k[1, 4](1.0, ViaDLPack(cpu), x, 4)
    with pytest.raises(ql.LaunchTypeError, match="host memory|NumPy"):
        k[1, 4](1.0, np.ones(4, np.float32), x, 4)


def test_launch_failure_names_the_kernel_and_status(fake):
    k = ql.compile(SAXPY, device="hip").saxpy
    x = ql.zeros(4, device="hip")
    fake.fake_fail_next(700)
    with pytest.raises(ql.LaunchError, match=r"launch of kernel 'saxpy' failed: "
                                             r"hipErrorIllegalAddress \(700\)"):
        k[1, 4](1.0, x, x, 4)


def test_streams_events_and_no_graphs(fake):
    dev = ql.device("hip")
    k = ql.compile(SAXPY, device=dev).saxpy
    x = ql.zeros(4, device=dev)
    s = ql.Stream(device=dev)
    expect(fake, k)
    k[1, 4, 0, s](1.0, x, x, 4)
    assert last(fake).stream == s.handle != 0
    start, end = ql.Event(dev), ql.Event(dev)
    start.record(s)
    end.record(s)
    s.wait(end)
    s.synchronize()
    assert s.query() and end.query() and start.elapsed_time(end) == 1.5
    s.close()
    with pytest.raises(ql.LaunchError, match="graphs on HIP are not built yet"):
        with ql.graph(device=dev):
            pass


def test_wave_size_mismatch_is_refused(fake, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_WAVE", "32")
    with pytest.raises(ql.CompileError, match="compiled for wave64 but hip:0 runs wave32"):
        ql.compile(SAXPY, device="hip")


def test_wave32_gpu(fake, monkeypatch):
    monkeypatch.setenv("FAKE_HIP_ARCH", "gfx1030")
    monkeypatch.setenv("FAKE_HIP_WAVE", "32")
    src = "__global__ void w(unsigned *o) { o[0] = __ballot_sync(0xffffffff, 1); }"
    mod = ql.compile(src, device="hip")
    assert mod._program.wave_size == 32 and mod._program.arch == "gfx1030"


def test_debug_build(fake):
    mod = ql.compile(SAXPY, device="hip", debug=True)
    assert mod.debug and "-O0" in mod._program.options
    x = ql.zeros(4, device="hip")
    expect(fake, mod.saxpy)
    mod.saxpy[1, 4](1.0, x, x, 4)
    assert last(fake).name == b"saxpy"

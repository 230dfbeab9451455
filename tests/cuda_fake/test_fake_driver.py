"""Tests of the fake CUDA driver itself (fake_libcuda.c), through ctypes.

Each test gets a fresh copy of the library (the `drv` fixture), so driver
state (cuInit, contexts, allocations, launch records) never leaks between
tests. NVRTC-backed tests skip without NVRTC; the rest use hand-written PTX
and hand-made cubins (minicubin.py)."""
import ctypes
import struct
import threading
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint, c_ulonglong, c_void_p

import pytest

from . import nvrtc
from .api import last_launch, param_layout
from .minicubin import make_cubin

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(), reason="NVRTC (libnvrtc) not importable")

MAX_DYNAMIC_SHARED = 8
CU_STREAM_LEGACY, CU_STREAM_PER_THREAD = 1, 2


def ok(rc):
    assert rc == 0, f"CUresult {rc}"


def init(drv, devices=None, monkeypatch=None):
    if devices is not None:
        monkeypatch.setenv("FAKE_CUDA_DEVICES", str(devices))
    ok(drv.cuInit(0))


def make_current(drv, dev=0):
    ctx = c_void_p()
    ok(drv.cuDevicePrimaryCtxRetain(byref(ctx), dev))
    ok(drv.cuCtxSetCurrent(ctx))
    return ctx.value


@pytest.fixture
def cu(drv):
    """An initialised fake driver with device 0's primary context current."""
    init(drv)
    drv.ctx = make_current(drv)
    return drv


def alloc(drv, n):
    p = c_ulonglong()
    ok(drv.cuMemAlloc_v2(byref(p), n))
    return p.value


def load(drv, image: bytes):
    """(CUresult, module handle) for an image."""
    mod = c_void_p()
    rc = drv.cuModuleLoadData(byref(mod), ctypes.c_char_p(image))
    return rc, mod.value


def function(drv, mod, name):
    f = c_void_p()
    ok(drv.cuModuleGetFunction(byref(f), mod, name.encode()))
    return f.value


def global_(drv, mod, name):
    p, n = c_ulonglong(), c_size_t()
    ok(drv.cuModuleGetGlobal_v2(byref(p), byref(n), mod, name.encode()))
    return p.value, n.value


def launch(drv, f, args, grid=(1, 1, 1), block=(1, 1, 1), shared=0, stream=None, params="auto", extra=None):
    """Launches f with ctypes objects as arguments; returns the CUresult."""
    if params == "auto":
        params = (c_void_p * max(1, len(args)))(*[ctypes.addressof(a) for a in args])
    return drv.cuLaunchKernel(f, *grid, *block, shared, stream, params, extra)


# ---------------------------------------------------------------- hand-written images

PTX = rb"""//
// hand-written, in NVVM's style
//
.version 8.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 4 .u32 counter;
.visible .global .align 4 .b8 table[12] = {1, 0, 0, 0, 2, 0, 0, 0, 255, 255, 255, 255};
.global .align 8 .f64 scale = 0d3FF8000000000000;
.const .align 4 .f32 coeffs[3] = {0f3F800000, 0f40000000, 0fC0600000};
.global .align 4 .s32 neg[2] = {-5, 7};
.global .align 16 .v4 .f32 vecs[2];
.global .align 8 .u64 ptrs[2] = {generic(table), generic(table)+4};
.extern .global .align 4 .u32 ext_var;
.shared .align 4 .b8 sh[64];

.func helper(.param .b32 helper_param_0)
{
	ret;
}
/* not a kernel: .entry fake(.param .u32 x) */
.visible .entry mixed(
	.param .u32 mixed_param_0,
	.param .u64 .ptr .global .align 16 mixed_param_1,
	.param .u8 mixed_param_2,
	.param .align 8 .b8 mixed_param_3[24],
	.param .f32 mixed_param_4,
	.param .align 16 .b8 mixed_param_5[16],
	.param .v2 .u32 mixed_param_6
)
.maxntid 256, 1, 1
{
	.reg .b32 %r<3>;
	.global .u32 not_module_scope;
	ld.param.u32 %r1, [mixed_param_0];
	ret;
}
.entry noparams
{
	ret;
}
.weak .entry _Z4tmplIfEvPT_(
	.param .u64 _Z4tmplIfEvPT__param_0
)
{
	ret;
}
"""
# (size, align, offset) per parameter of `mixed`; 88 bytes in all
MIXED = [(4, 4, 0), (8, 8, 8), (1, 1, 16), (24, 8, 24), (4, 4, 48), (16, 16, 64), (8, 8, 80)]


def mixed_args():
    """Arguments for `mixed`, and the 88 bytes the driver must see."""
    args = [c_uint(0xDEADBEEF), c_ulonglong(0x1122334455667788), ctypes.c_ubyte(0x7F),
            (ctypes.c_ubyte * 24)(*range(1, 25)), ctypes.c_float(2.5),
            (ctypes.c_ubyte * 16)(*range(100, 116)), (c_uint * 2)(7, 9)]
    want = bytearray(88)
    struct.pack_into("<I", want, 0, 0xDEADBEEF)
    struct.pack_into("<Q", want, 8, 0x1122334455667788)
    want[16] = 0x7F
    want[24:48] = bytes(range(1, 25))
    struct.pack_into("<f", want, 48, 2.5)
    want[64:80] = bytes(range(100, 116))
    struct.pack_into("<II", want, 80, 7, 9)
    return args, bytes(want)


# ---------------------------------------------------------------- driver-level basics

def test_version_and_error_names(drv):
    v = c_int()
    ok(drv.cuDriverGetVersion(byref(v)))
    assert v.value == 12080
    s = c_char_p()
    ok(drv.cuGetErrorName(201, byref(s)))
    assert s.value == b"CUDA_ERROR_INVALID_CONTEXT"
    ok(drv.cuGetErrorString(2, byref(s)))
    assert s.value == b"out of memory"
    for code in (0, 1, 2, 3, 100, 101, 200, 201, 209, 218, 222, 400, 500, 701, 719, 999):
        ok(drv.cuGetErrorName(code, byref(s)))
        assert s.value.startswith(b"CUDA_")
    assert drv.cuGetErrorName(12345, byref(s)) == 1 and s.value is None


def test_calls_before_cuinit_are_not_initialized(drv):
    n, ctx = c_int(), c_void_p()
    assert drv.cuDeviceGetCount(byref(n)) == 3
    assert drv.cuDevicePrimaryCtxRetain(byref(ctx), 0) == 3
    assert drv.cuMemAlloc_v2(byref(c_ulonglong()), 16) == 3


def test_get_proc_address_resolves_base_names(drv):
    pfn, status = c_void_p(), c_int(-1)
    for base, real in [("cuMemAlloc", "cuMemAlloc_v2"), ("cuLaunchKernel", "cuLaunchKernel"),
                       ("cuModuleGetGlobal", "cuModuleGetGlobal_v2"), ("cuStreamDestroy", "cuStreamDestroy_v2"),
                       ("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2"),
                       ("cuMemcpyHtoD", "cuMemcpyHtoD_v2"), ("cuDeviceTotalMem", "cuDeviceTotalMem_v2")]:
        ok(drv.cuGetProcAddress_v2(base.encode(), byref(pfn), 12000, 0, byref(status)))
        assert status.value == 0
        assert pfn.value == ctypes.cast(getattr(drv, real), c_void_p).value
    ok(drv.cuGetProcAddress(b"cuInit", byref(pfn), 12000, 0))
    assert pfn.value == ctypes.cast(drv.cuInit, c_void_p).value
    # the function pointer works as the real signature
    proto = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(c_int))
    ok(drv.cuGetProcAddress(b"cuDriverGetVersion", byref(pfn), 12000, 0))
    v = c_int()
    ok(proto(pfn.value)(byref(v)))
    assert v.value == 12080
    assert drv.cuGetProcAddress_v2(b"cuNoSuchThing", byref(pfn), 12000, 0, byref(status)) == 500
    assert status.value == 1 and pfn.value is None
    assert drv.cuGetProcAddress_v2(b"cuMemAlloc_v2", byref(pfn), 12000, 0, byref(status)) == 500
    assert drv.cuGetProcAddress(b"cuInit", byref(pfn), 13000, 0) == 1  # newer than the driver


def test_init_error_env(drv, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_INIT_ERROR", "100")
    assert drv.cuInit(0) == 100
    assert drv.cuDeviceGetCount(byref(c_int())) == 100
    monkeypatch.delenv("FAKE_CUDA_INIT_ERROR")
    ok(drv.cuInit(0))
    assert drv.cuInit(1) == 1


def test_zero_devices(drv, monkeypatch):
    init(drv, 0, monkeypatch)
    n, d = c_int(-1), c_int()
    ok(drv.cuDeviceGetCount(byref(n)))
    assert n.value == 0
    assert drv.cuDeviceGet(byref(d), 0) == 101


def test_device_attributes(drv, monkeypatch):
    init(drv, 3, monkeypatch)
    n, d, v = c_int(), c_int(), c_int()
    ok(drv.cuDeviceGetCount(byref(n)))
    assert n.value == 3
    ok(drv.cuDeviceGet(byref(d), 2))
    assert d.value == 2
    assert drv.cuDeviceGet(byref(d), 3) == 101
    assert drv.cuDeviceGet(byref(d), -1) == 101
    want = {1: 1024, 2: 1024, 3: 1024, 4: 64, 5: 2147483647, 6: 65535, 7: 65535, 8: 49152, 10: 32,
            16: 132, 75: 9, 76: 0, 97: 232448, 9: 0, 12: 0}
    for dev in range(3):
        for attr, value in want.items():
            ok(drv.cuDeviceGetAttribute(byref(v), attr, dev))
            assert v.value == value, attr
    assert drv.cuDeviceGetAttribute(byref(v), 1, 3) == 101
    assert drv.cuDeviceGetAttribute(byref(v), 0, 0) == 1
    name = ctypes.create_string_buffer(256)
    ok(drv.cuDeviceGetName(name, 256, 1))
    assert b"H100" in name.value
    small = ctypes.create_string_buffer(8)
    ok(drv.cuDeviceGetName(small, 8, 0))
    assert len(small.value) == 7
    total = c_size_t()
    ok(drv.cuDeviceTotalMem_v2(byref(total), 0))
    assert total.value == 80 << 30


def test_compute_capability_env(drv, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_CC", "8.6")
    init(drv)
    v = c_int()
    ok(drv.cuDeviceGetAttribute(byref(v), 75, 0))
    assert v.value == 8
    ok(drv.cuDeviceGetAttribute(byref(v), 76, 0))
    assert v.value == 6


# ---------------------------------------------------------------- contexts

def test_primary_contexts_are_per_device(drv, monkeypatch):
    init(drv, 2, monkeypatch)
    c0, c0b, c1 = c_void_p(), c_void_p(), c_void_p()
    ok(drv.cuDevicePrimaryCtxRetain(byref(c0), 0))
    ok(drv.cuDevicePrimaryCtxRetain(byref(c0b), 0))
    ok(drv.cuDevicePrimaryCtxRetain(byref(c1), 1))
    assert c0.value == c0b.value != c1.value
    d, cur = c_int(), c_void_p()
    ok(drv.cuCtxSetCurrent(c1))
    ok(drv.cuCtxGetDevice(byref(d)))
    ok(drv.cuCtxGetCurrent(byref(cur)))
    assert d.value == 1 and cur.value == c1.value
    ok(drv.cuCtxSetCurrent(None))
    ok(drv.cuCtxGetCurrent(byref(cur)))
    assert cur.value is None
    assert drv.cuCtxGetDevice(byref(d)) == 201
    assert drv.cuCtxSynchronize() == 201
    assert drv.cuCtxSetCurrent(c_void_p(c1.value + 4096)) == 201
    # released to zero: the context is gone
    ok(drv.cuDevicePrimaryCtxRelease_v2(1))
    assert drv.cuCtxSetCurrent(c1) == 201
    assert drv.cuDevicePrimaryCtxRelease_v2(1) == 201
    assert drv.cuDevicePrimaryCtxRelease_v2(2) == 101


def test_current_context_is_per_thread(cu):
    mod = load(cu, PTX)[1]
    f = function(cu, mod, "noparams")
    seen = {}

    def worker():
        cur, p = c_void_p(), c_ulonglong()
        seen["current"] = (cu.cuCtxGetCurrent(byref(cur)), cur.value)
        seen["alloc"] = cu.cuMemAlloc_v2(byref(p), 64)
        seen["launch"] = launch(cu, f, [])
        seen["load"] = load(cu, PTX)[0]
        seen["sync"] = cu.cuCtxSynchronize()
        seen["free"] = cu.cuMemFree_v2(c_ulonglong(0))
        seen["stream"] = cu.cuStreamCreate(byref(c_void_p()), 0)
        seen["set"] = cu.cuCtxSetCurrent(cu.ctx)
        seen["launch_after"] = launch(cu, f, [])
        seen["alloc_after"] = cu.cuMemAlloc_v2(byref(p), 64)
        cu.cuMemFree_v2(p)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["current"] == (0, None)
    for key in ("alloc", "launch", "load", "sync", "free", "stream"):
        assert seen[key] == 201, key
    assert seen["set"] == seen["launch_after"] == seen["alloc_after"] == 0
    cur = c_void_p()
    ok(cu.cuCtxGetCurrent(byref(cur)))
    assert cur.value == cu.ctx  # the main thread's binding is untouched
    assert cu.fake_cuda_launch_count() == 1


# ---------------------------------------------------------------- memory

def test_memory_round_trip(cu):
    a, b = alloc(cu, 1000), alloc(cu, 1000)
    assert a % 256 == 0 and b % 256 == 0 and a != b
    src = bytes(range(256)) * 3 + bytes(232)
    ok(cu.cuMemcpyHtoD_v2(a, src, 1000))
    assert ctypes.string_at(a, 1000) == src  # device pointers are host addresses
    ok(cu.cuMemcpyDtoD_v2(b, a, 1000))
    out = ctypes.create_string_buffer(1000)
    ok(cu.cuMemcpyDtoH_v2(out, b, 1000))
    assert out.raw == src
    ok(cu.cuMemsetD8_v2(b + 10, 0xAB, 20))
    ok(cu.cuMemcpyDtoH_v2(out, b, 40))
    assert out.raw[:40] == src[:10] + b"\xab" * 20 + src[30:40]
    fresh = alloc(cu, 300)
    assert ctypes.string_at(fresh, 300) == bytes(300)  # zeroed
    # interior pointers are fine; running past the end is not
    ok(cu.cuMemcpyDtoH_v2(out, a + 990, 10))
    assert cu.cuMemcpyDtoH_v2(out, a + 990, 11) == 1
    assert cu.cuMemcpyHtoD_v2(a + 1000, src, 1) == 1
    assert cu.cuMemsetD8_v2(a, 0, 1001) == 1
    host = ctypes.create_string_buffer(64)
    assert cu.cuMemcpyHtoD_v2(ctypes.addressof(host), src, 8) == 1  # a host pointer is not device memory
    assert cu.cuMemcpyDtoD_v2(a, ctypes.addressof(host), 8) == 1
    ok(cu.cuMemcpyHtoD_v2(a, None, 0))  # zero bytes: nothing to check


def test_alloc_and_free_errors(cu):
    p = c_ulonglong()
    assert cu.cuMemAlloc_v2(byref(p), 0) == 1
    assert cu.cuMemAlloc_v2(None, 8) == 1
    a = alloc(cu, 64)
    assert cu.fake_cuda_alloc_count() == 1
    assert cu.cuMemFree_v2(a + 8) == 1
    ok(cu.cuMemFree_v2(a))
    assert cu.cuMemFree_v2(a) == 1  # double free
    assert cu.cuMemFree_v2(0x1234) == 1
    assert cu.fake_cuda_alloc_count() == 0
    assert cu.cuMemcpyHtoD_v2(a, b"x", 1) == 1  # freed memory is not device memory any more


def test_memory_limit(drv, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_MEM_LIMIT", "1000")
    monkeypatch.setenv("FAKE_CUDA_DEVICES", "2")
    init(drv)
    make_current(drv, 0)
    p = c_ulonglong()
    a = alloc(drv, 600)
    assert drv.cuMemAlloc_v2(byref(p), 600) == 2
    assert drv.cuMemAlloc_v2(byref(p), 1 << 62) == 2
    alloc(drv, 400)
    make_current(drv, 1)  # the limit is per device
    alloc(drv, 1000)
    make_current(drv, 0)
    ok(drv.cuMemFree_v2(a))
    alloc(drv, 600)
    total = c_size_t()
    ok(drv.cuDeviceTotalMem_v2(byref(total), 0))
    assert total.value == 1000


def test_pointer_attributes(drv, monkeypatch):
    init(drv, 2, monkeypatch)
    make_current(drv, 0)
    ctx1 = make_current(drv, 1)
    a = alloc(drv, 1000)
    ctx, mtype, dptr, ordinal = c_void_p(), c_uint(), c_ulonglong(), c_int()
    ok(drv.cuPointerGetAttribute(byref(ctx), 1, a))
    ok(drv.cuPointerGetAttribute(byref(mtype), 2, a + 17))
    ok(drv.cuPointerGetAttribute(byref(dptr), 3, a + 17))
    ok(drv.cuPointerGetAttribute(byref(ordinal), 9, a))
    assert (ctx.value, mtype.value, dptr.value, ordinal.value) == (ctx1, 2, a + 17, 1)
    start, size = c_ulonglong(), c_size_t()
    ok(drv.cuPointerGetAttribute(byref(start), 11, a + 5))
    ok(drv.cuPointerGetAttribute(byref(size), 12, a + 5))
    assert (start.value, size.value) == (a, 1000)
    host = ctypes.create_string_buffer(16)
    assert drv.cuPointerGetAttribute(byref(mtype), 2, ctypes.addressof(host)) == 1
    assert drv.cuPointerGetAttribute(byref(mtype), 2, a + 1000) == 1
    assert drv.cuPointerGetAttribute(byref(mtype), 2, 0) == 1
    assert drv.cuPointerGetAttribute(byref(mtype), 5, a) == 1
    ok(drv.cuMemFree_v2(a))
    assert drv.cuPointerGetAttribute(byref(mtype), 2, a) == 1


def test_streams(cu):
    s = c_void_p()
    ok(cu.cuStreamCreate(byref(s), 0))
    ok(cu.cuStreamSynchronize(s))
    for special in (None, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD):
        ok(cu.cuStreamSynchronize(special))
    f = function(cu, load(cu, PTX)[1], "noparams")
    ok(launch(cu, f, [], stream=s))
    assert last_launch(cu)["stream"] == s.value
    ok(cu.cuStreamDestroy_v2(s))
    assert cu.cuStreamSynchronize(s) == 400
    assert cu.cuStreamDestroy_v2(s) == 400
    assert launch(cu, f, [], stream=s) == 400
    assert cu.cuStreamCreate(byref(s), 7) == 1


# ---------------------------------------------------------------- PTX modules

def test_ptx_params_and_globals(cu):
    rc, mod = load(cu, PTX)
    ok(rc)
    assert param_layout(cu, function(cu, mod, "mixed")) == MIXED
    assert param_layout(cu, function(cu, mod, "noparams")) == []
    assert param_layout(cu, function(cu, mod, "_Z4tmplIfEvPT_")) == [(8, 8, 0)]
    f = c_void_p()
    for missing in (b"helper", b"fake", b"vprintf", b"mixed_param_0"):
        assert cu.cuModuleGetFunction(byref(f), mod, missing) == 500
    sizes = {name: global_(cu, mod, name)[1] for name in
             ("counter", "table", "scale", "coeffs", "neg", "vecs", "ptrs")}
    assert sizes == {"counter": 4, "table": 12, "scale": 8, "coeffs": 12, "neg": 8, "vecs": 32, "ptrs": 16}
    def read(name):
        return ctypes.string_at(*global_(cu, mod, name))

    assert read("counter") == bytes(4)
    assert struct.unpack("<3i", read("table")) == (1, 2, -1)
    assert struct.unpack("<d", read("scale")) == (1.5,)
    assert struct.unpack("<3f", read("coeffs")) == (1.0, 2.0, -3.5)
    assert struct.unpack("<2i", read("neg")) == (-5, 7)
    assert read("ptrs") == bytes(16)  # address initialisers are left 0
    p = c_ulonglong()
    for missing in (b"ext_var", b"sh", b"not_module_scope", b"nothing"):
        assert cu.cuModuleGetGlobal_v2(byref(p), None, mod, missing) == 500
    # globals are device memory of the module's device, but not the user's to free
    addr, _ = global_(cu, mod, "table")
    ordinal = c_int(-1)
    ok(cu.cuPointerGetAttribute(byref(ordinal), 9, addr))
    assert ordinal.value == 0
    ok(cu.cuMemcpyHtoD_v2(addr, b"\x05\x00\x00\x00", 4))
    assert cu.cuMemFree_v2(addr) == 1
    assert cu.fake_cuda_alloc_count() == 0
    ok(cu.cuModuleUnload(mod))
    assert cu.cuPointerGetAttribute(byref(ordinal), 9, addr) == 1


def test_module_load_data_ex_and_unload(cu):
    mod = c_void_p()
    ok(cu.cuModuleLoadDataEx(byref(mod), c_char_p(PTX), 0, None, None))
    f = function(cu, mod.value, "mixed")
    assert cu.fake_cuda_module_count() == 1
    ok(cu.cuModuleUnload(mod))
    assert cu.fake_cuda_module_count() == 0
    assert cu.cuModuleUnload(mod) == 400
    out = c_void_p()
    assert cu.cuModuleGetFunction(byref(out), mod, b"mixed") == 400
    assert cu.cuModuleGetGlobal_v2(None, None, mod, b"counter") == 400
    args, _ = mixed_args()
    assert launch(cu, f, args) == 400  # a function of an unloaded module
    assert cu.fake_cuda_param_layout(f, None, None, 0) == -1


def test_bad_images(cu, monkeypatch):
    assert load(cu, b"this is not a module")[0] == 200
    assert load(cu, b"")[0] == 200
    assert load(cu, b"\xba\x55\xed\x50" + bytes(60))[0] == 200  # a fatbin is not supported
    assert cu.cuModuleLoadData(byref(c_void_p()), None) == 1
    bad = [b".version 8.0\n.target sm_90\n.entry k(.param .u32 a, .oops b)\n{ ret; }\n",
           b".version 8.0\n.target sm_90\n.entry k(.param .u32 a\n",
           b".version 8.0\n.target sm_90\n.entry (.param .u32 a)\n{ ret; }\n"]
    for text in bad:
        assert load(cu, text)[0] == 218, text
    assert load(cu, PTX.replace(b".target sm_90", b".target sm_100"))[0] == 218
    ok(load(cu, PTX.replace(b".target sm_90", b".target sm_80"))[0])  # PTX JITs forward
    monkeypatch.setenv("FAKE_CUDA_PTX_ISA_MAX", "7.8")
    assert load(cu, PTX)[0] == 222
    monkeypatch.setenv("FAKE_CUDA_PTX_ISA_MAX", "8.0")
    ok(load(cu, PTX)[0])
    assert cu.fake_cuda_module_count() == 2  # the failed loads left nothing behind


# ---------------------------------------------------------------- cubins (hand-made)

def test_minicubin_params_and_globals(cu):
    image = make_cubin({"k": [(4, 0), (8, 8), (24, 16), (2, 40), (3, 42)], "empty": []},
                       objects=[("zeros", 40, None), ("init", 8, struct.pack("<q", -42))])
    rc, mod = load(cu, image)
    ok(rc)
    assert param_layout(cu, function(cu, mod, "k")) == [(4, 4, 0), (8, 8, 8), (24, 8, 16), (2, 2, 40), (3, 1, 42)]
    assert param_layout(cu, function(cu, mod, "empty")) == []
    addr, size = global_(cu, mod, "zeros")
    assert size == 40 and ctypes.string_at(addr, 40) == bytes(40)
    addr, size = global_(cu, mod, "init")
    assert struct.unpack("<q", ctypes.string_at(addr, size)) == (-42,)
    p = c_ulonglong()
    assert cu.cuModuleGetGlobal_v2(byref(p), None, mod, b".nv.reservedSmem") == 500
    assert cu.cuModuleGetFunction(byref(c_void_p()), mod, b"zeros") == 500


def test_minicubin_kparam_v2(cu):
    rc, mod = load(cu, make_cubin({"big": [(5000, 0), (8, 5000), (8, 5008)]}, v2=True))
    ok(rc)
    assert param_layout(cu, function(cu, mod, "big")) == [(5000, 8, 0), (8, 8, 5000), (8, 8, 5008)]


@pytest.mark.parametrize("sm,abi,rc", [(90, 8, 0), (90, 7, 0), (100, 8, 209), (120, 8, 209),
                                       (80, 8, 209), (89, 8, 209), (91, 8, 209), (100, 7, 209)])
def test_cubin_arch(cu, sm, abi, rc):
    assert load(cu, make_cubin({"k": []}, sm=sm, abi=abi))[0] == rc


def test_cubin_wrong_machine(cu):
    assert load(cu, make_cubin({"k": []}, machine=62))[0] == 200  # x86-64 ELF
    elf32 = bytearray(make_cubin({"k": []}))
    elf32[4] = 1
    assert load(cu, bytes(elf32))[0] == 200


# ---------------------------------------------------------------- launches

def test_launch_records_exact_bytes(cu):
    f = function(cu, load(cu, PTX)[1], "mixed")
    args, want = mixed_args()
    ok(launch(cu, f, args, grid=(3, 2, 1), block=(128, 2, 1), shared=1024))
    rec = last_launch(cu)
    assert rec == {"name": "mixed", "grid": (3, 2, 1), "block": (128, 2, 1), "shared": 1024, "stream": None,
                   "nparams": 7, "params": want, "nbytes": 88}
    # a short buffer gets a prefix; the size is still the whole
    name = ctypes.create_string_buffer(3)
    buf, nbytes = (ctypes.c_ubyte * 10)(), c_int()
    assert cu.fake_cuda_last_launch(name, 3, None, None, None, buf, 10, byref(nbytes), None) == 0
    assert name.value == b"mi" and bytes(buf) == want[:10] and nbytes.value == 88


def test_launch_ring_and_reset(cu):
    mod = load(cu, PTX)[1]
    f = function(cu, mod, "_Z4tmplIfEvPT_")
    assert last_launch(cu) is None and cu.fake_cuda_launch_count() == 0
    for i in range(70):
        ok(launch(cu, f, [c_ulonglong(i)], grid=(i + 1, 1, 1)))
    assert cu.fake_cuda_launch_count() == 70
    assert last_launch(cu)["params"] == struct.pack("<Q", 69)
    assert last_launch(cu, 63)["grid"] == (7, 1, 1)
    assert last_launch(cu, 64) is None
    cu.fake_cuda_reset()
    assert cu.fake_cuda_launch_count() == 0 and last_launch(cu) is None
    ok(launch(cu, f, [c_ulonglong(5)]))
    assert last_launch(cu)["name"] == "_Z4tmplIfEvPT_"


def test_launch_validation(cu):
    mod = load(cu, PTX)[1]
    f, none = function(cu, mod, "mixed"), function(cu, mod, "noparams")
    args, _ = mixed_args()
    bad = [{"grid": (0, 1, 1)}, {"grid": (1, 0, 1)}, {"block": (1, 1, 0)}, {"grid": (2**31, 1, 1)},
           {"grid": (1, 65536, 1)}, {"grid": (1, 1, 65536)}, {"block": (1025, 1, 1)}, {"block": (1, 1, 65)},
           {"block": (512, 2, 2)}, {"block": (32, 32, 2)}, {"shared": 49153}, {"params": None},
           {"extra": (c_void_p * 1)()}]
    for kw in bad:
        assert launch(cu, f, args, **kw) == 1, kw
    ok(launch(cu, f, args, grid=(2**31 - 1, 65535, 65535), block=(1024, 1, 1), shared=49152))
    ok(launch(cu, f, args, block=(1, 1024, 1)))
    ok(launch(cu, f, args, block=(16, 1, 64)))
    ok(launch(cu, none, [], params=None))  # no parameters: params may be NULL
    assert launch(cu, 0x1000, []) == 400
    assert launch(cu, f, args, stream=0x1000) == 400
    assert cu.fake_cuda_launch_count() == 4


def test_dynamic_shared_memory_attribute(cu):
    f = function(cu, load(cu, PTX)[1], "noparams")
    v = c_int()
    ok(cu.cuFuncGetAttribute(byref(v), MAX_DYNAMIC_SHARED, f))
    assert v.value == 49152
    assert launch(cu, f, [], shared=100000) == 1
    ok(cu.cuFuncSetAttribute(f, MAX_DYNAMIC_SHARED, 100000))
    ok(cu.cuFuncGetAttribute(byref(v), MAX_DYNAMIC_SHARED, f))
    assert v.value == 100000
    ok(launch(cu, f, [], shared=100000))
    assert launch(cu, f, [], shared=100001) == 1
    ok(cu.cuFuncSetAttribute(f, MAX_DYNAMIC_SHARED, 232448))
    ok(launch(cu, f, [], shared=232448))
    assert cu.cuFuncSetAttribute(f, MAX_DYNAMIC_SHARED, 232449) == 1
    assert cu.cuFuncSetAttribute(f, 0, 1) == 1  # read-only attribute
    assert cu.cuFuncSetAttribute(0x1000, MAX_DYNAMIC_SHARED, 0) == 400
    ok(cu.cuFuncGetAttribute(byref(v), 0, f))
    assert v.value == 1024
    assert cu.cuFuncGetAttribute(byref(v), 99, f) == 1


def test_fail_launch_env(cu, monkeypatch):
    f = function(cu, load(cu, PTX)[1], "noparams")
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "719")
    assert launch(cu, f, []) == 719
    assert launch(cu, f, [], block=(0, 1, 1)) == 1  # validation comes first
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "701")
    assert launch(cu, f, []) == 701
    monkeypatch.delenv("FAKE_CUDA_FAIL_LAUNCH")
    ok(launch(cu, f, []))
    assert cu.fake_cuda_launch_count() == 1  # failed launches are not recorded


def test_function_of_another_context(drv, monkeypatch):
    init(drv, 2, monkeypatch)
    make_current(drv, 0)
    f = function(drv, load(drv, PTX)[1], "noparams")
    make_current(drv, 1)
    assert launch(drv, f, []) == 400
    s = c_void_p()
    ok(drv.cuStreamCreate(byref(s), 0))
    make_current(drv, 0)
    assert launch(drv, f, [], stream=s) == 201  # a stream of another context
    ok(launch(drv, f, []))


def test_threads_hammer_the_tables(cu):
    f = function(cu, load(cu, PTX)[1], "_Z4tmplIfEvPT_")
    errors = []

    def worker(k):
        try:
            ok(cu.cuCtxSetCurrent(cu.ctx))
            for i in range(200):
                p = alloc(cu, 64 + i)
                ok(cu.cuMemcpyHtoD_v2(p, struct.pack("<Q", p), 8))
                ok(launch(cu, f, [c_ulonglong(p)]))
                ok(cu.cuMemFree_v2(p))
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cu.fake_cuda_launch_count() == 800 and cu.fake_cuda_alloc_count() == 0


# ---------------------------------------------------------------- against NVRTC output

KERNELS = r"""
struct __align__(2) __half { unsigned short x; };  // cuda_fp16.h's layout; NVRTC ships no headers here
struct Mixed { char c; double d; int i; };
struct Odd { char c[3]; };
struct F2 { float a, b; };
struct alignas(16) A16 { float x[4]; };
struct Big { char b[5000]; };
extern "C" __global__ void scalars(int a, float* p, char c, double d, short s, unsigned long long u, bool b) {}
extern "C" __global__ void structs(Mixed m, Odd o, F2 f, char c, F2 g, A16 a) {}
extern "C" __global__ void vectors(float4 f4, int2 i2, double2 d2, char3 c3, __half h, float x) {}
extern "C" __global__ void big(Big b, int* p, double d) {}
extern "C" __global__ void none() {}
template <typename T, int N> __global__ void tmpl(T* out, T v) { if (out) out[N] = v; }
template __global__ void tmpl<double, 3>(double*, double);
template __global__ void tmpl<__half, 1>(__half*, __half);
__device__ int dev_counter;
__device__ float dev_table[100];
__device__ int dev_init = 42;
__device__ double dev_double = -2.25;
__constant__ double const_coeffs[7];
__constant__ float const_init[3] = {1.0f, 2.0f, -3.5f};
extern "C" __global__ void uses_globals(float* o) { o[0] = dev_table[1] + dev_counter + dev_init + const_init[2] + const_coeffs[3] + dev_double; }
"""
# name -> [(size, PTX alignment, offset)]
LAYOUTS = {
    "scalars": [(4, 4, 0), (8, 8, 8), (1, 1, 16), (8, 8, 24), (2, 2, 32), (8, 8, 40), (1, 1, 48)],
    "structs": [(24, 8, 0), (3, 1, 24), (8, 4, 28), (1, 1, 36), (8, 4, 40), (16, 16, 48)],
    "vectors": [(16, 16, 0), (8, 8, 16), (16, 16, 32), (3, 1, 48), (2, 2, 52), (4, 4, 56)],
    "big": [(5000, 1, 0), (8, 8, 5000), (8, 8, 5008)],
    "none": [],
    "tmpl<double, 3>": [(8, 8, 0), (8, 8, 8)],
    "tmpl<__half, 1>": [(8, 8, 0), (2, 2, 8)],
    "uses_globals": [(8, 8, 0)],
}
GLOBALS = {"dev_counter": 4, "dev_table": 400, "dev_init": 4, "dev_double": 8, "const_coeffs": 56, "const_init": 12}


@pytest.fixture(scope="module")
def nvrtc_out():
    if not nvrtc.available():
        pytest.skip("NVRTC (libnvrtc) not importable")
    return nvrtc.compile(KERNELS, "sm_90", names=["tmpl<double, 3>", "tmpl<__half, 1>"])


@needs_nvrtc
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
def test_nvrtc_param_layouts(cu, nvrtc_out, kind):
    ptx, cubin, lowered = nvrtc_out
    rc, mod = load(cu, ptx if kind == "ptx" else cubin)
    ok(rc)
    for name, want in LAYOUTS.items():
        got = param_layout(cu, function(cu, mod, lowered.get(name, name)))
        if kind == "ptx":
            assert got == want, name
        else:  # a cubin records sizes and offsets; its alignments are inferred
            assert [(s, o) for s, _, o in got] == [(s, o) for s, _, o in want], name
            assert all(ga % wa == 0 for (_, ga, _), (_, wa, _) in zip(got, want)), name


@needs_nvrtc
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
def test_nvrtc_globals(cu, nvrtc_out, kind):
    ptx, cubin, _ = nvrtc_out
    mod = load(cu, ptx if kind == "ptx" else cubin)[1]
    assert {name: global_(cu, mod, name)[1] for name in GLOBALS} == GLOBALS
    def read(name):
        return ctypes.string_at(*global_(cu, mod, name))

    assert read("dev_table") == bytes(400)
    assert struct.unpack("<i", read("dev_init")) == (42,)
    assert struct.unpack("<d", read("dev_double")) == (-2.25,)
    assert struct.unpack("<3f", read("const_init")) == (1.0, 2.0, -3.5)
    assert cu.cuModuleGetGlobal_v2(None, None, mod, b"nope") == 500


@needs_nvrtc
@pytest.mark.parametrize("kind", ["ptx", "cubin"])
def test_nvrtc_launch_bytes(cu, nvrtc_out, kind):
    ptx, cubin, lowered = nvrtc_out
    mod = load(cu, ptx if kind == "ptx" else cubin)[1]
    f = function(cu, mod, "structs")

    class Mixed(ctypes.Structure):
        _fields_ = [("c", ctypes.c_char), ("d", ctypes.c_double), ("i", c_int)]

    class F2(ctypes.Structure):
        _fields_ = [("a", ctypes.c_float), ("b", ctypes.c_float)]

    args = [Mixed(b"x", 3.25, -7), (ctypes.c_char * 3)(b"a", b"b", b"c"), F2(1.5, 2.5), ctypes.c_char(b"z"),
            F2(-1.0, 8.0), (ctypes.c_float * 4)(1, 2, 3, 4)]
    ok(launch(cu, f, args, grid=(4, 1, 1), block=(256, 1, 1)))
    want = bytearray(64)
    want[0:24] = bytes(args[0])
    want[24:27] = b"abc"
    want[28:36] = struct.pack("<ff", 1.5, 2.5)
    want[36] = ord("z")
    want[40:48] = struct.pack("<ff", -1.0, 8.0)
    want[48:64] = struct.pack("<4f", 1, 2, 3, 4)
    rec = last_launch(cu)
    assert (rec["name"], rec["nparams"], rec["params"]) == ("structs", 6, bytes(want))
    g = function(cu, mod, lowered["tmpl<__half, 1>"])
    ok(launch(cu, g, [c_ulonglong(0xABCDEF), ctypes.c_uint16(0x3C00)]))
    assert last_launch(cu)["params"] == struct.pack("<QH", 0xABCDEF, 0x3C00)


@needs_nvrtc
def test_nvrtc_archs(cu, monkeypatch):
    src = 'extern "C" __global__ void k(int x) {}'
    for arch, ptx_rc, cubin_rc in [("sm_75", 0, 209), ("sm_80", 0, 209), ("sm_90", 0, 0), ("sm_90a", 0, 0),
                                   ("sm_100", 218, 209), ("sm_120", 218, 209)]:
        ptx, cubin, _ = nvrtc.compile(src, arch)
        assert (load(cu, ptx)[0], load(cu, cubin)[0]) == (ptx_rc, cubin_rc), arch
    ptx, _, _ = nvrtc.compile(src, "sm_90")
    monkeypatch.setenv("FAKE_CUDA_PTX_ISA_MAX", "8.7")  # a CUDA 12.8 driver's ISA
    assert load(cu, ptx)[0] == 222

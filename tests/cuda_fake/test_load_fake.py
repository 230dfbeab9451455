"""ql.load on the fake CUDA driver (cuModuleLoadData): hand-written PTX and
cubins made by minicubin.py, so no NVRTC is needed. Parameters from the PTX
.entry or the cubin's parameter table, typed by a user signature checked
against the binary's sizes; launches reach cuLaunchKernel through the same
fast path with the exact parameter bytes; bad files are clear errors naming
the file; loaded modules pickle."""
import pickle
import shutil
import struct

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch
from .api import load as load_fake
from .minicubin import make_cubin

PTX = """//
// hand-written, as NVRTC writes it
.version 8.0
.target sm_90
.address_size 64

.visible .entry saxpy(
    .param .f32 saxpy_param_0,
    .param .u64 .ptr .global .align 4 saxpy_param_1,
    .param .u64 .ptr .global .align 4 saxpy_param_2,
    .param .u32 saxpy_param_3
)
{
    ret;
}
.visible .entry _Z4fillPii(
    .param .u64 _Z4fillPii_param_0,
    .param .u32 _Z4fillPii_param_1
)
{
    ret;
}
"""
SAXPY_CUBIN = {"saxpy": [(4, 0), (8, 8), (8, 16), (4, 24)]}


@pytest.fixture
def fake(fake_libcuda, tmp_path, monkeypatch):
    """quicklaunch on a fresh copy of the fake driver; no NVRTC needed."""
    import os

    from quicklaunch import devices
    from quicklaunch.backends.cuda import driver
    for name in [n for n in os.environ if n.startswith("FAKE_CUDA_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "libcuda.so.1"
    shutil.copyfile(fake_libcuda, path)
    monkeypatch.setenv("QUICKLAUNCH_LIBCUDA", str(path))
    monkeypatch.setattr(devices, "_devices", {})
    monkeypatch.setattr(devices, "_default_probe", [])
    driver._reset_for_tests()
    yield load_fake(path)
    driver._reset_for_tests()


def _saxpy_bytes(a, x, y, n):
    return struct.pack("<f4xQQi", a, x.ptr, y.ptr, n)


def test_ptx_from_a_file(fake, tmp_path):
    path = tmp_path / "saxpy.ptx"
    path.write_text(PTX)
    mod = ql.load(path, device="cuda")
    assert sorted(mod.kernels) == ["_Z4fillPii", "saxpy"]
    k = mod.saxpy
    assert [(p.size, p.align, p.kind) for p in k.params] == [
        (4, 4, "float32"), (8, 8, "pointer"), (8, 8, "pointer"), (4, 4, "int32")]
    x = ql.zeros(16, np.float32, device="cuda")
    y = ql.zeros(16, np.float32, device="cuda")
    k[1, 16](2.5, x, y, 16)     # the same fast path and conversions as compiled kernels
    got = last_launch(fake)
    assert got["name"] == "saxpy" and got["block"] == (16, 1, 1)
    assert got["params"][:28] == _saxpy_bytes(2.5, x, y, 16)[:28]
    with pytest.raises(ql.LaunchError):
        k[1, 16]("no", x, y, 16)
    # without .ptr (older PTX) a 64-bit parameter is an integer: the signature types it
    fill = ql.load(PTX.encode(), device="cuda", signature="fill(int* out, int n)")
    assert fill.fill is fill["_Z4fillPii"] and fill.fill.params[0].kind == "pointer"
    assert fill.fill.params[0].name == "out" and fill.fill.params[0].ctype == "int *"


def test_cubin_with_a_signature(fake):
    data = make_cubin(SAXPY_CUBIN)
    raw = ql.load(data, device="cuda").saxpy
    assert [(p.size, p.kind) for p in raw.params] == [(4, "struct"), (8, "struct"),
                                                       (8, "struct"), (4, "struct")]
    k = ql.load(data, device="cuda",
                signature="saxpy(float a, const float* x, float* y, int n)").saxpy
    assert [p.kind for p in k.params] == ["float32", "const pointer", "pointer", "int32"]
    x = ql.zeros(8, np.float32, device="cuda")
    y = ql.zeros(8, np.float32, device="cuda")
    k.launch(1, 8, 3.0, x, y, 8)
    assert last_launch(fake)["params"][:28] == _saxpy_bytes(3.0, x, y, 8)[:28]
    with pytest.raises(ql.LaunchTypeError):
        k[1, 8](3.0, np.zeros(8, np.int32), y, 8)   # a float* gets float32 elements only


def test_signature_that_disagrees_with_the_binary(fake):
    data = make_cubin(SAXPY_CUBIN)
    with pytest.raises(ValueError, match=r"parameter 4 'n': 'double' is 8 bytes, but the "
                                         r"binary's parameter is 4 bytes"):
        ql.load(data, device="cuda", signature="saxpy(float a, float* x, float* y, double n)")
    with pytest.raises(ValueError, match="has 3 parameters, the binary's kernel saxpy has 4"):
        ql.load(data, device="cuda", signature="saxpy(float, float*, float*)")
    with pytest.raises(ql.QuicklaunchError, match="no kernel 'saxpz' in the binary"):
        ql.load(data, device="cuda", signature="saxpz(float, float*, float*, int)")


def test_bad_files_are_clear_errors(fake, tmp_path):
    missing = tmp_path / "missing.cubin"
    with pytest.raises(ql.QuicklaunchError, match=f"ql.load\\({missing}\\): cannot read"):
        ql.load(missing, device="cuda")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ql.QuicklaunchError, match=f"{text}.*not a binary: not a cubin, PTX"):
        ql.load(text, device="cuda")
    trunc = tmp_path / "cut.cubin"
    trunc.write_bytes(make_cubin(SAXPY_CUBIN)[:300])
    with pytest.raises(ql.QuicklaunchError, match=f"{trunc}.*truncated"):
        ql.load(trunc, device="cuda")
    foreign = tmp_path / "x86.o"
    foreign.write_bytes(make_cubin(SAXPY_CUBIN, machine=62))
    with pytest.raises(ql.QuicklaunchError, match=f"{foreign}.*machine 62"):
        ql.load(foreign, device="cuda")
    with pytest.raises(ql.QuicklaunchError, match="empty"):
        ql.load(b"", device="cuda")
    with pytest.raises(ql.CudaError, match="cuModuleLoadData"):   # the driver's own refusal
        ql.load(make_cubin(SAXPY_CUBIN, sm=80), device="cuda")
    with pytest.raises(ql.QuicklaunchError, match="cannot be loaded on cpu"):
        ql.load(PTX.encode(), device="cpu")


def test_loaded_module_pickles(fake):
    sig = "saxpy(float a, const float* x, float* y, int n)"
    mod = ql.load(make_cubin(SAXPY_CUBIN), device="cuda", signature=sig)
    k = pickle.loads(pickle.dumps(mod.saxpy))
    assert k.name == "saxpy" and [p.kind for p in k.params] == [p.kind for p in mod.saxpy.params]
    launch = pickle.loads(pickle.dumps(mod.saxpy[2, 4]))
    assert launch.__self__.grid == (2, 1, 1)

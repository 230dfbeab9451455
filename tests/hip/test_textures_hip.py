"""ql.Texture on the HIP device, against the fake HIP runtime
(fake_libamdhip64.c) and real hiprtc: hipTexObjectCreate gets CUDA-layout
descriptors for linear and pitch2D textures (an aligned buffer read in
place, anything else through a padded copy), the handle reaches the
kernel's cudaTextureObject_t parameter (a pointer on HIP), close() destroys
it, and arrays are refused naming what is missing."""
import ctypes
import struct

import numpy as np
import pytest

import quicklaunch as ql

from .test_fake_runtime import expect, fake, fake_lib, last  # noqa: F401

KERNEL = r"""
extern "C" __global__ void fetch(cudaTextureObject_t t, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
"""
rng = np.random.default_rng(11)


def described(lib, handle):
    lib.fake_hip_texture.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_longlong)]
    out = (ctypes.c_longlong * 11)()
    assert lib.fake_hip_texture(handle, out) == 0
    keys = ("res_type", "format", "channels", "width", "height", "pitch", "ax", "ay", "filter",
            "flags", "ptr")
    return dict(zip(keys, out))


def test_linear_texture_reaches_the_kernel(fake):  # noqa: F811
    dev = ql.device("hip")
    data = rng.standard_normal(50).astype(np.float32)
    buf = ql.asarray(data, device=dev)          # hipMalloc: 256-byte aligned
    t = ql.Texture(buf)
    d = described(fake, t.handle)
    assert d["res_type"] == 2 and d["format"] == 0x20 and d["width"] == 200
    assert d["ptr"] == buf.ptr and d["flags"] == 0
    k = ql.compile(KERNEL, device=dev).fetch
    assert k.params[0].kind == "pointer"
    out = ql.zeros(50, np.float32, device=dev)
    expect(fake, k)
    k[1, 64](t, out, 50)
    assert bytes(last(fake).bytes[:8]) == struct.pack("<Q", t.handle)
    t.close()
    assert fake.fake_hip_texture_count() == 0
    with pytest.raises(ql.LaunchValueError, match="parameter 1 't': the texture is closed"):
        k[1, 64](t, out, 50)
    cpu_tex = ql.Texture(data, device="cpu")
    with pytest.raises(ql.LaunchValueError, match=r"lives on device cpu but the kernel runs on "
                                                  r"hip:0"):
        k[1, 64](cpu_tex, out, 50)


def test_pitch2d_is_a_padded_copy(fake):  # noqa: F811
    img = rng.integers(-100, 100, (5, 9, 2), dtype=np.int16)     # rows of 36 bytes
    t = ql.Texture(img, channels=2, device="hip", address="border")
    d = described(fake, t.handle)
    assert d["res_type"] == 3 and d["format"] == 0x09 and d["channels"] == 2
    assert (d["width"], d["height"], d["pitch"]) == (9, 5, 256)
    assert d["ax"] == 3 and d["flags"] == 0x01                 # read as integer
    raw = np.frombuffer(ctypes.string_at(d["ptr"], 5 * 256), np.uint8).reshape(5, 256)
    np.testing.assert_array_equal(raw[:, :36].view(np.int16).reshape(5, 9, 2), img)


def test_arrays_are_refused_naming_the_missing_calls(fake):  # noqa: F811
    with pytest.raises(ql.DeviceError, match=r"memory='array'.*hipArray3DCreate and "
                                             r"hipDrvMemcpy3D"):
        ql.Texture(np.ones((2, 3, 4), np.float32), device="hip")

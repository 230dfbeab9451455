"""ql.Texture on the CUDA device, through the fake driver (fake_textures.c)
and real NVRTC: the resource and texture descriptors quicklaunch builds
(linear, pitch2D with a pitched copy, arrays with cuMemcpy3D), the texels
the driver's memory then holds, the handle in the launch's parameter block,
destruction, and the refusals (another device's texture, closed)."""
import ctypes
import struct
from ctypes import c_float, c_int, c_longlong, c_size_t, c_ubyte, c_ulonglong, c_void_p

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch
from .test_quicklaunch_on_fake import CaiOnly, fake_gpu, gpu  # noqa: F401

KERNEL = r"""
extern "C" __global__ void fetch(cudaTextureObject_t t, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i) + tex2D<float>(t, i, 0.5f);
}
"""
rng = np.random.default_rng(7)
FIELDS = ("device", "res_type", "format", "channels", "width", "height", "depth", "pitch",
          "ax", "ay", "az", "filter", "flags")


def hooks(lib):
    lib.fake_cuda_texture_desc.argtypes = [c_ulonglong, ctypes.POINTER(c_longlong),
                                           ctypes.POINTER(c_float)]
    lib.fake_cuda_texture_texel.argtypes = [c_ulonglong, c_size_t, c_size_t, c_size_t, c_void_p]
    lib.fake_cuda_texture_count.restype = c_int
    return lib


def desc(lib, handle):
    out, border = (c_longlong * 13)(), (c_float * 4)()
    assert hooks(lib).fake_cuda_texture_desc(handle, out, border) == 0
    return dict(zip(FIELDS, out)), tuple(border)


def texel(lib, handle, x, y=0, z=0, nbytes=16):
    buf = (c_ubyte * nbytes)()
    n = hooks(lib).fake_cuda_texture_texel(handle, x, y, z, buf)
    assert n > 0
    return bytes(buf[:n])


def test_linear_texture_over_a_buffer_is_zero_copy(gpu, fake_gpu):  # noqa: F811
    data = rng.standard_normal(100).astype(np.float32)
    buf = ql.asarray(data, device=gpu)
    allocs = fake_gpu.fake_cuda_alloc_count()
    t = ql.Texture(buf)
    # no copy when the buffer has the texture alignment (512), else an aligned copy
    assert fake_gpu.fake_cuda_alloc_count() == allocs + (buf.ptr % 512 != 0)
    d, _ = desc(fake_gpu, t.handle)
    assert d["res_type"] == 2 and d["format"] == 0x20 and d["channels"] == 1
    assert d["width"] == 100 and d["flags"] == 0 and d["device"] == 0
    assert texel(fake_gpu, t.handle, 37) == data[37].tobytes()
    m = ql.compile(KERNEL, device=gpu)
    out = ql.zeros(100, np.float32, device=gpu)
    m.fetch[1, 128](t, out, 100)
    assert last_launch(fake_gpu)["params"][:8] == struct.pack("<Q", t.handle)
    t.close()
    assert hooks(fake_gpu).fake_cuda_texture_count() == 0
    with pytest.raises(ql.LaunchValueError, match="parameter 1 't': the texture is closed"):
        m.fetch[1, 128](t, out, 100)


def test_aligned_buffer_view_is_read_in_place(gpu, fake_gpu):  # noqa: F811
    data = rng.standard_normal(64).astype(np.float32)
    big = ql.zeros(64 + 256, np.float32, device=gpu)
    off = -big.ptr % 512
    view = ql.Buffer(big.ptr + off, (64,), np.dtype(np.float32), gpu, owner=big)
    view.copy_from(data)
    allocs = fake_gpu.fake_cuda_alloc_count()
    t = ql.Texture(view)
    assert fake_gpu.fake_cuda_alloc_count() == allocs
    assert texel(fake_gpu, t.handle, 63) == data[63].tobytes()
    view.copy_from(data + 1)        # the texture reads the buffer itself
    assert texel(fake_gpu, t.handle, 63) == (data[63] + 1).tobytes()


def test_pitch2d_copies_rows_to_the_pitch_alignment(gpu, fake_gpu):  # noqa: F811
    img = rng.integers(0, 256, (7, 5, 4), dtype=np.uint8)     # rows of 20 bytes
    t = ql.Texture(img, channels=4, read_mode="normalized_float", filter="linear",
                   address=("wrap", "border"), normalized_coords=True, border_color=(1, 0.5))
    d, border = desc(fake_gpu, t.handle)
    assert d["res_type"] == 3 and d["format"] == 0x01 and d["channels"] == 4
    assert (d["width"], d["height"], d["pitch"]) == (5, 7, 32)
    assert (d["ax"], d["ay"], d["filter"]) == (0, 3, 1)
    assert d["flags"] == 0x02          # normalised coordinates; read as normalised float
    assert border == (1.0, 0.5, 0.0, 0.0)
    for y, x in [(0, 0), (6, 4), (3, 2)]:
        assert texel(fake_gpu, t.handle, x, y) == img[y, x].tobytes()


def test_integer_element_read_sets_read_as_integer(gpu, fake_gpu):  # noqa: F811
    data = rng.integers(-1000, 1000, (6, 8), dtype=np.int16)
    t = ql.Texture(ql.asarray(data, device=gpu))   # rows of 16 bytes: a pitched copy
    d, _ = desc(fake_gpu, t.handle)
    assert d["format"] == 0x09 and d["flags"] == 0x01 and d["pitch"] == 32
    assert texel(fake_gpu, t.handle, 7, 5) == data[5, 7].tobytes()


@pytest.mark.parametrize("shape,channels", [((9,), 1), ((4, 6), 2), ((3, 4, 5), 4)])
def test_arrays_hold_the_texels(gpu, fake_gpu, shape, channels):  # noqa: F811
    full = shape + ((channels,) if channels > 1 else ())
    data = rng.standard_normal(full).astype(np.float16 if channels == 2 else np.float32)
    t = ql.Texture(data, channels=channels, memory="array", filter="linear")
    d, _ = desc(fake_gpu, t.handle)
    assert d["res_type"] == 0 and d["channels"] == channels
    assert (d["width"], d["height"], d["depth"]) == tuple(reversed(shape)) + (1,) * (3 - len(shape))
    assert d["format"] == (0x10 if channels == 2 else 0x20)
    for _ in range(5):
        idx = tuple(int(rng.integers(0, s)) for s in shape)
        assert texel(fake_gpu, t.handle, *reversed(idx)) == data[idx].tobytes()
    assert hooks(fake_gpu).fake_cuda_texture_count() == 1 + (1 << 16)
    t.close()
    assert hooks(fake_gpu).fake_cuda_texture_count() == 0    # the array went too


def test_texture_of_another_device_is_refused(fake_gpu, monkeypatch):  # noqa: F811
    cpu_tex = ql.Texture(np.ones(8, np.float32), device="cpu")
    m = ql.compile(KERNEL, device="cuda")
    out = ql.zeros(8, np.float32, device="cuda")
    with pytest.raises(ql.LaunchValueError,
                       match=r"kernel 'fetch', parameter 1 't': the texture lives on device "
                             r"cpu but the kernel runs on cuda:0; create the texture on "
                             r"cuda:0"):
        m.fetch[1, 8](cpu_tex, out, 8)
    gpu_tex = ql.Texture(np.ones(8, np.float32), device="cuda")
    cm = ql.compile(KERNEL, device="cpu")
    with pytest.raises(ql.LaunchValueError, match=r"lives on device cuda:0 but the kernel "
                                                  r"runs on cpu"):
        cm.fetch[1, 8](gpu_tex, np.zeros(8, np.float32), 8)


def test_gc_destroys_the_texture(gpu, fake_gpu):  # noqa: F811
    import gc
    t = ql.Texture(np.ones((4, 4, 4), np.float32))
    assert hooks(fake_gpu).fake_cuda_texture_count() == 1 + (1 << 16)
    del t
    gc.collect()
    assert hooks(fake_gpu).fake_cuda_texture_count() == 0


def test_other_libraries_device_arrays(gpu, fake_gpu):  # noqa: F811
    data = rng.standard_normal((4, 8)).astype(np.float32)       # rows of 32 bytes
    big = ql.zeros(32 + 256, np.float32, device=gpu)
    view = ql.Buffer(big.ptr + (-big.ptr % 512), (4, 8), np.dtype(np.float32), gpu, owner=big)
    view.copy_from(data)
    allocs = fake_gpu.fake_cuda_alloc_count()
    t = ql.Texture(CaiOnly(view))
    assert fake_gpu.fake_cuda_alloc_count() == allocs            # read in place
    d, _ = desc(fake_gpu, t.handle)
    assert (d["res_type"], d["width"], d["height"], d["pitch"]) == (3, 8, 4, 32)
    assert texel(fake_gpu, t.handle, 7, 3) == data[3, 7].tobytes()
    with pytest.raises(ValueError, match="strided"):
        ql.Texture(CaiOnly(view, strides=(64, 4)))

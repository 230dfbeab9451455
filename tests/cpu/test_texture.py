"""Texture objects on the CPU device (ql.Texture, ql_texture.h) against a
NumPy model of CUDA's texture unit (texture_model.py): bilinear resampling
with the 9-bit fixed-point weights, every address mode, normalised
coordinates, tex1Dfetch, tex1D, trilinear tex3D, integer formats read as
normalised floats or as they are, half texels; and what the launcher
refuses."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import quicklaunch as ql

from .test_memcheck import _gcc
from .texture_model import fetch, texels

TEXTURE_SOURCE = r"""
extern "C" __global__ void resample(cudaTextureObject_t t, float *out, int w, int h,
                                    float sx, float sy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(t, (x + 0.5f) * sx, (y + 0.5f) * sy);
}
extern "C" __global__ void sample1d(cudaTextureObject_t t, const float *xs, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, xs[i]);
}
extern "C" __global__ void sample2d(cudaTextureObject_t t, const float *xs, const float *ys,
                                    float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tex2D(&out[i], t, xs[i], ys[i]);     /* the pointer-output form */
}
extern "C" __global__ void sample2d4(cudaTextureObject_t t, const float *xs, const float *ys,
                                     float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(t, xs[i], ys[i]);
}
extern "C" __global__ void sample3d4(cudaTextureObject_t t, const float *xs, const float *ys,
                                     const float *zs, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float4>(t, xs[i], ys[i], zs[i]);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t t, const int *idx, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, idx[i]);
}
extern "C" __global__ void fetch1d_int2(cudaTextureObject_t t, const int *idx, int2 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int2>(t, idx[i]);
}
extern "C" __global__ void sample2d_int(cudaTextureObject_t t, const float *xs, const float *ys,
                                        int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<int>(t, xs[i], ys[i]);
}
extern "C" __global__ void sample2d_uchar4(cudaTextureObject_t t, const float *xs,
                                           const float *ys, uchar4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<uchar4>(t, xs[i], ys[i]);
}
"""

BLOCK = 64
rng = np.random.default_rng(20261202)


_AHEAD = {"mod": "TEXTURE_SOURCE", "test_fetches_in_a_kernel_with_barriers": "TILED_TEXTURE_SOURCE"}


def prefetch_job(item):
    """The source a selected test compiles (tests/prefetch.py)."""
    from tests.prefetch import named
    return named(item, _AHEAD)


def compile_ahead(name):
    """One prefetch job (in the worker process): a source's plain CPU build."""
    ql.compile(globals()[name], device="cpu")


@pytest.fixture(scope="module", autouse=True)
def _compiled_ahead(request):
    """This module's sources compiled ahead on both cores (tests/prefetch.py);
    the tests then read the compile cache."""
    from tests.prefetch import ahead
    ahead(request)

@pytest.fixture(scope="module")
def mod():
    return ql.compile(TEXTURE_SOURCE, device="cpu")


def grid(n):
    return (n + BLOCK - 1) // BLOCK


def poisoned(shape, dtype=np.float32):
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0xA5
    return out


def coords(n, lo, hi):
    return rng.uniform(lo, hi, n).astype(np.float32)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- resample
@pytest.mark.parametrize("src_shape,dst_shape", [((31, 37), (45, 50)), ((1, 5), (3, 7)),
                                                 ((8, 8), (3, 2))])
def test_bilinear_resample_matches_fixed_point_model(mod, src_shape, dst_shape):
    h, w = src_shape
    oh, ow = dst_shape
    img = rng.random(src_shape, dtype=np.float32)
    out = poisoned(dst_shape)
    sx, sy = np.float32(w / ow), np.float32(h / oh)
    with ql.Texture(img, filter="linear") as t:
        mod.resample[(grid(ow), oh), BLOCK](t, out, ow, oh, sx, sy)
    ys, xs = np.meshgrid(np.arange(oh, dtype=np.float32), np.arange(ow, dtype=np.float32),
                         indexing="ij")
    cx = ((xs + np.float32(0.5)) * sx).ravel()
    cy = ((ys + np.float32(0.5)) * sy).ravel()
    want = fetch(texels(img, 1), (cx, cy), filter="linear")[:, 0].reshape(dst_shape)
    close(out, want)
    if src_shape == (31, 37):   # the weights' quantisation shows at this scale
        exact = fetch(texels(img, 1), (cx, cy), filter="linear",
                      quantize=False)[:, 0].reshape(dst_shape)
        assert np.abs(out - exact).max() > 1e-4


# ------------------------------------------------------------ address modes
@pytest.mark.parametrize("mode", ["clamp", "wrap", "mirror", "border"])
@pytest.mark.parametrize("filt", ["point", "linear"])
@pytest.mark.parametrize("normalized", [True, False])
def test_every_address_mode(mod, mode, filt, normalized):
    h, w, n = 9, 13, 301
    img = rng.random((h, w), dtype=np.float32) + np.float32(0.25)
    border = (-3.5, 0, 0, 0)
    if normalized:
        xs, ys = coords(n, -2.3, 3.1), coords(n, -1.7, 2.6)
    else:
        xs, ys = coords(n, -2.0 * w, 3.0 * w), coords(n, -1.5 * h, 2.5 * h)
    out = poisoned(n)
    t = ql.Texture(img, address=mode, filter=filt, normalized_coords=normalized,
                   border_color=border)
    mod.sample2d[grid(n), BLOCK](t, xs, ys, out, n)
    want = fetch(texels(img, 1), (xs, ys), address=mode, filter=filt, normalized=normalized,
                 border=border)[:, 0]
    close(out, want)
    if mode == "border":
        assert (out == np.float32(-3.5)).any()
    t.close()


def test_address_mode_per_axis(mod):
    img = rng.random((6, 10), dtype=np.float32)
    n = 200
    xs, ys = coords(n, -1.5, 2.5), coords(n, -1.5, 2.5)
    out = poisoned(n)
    t = ql.Texture(img, address=("wrap", "mirror"), filter="linear", normalized_coords=True)
    mod.sample2d[grid(n), BLOCK](t, xs, ys, out, n)
    close(out, fetch(texels(img, 1), (xs, ys), address=("wrap", "mirror"), filter="linear",
                     normalized=True)[:, 0])


# ------------------------------------------------------------------- 1-D
@pytest.mark.parametrize("n", [1, 31, 200])
def test_tex1dfetch_reads_texels_and_zero_out_of_range(mod, n):
    data = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(-5, n + 5, 3 * n + 7).astype(np.int32)
    out = poisoned(idx.size)
    t = ql.Texture(data)
    assert t.spec.memory == "linear"
    mod.fetch1d[grid(idx.size), BLOCK](t, idx, out, idx.size)
    inside = (idx >= 0) & (idx < n)
    want = np.where(inside, data[np.clip(idx, 0, n - 1)], np.float32(0))
    np.testing.assert_array_equal(out, want)


def test_tex1dfetch_two_int_channels(mod):
    n = 77
    data = rng.integers(-2**31, 2**31 - 1, (n, 2), dtype=np.int64).astype(np.int32)
    idx = rng.integers(-3, n + 3, 150).astype(np.int32)
    out = poisoned((idx.size, 2), np.int32)
    with ql.Texture(data, channels=2) as t:
        mod.fetch1d_int2[grid(idx.size), BLOCK](t, idx, out, idx.size)
    inside = ((idx >= 0) & (idx < n))[:, None]
    np.testing.assert_array_equal(out, np.where(inside, data[np.clip(idx, 0, n - 1)], 0))


@pytest.mark.parametrize("mode", ["clamp", "wrap", "mirror", "border"])
def test_tex1d_linear_on_a_1d_array(mod, mode):
    data = rng.random(31, dtype=np.float32)
    n = 257
    xs = coords(n, -1.2, 2.2)
    out = poisoned(n)
    t = ql.Texture(data, memory="array", filter="linear", address=mode, normalized_coords=True,
                   border_color=(0.75,))
    mod.sample1d[grid(n), BLOCK](t, xs, out, n)
    close(out, fetch(texels(data, 1), (xs,), address=mode, filter="linear", normalized=True,
                     border=(0.75,))[:, 0])


# ------------------------------------------------------------------- 3-D
def test_trilinear_tex3d_float4(mod):
    vol = rng.random((5, 6, 7, 4), dtype=np.float32)
    n = 333
    xs, ys, zs = coords(n, -0.3, 1.3), coords(n, -0.3, 1.3), coords(n, -0.3, 1.3)
    out = poisoned((n, 4))
    t = ql.Texture(vol, channels=4, filter="linear", normalized_coords=True,
                   address=("wrap", "clamp", "mirror"))
    assert t.shape == (5, 6, 7) and t.spec.memory == "array"
    mod.sample3d4[grid(n), BLOCK](t, xs, ys, zs, out, n)
    close(out, fetch(texels(vol, 4), (xs, ys, zs), address=("wrap", "clamp", "mirror"),
                     filter="linear", normalized=True))


# ------------------------------------------------------- integer formats
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16])
def test_normalized_float_read_mode_with_linear_filter(mod, dtype):
    info = np.iinfo(dtype)
    img = rng.integers(info.min, info.max, (11, 17, 4), endpoint=True).astype(dtype)
    img[0, 0, 0] = info.min       # the signed minimum reads as -1
    n = 240
    xs, ys = coords(n, -2, 19), coords(n, -2, 13)
    xs[0], ys[0] = 0.5, 0.5
    out = poisoned((n, 4))
    t = ql.Texture(img, channels=4, read_mode="normalized_float", filter="linear")
    mod.sample2d4[grid(n), BLOCK](t, xs, ys, out, n)
    tx = texels(img, 4, "normalized_float")
    close(out, fetch(tx, (xs, ys), filter="linear"))
    assert out[0, 0] == (np.float32(-1) if info.min < 0 else np.float32(0))
    assert np.abs(out).max() <= 1.0


def test_element_read_of_integers_is_exact(mod):
    n = 150
    img = rng.integers(-2**31, 2**31 - 1, (7, 9), dtype=np.int64).astype(np.int32)
    xs, ys = coords(n, -3, 12), coords(n, -3, 10)
    out = poisoned(n, np.int32)
    mod.sample2d_int[grid(n), BLOCK](ql.Texture(img), xs, ys, out, n)
    want = img[np.clip(np.floor(ys).astype(int), 0, 6), np.clip(np.floor(xs).astype(int), 0, 8)]
    np.testing.assert_array_equal(out, want)
    rgba = rng.integers(0, 256, (5, 6, 4), dtype=np.uint8)
    out4 = poisoned((n, 4), np.uint8)
    xs, ys = coords(n, 0, 6), coords(n, 0, 5)
    mod.sample2d_uchar4[grid(n), BLOCK](ql.Texture(rgba, channels=4), xs, ys, out4, n)
    np.testing.assert_array_equal(out4, rgba[np.floor(ys).astype(int), np.floor(xs).astype(int)])


def test_half_texels_read_as_float(mod):
    img = rng.standard_normal((8, 12)).astype(np.float16)
    n = 100
    xs, ys = coords(n, 0, 12), coords(n, 0, 8)
    out = poisoned(n)
    mod.sample2d[grid(n), BLOCK](ql.Texture(img, filter="linear"), xs, ys, out, n)
    close(out, fetch(img[..., None].astype(np.float32), (xs, ys), filter="linear")[:, 0])


# -------------------------------------------------------- sources, lifetime
def test_buffer_source_and_data_kept_alive(mod):
    img = rng.random((16, 16), dtype=np.float32)
    buf = ql.asarray(img.copy(), device="cpu")
    t = ql.Texture(buf, filter="linear")
    del buf
    gc.collect()
    n = 64
    xs, ys = coords(n, 0, 16), coords(n, 0, 16)
    out = poisoned(n)
    mod.sample2d[grid(n), BLOCK](t, xs, ys, out, n)
    close(out, fetch(img[..., None], (xs, ys), filter="linear")[:, 0])


def test_buffer_view_source(mod):
    big = ql.asarray(rng.random(100, dtype=np.float32), device="cpu")
    view = ql.Buffer(big.ptr + 40, (20,), np.dtype(np.float32), big.device, owner=big)
    idx = np.arange(20, dtype=np.int32)
    out = poisoned(20)
    mod.fetch1d[1, 32](ql.Texture(view), idx, out, 20)
    np.testing.assert_array_equal(out, big.numpy()[10:30])


def test_strided_source_is_copied(mod):
    big = rng.random((10, 20), dtype=np.float32)
    view = big[::2, ::3]
    n = 50
    xs, ys = coords(n, 0, view.shape[1]), coords(n, 0, view.shape[0])
    out = poisoned(n)
    mod.sample2d[grid(n), BLOCK](ql.Texture(view), xs, ys, out, n)
    close(out, fetch(np.ascontiguousarray(view)[..., None], (xs, ys))[:, 0])


def test_debug_build_takes_textures():
    m = ql.compile(TEXTURE_SOURCE, device="cpu", debug=True)
    data = rng.random(40, dtype=np.float32)
    idx = np.arange(-2, 42, dtype=np.int32)
    out = poisoned(idx.size)
    m.fetch1d[1, 64](ql.Texture(data), idx, out, idx.size)
    np.testing.assert_array_equal(out, np.where((idx >= 0) & (idx < 40),
                                                data[np.clip(idx, 0, 39)], 0))


# ------------------------------------------------------------------ refusals
def test_launcher_refusals(mod):
    data = rng.random(8, dtype=np.float32)
    t = ql.Texture(data)
    idx = np.zeros(4, np.int32)
    out = poisoned(4)
    with pytest.raises(ql.LaunchTypeError, match=r"kernel 'fetch1d', parameter 3 'out': got "
                                                 r"a ql.Texture.*cudaTextureObject_t"):
        mod.fetch1d[1, 4](t, idx, t, 4)
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 4 'n': got a ql.Texture"):
        mod.fetch1d[1, 4](t, idx, out, t)
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 1 't'"):
        mod.fetch1d[1, 4](data, idx, out, 4)
    t.close()
    t.close()    # idempotent
    assert t.closed and t.handle == 0
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'fetch1d', parameter 1 't': the "
                                                  r"texture is closed"):
        mod.fetch1d[1, 4](t, idx, out, 4)


def test_int_is_a_raw_handle(mod):
    data = rng.random(8, dtype=np.float32)
    t = ql.Texture(data)
    idx = np.arange(8, dtype=np.int32)
    out = poisoned(8)
    mod.fetch1d[1, 8](int(t.handle), idx, out, 8)
    np.testing.assert_array_equal(out, data)


@pytest.mark.parametrize("kwargs,data,match", [
    ({}, np.zeros(4, np.float64) + 1, "float64 is not a texel format"),
    ({}, np.ones(4, bool), "bool is not a texel format"),
    ({"channels": 3}, np.ones((4, 3), np.float32), "1, 2 or 4 channels"),
    ({"channels": 4}, np.ones((4, 3), np.float32), "last axis"),
    ({"filter": "linear", "memory": "array"}, np.ones(4, np.int32), "read_mode='normalized"),
    ({"read_mode": "normalized_float"}, np.ones(4, np.float32), "8- and 16-bit"),
    ({"filter": "linear"}, np.ones(4, np.float32), "tex1Dfetch"),
    ({"address": "repeat"}, np.ones((2, 2), np.float32), "'repeat' is not one of"),
    ({"address": ("wrap",)}, np.ones((2, 2), np.float32), "1 modes for a 2-D"),
    ({}, np.ones((2, 2, 2, 2), np.float32), "1, 2 or 3 dimensions"),
    ({"memory": "pitch2d"}, np.ones((2, 2, 2), np.float32), "memory='array'"),
    ({}, np.ones((0, 3), np.float32), "at least 1"),
])
def test_creation_refusals(kwargs, data, match):
    with pytest.raises((TypeError, ValueError), match=match):
        ql.Texture(data, **kwargs)


def test_not_picklable_and_repr():
    import pickle
    t = ql.Texture(np.ones((3, 4, 2), np.uint8), channels=2)
    assert "3x4 uint8x2 pitch2d on cpu" in repr(t)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(t)


def test_a_handle_that_is_no_texture_fails_the_launch(mod):
    not_a_texture = np.full(16, 7, np.uint64)
    idx = np.zeros(4, np.int32)
    out = poisoned(4)
    with pytest.raises(ql.LaunchError, match="not a live texture object"):
        mod.fetch1d[1, 4](not_a_texture.ctypes.data, idx, out, 4)
    data = rng.random(4, dtype=np.float32)     # the device is usable afterwards
    mod.fetch1d[1, 4](ql.Texture(data), np.arange(4, dtype=np.int32), out, 4)
    np.testing.assert_array_equal(out, data)


def test_graph_replays_read_the_texture_until_closed(mod):
    data = rng.random(32, dtype=np.float32)
    idx = np.arange(32, dtype=np.int32)
    out = poisoned(32)
    t = ql.Texture(data)
    run = mod.fetch1d.configure(1, 32)
    with ql.graph(device=mod.device) as g:
        run(t, idx, out, 32)
    g.replay()
    ql.device("cpu").synchronize()
    np.testing.assert_array_equal(out, data)
    data[:] = rng.random(32, dtype=np.float32)     # the texture reads the array itself
    g.replay()
    ql.device("cpu").synchronize()
    np.testing.assert_array_equal(out, data)
    t.close()
    with pytest.raises(ql.LaunchError, match="not a live texture object"):
        g.replay()
        ql.device("cpu").synchronize()


@pytest.mark.parametrize("ctype,is_texture", [
    ("cudaTextureObject_t", True), ("const cudaTextureObject_t", True),
    ("::cudaTextureObject_t", True), ("hipTextureObject_t", True),
    ("unsigned long long", False), ("cudaTextureObject_t *", False), ("Tex", False)])
def test_which_parameters_take_textures(ctype, is_texture):
    from quicklaunch.elements import texture_element
    assert (texture_element(ctype) is not None) == is_texture


@pytest.mark.skipif(not _gcc(), reason="memcheck builds need g++ (GCC's outline "
                    "sanitizer calls; under clang they are a CompileError)")
def test_memcheck_build_checks_the_kernel_not_the_texture_unit():
    m = ql.compile(TEXTURE_SOURCE, device="cpu", memcheck=True)
    img = rng.random((5, 6), dtype=np.float32)
    xs, ys = coords(40, -1, 7), coords(40, -1, 6)
    out = poisoned(40)
    t = ql.Texture(img, filter="linear")
    m.sample2d[1, 64](t, xs, ys, out, 40)
    close(out, fetch(img[..., None], (xs, ys), filter="linear")[:, 0])
    with pytest.raises(ql.LaunchError, match=r"memcheck: invalid write .* parameter 4 'out'"), \
            pytest.warns(ql.LaunchWarning, match="the array has 30 elements"):
        m.sample2d[1, 64](t, xs, ys, out[:30], 40)     # the pointer-output form writes past


TILED_TEXTURE_SOURCE = r"""
extern "C" __global__ void row_pairs(cudaTextureObject_t t, float *out, int w) {
    __shared__ float row[64];
    int x = threadIdx.x;
    row[x] = tex2D<float>(t, x + 0.5f, blockIdx.x + 0.5f);
    __syncthreads();
    float s = row[x] + (x > 0 ? row[x - 1] : 0.0f);
    if (x < w) out[blockIdx.x * w + x] = s;
}
"""


def test_fetches_in_a_kernel_with_barriers():
    m = ql.compile(TILED_TEXTURE_SOURCE, device="cpu")
    img = rng.random((3, 64), dtype=np.float32)
    out = poisoned((3, 64))
    m.row_pairs[3, 64](ql.Texture(img), out, 64)
    want = img.copy()
    want[:, 1:] += img[:, :-1]
    np.testing.assert_array_equal(out, want)

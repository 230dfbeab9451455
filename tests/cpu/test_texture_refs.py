"""Texture references (removed in CUDA 12) are a CompileError on the CPU
device that says so and how to move to texture objects; tests/nvrtc and
tests/hip check the same message from NVRTC and hiprtc."""
import pytest

import quicklaunch as ql
from quicklaunch import texture_refs

# not a *SOURCE: no device compiles it (the corpus would)
TEXTURE_REFERENCE_KERNEL = r"""
texture<float, 1, cudaReadModeElementType> tex;   // a texture reference
extern "C" __global__ void fetch(float *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = tex1Dfetch(tex, i);
}
"""

SURFACE_KERNEL = r"""
surface<void, 2> surf;
extern "C" __global__ void put(int n) { surf2Dwrite(1.0f, surf, 0, 0); }
"""

MESSAGE = (r"line 2: `texture<float, 1, cudaReadModeElementType> tex` is a texture reference; "
           r"CUDA 12 removed texture and surface references .* so {dev} cannot compile it\. "
           r"Move to a texture object: take it as a kernel parameter "
           r"`cudaTextureObject_t tex` .* `tex1Dfetch<float>\(tex, i\)` .*ql\.Texture")


def test_cpu_device_says_what_to_do():
    with pytest.raises(ql.CompileError, match=MESSAGE.format(dev="the CPU device")) as e:
        ql.compile(TEXTURE_REFERENCE_KERNEL, device="cpu")
    assert "failed to compile for the CPU device" in str(e.value)   # the compiler's, after it
    assert e.value.source == TEXTURE_REFERENCE_KERNEL


def test_surface_reference():
    with pytest.raises(ql.CompileError, match=r"line 2: `surface<void, 2> surf` is a surface "
                                              r"reference.*surface object"):
        ql.compile(SURFACE_KERNEL, device="cpu")


def test_only_failing_compiles_are_explained():
    # a source with a texture template of its own compiles, and an error
    # unrelated to textures keeps its own message
    own = r"""
template <class T, int N> struct texture { T v[N]; };
extern "C" __global__ void k(float *o) { texture<float, 2> t = {{1.0f, 2.0f}}; o[0] = t.v[1]; }
"""
    ql.compile(own, device="cpu")
    with pytest.raises(ql.CompileError) as e:
        ql.compile("extern \"C\" __global__ void k(float *o) { o[0] = undefined_name; }",
                   device="cpu")
    assert "texture reference" not in str(e.value)


def test_references_found_and_not():
    assert texture_refs.references(TEXTURE_REFERENCE_KERNEL) == [
        (2, "texture<float, 1, cudaReadModeElementType> tex")]
    assert texture_refs.references("// texture<float, 1> t;\nint x;") == []
    assert texture_refs.references("__device__ float f(texture<float4, 2> &t);\n") == [
        (1, "texture<float4, 2> &t")]
    assert texture_refs.references("cudaTextureObject_t t; tex2D<float>(t, 0, 0);") == []

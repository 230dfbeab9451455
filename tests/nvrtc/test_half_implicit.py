"""fp16 / bf16 without an #include, one behaviour on every device: __half,
__half2, __nv_bfloat16, __nv_bfloat162 and their functions are there on the
CPU and HIP devices, and NVRTC compiles pre-include cuda_fp16.h / cuda_bf16.h
(program._IMPLICIT). A source that includes them itself still compiles."""
import pytest

import quicklaunch as ql

ARCHS = ("sm_80", "sm_90")

# no #include: the types and functions come with the device
HALF_SOURCE = r"""
__global__ void mixed_precision(const __half *a, const __nv_bfloat16 *b, __half2 *h2,
                                __nv_bfloat162 *b2, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half h = __hmul(__hadd(a[i], __float2half(1.5f)), __float2half_rn(0.5f));
    __nv_bfloat16 bb = __hfma(b[i], __float2bfloat16(2.0f), __float2bfloat16_rn(0.25f));
    h2[i] = __hadd2(h2[i], __floats2half2_rn(1.0f, 2.0f));
    b2[i] = __hmul2(b2[i], __floats2bfloat162_rn(0.5f, 4.0f));
    out[i] = __half2float(h) + __bfloat162float(bb) + __low2float(h2[i]) +
             __high2float(b2[i]) + (float)(bb + __low2bfloat16(b2[i]));
}

template <class T> __device__ float widen(T v) { return (float)v; }
template <class T> __global__ void scale(T *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = T(widen(x[i]) * s);
}
"""
HALF_EXPRESSIONS = ["scale<__half>", "scale<__nv_bfloat16>", "scale<float>"]
KERNELS = {"mixed_precision", *HALF_EXPRESSIONS}

# only the name expression says which 16-bit type: still pre-included
BY_NAME_SOURCE = r"""
template <class T> __global__ void fill(T *x, float v) { x[threadIdx.x] = T(v); }
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_half_and_bf16_without_an_include(arch):
    prog = ql.cuda.compile(HALF_SOURCE, arch=arch, name_expressions=HALF_EXPRESSIONS)
    assert set(prog.kernels) == KERNELS
    assert len(prog.kernels["mixed_precision"].params) == 6


@pytest.mark.parametrize("arch", ARCHS)
def test_the_users_own_includes_still_work(arch):
    src = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n" + HALF_SOURCE
    prog = ql.cuda.compile(src, arch=arch, name_expressions=HALF_EXPRESSIONS)
    assert set(prog.kernels) == KERNELS


@pytest.mark.parametrize("arch", ARCHS)
def test_a_name_expression_alone_pre_includes(arch):
    prog = ql.cuda.compile(BY_NAME_SOURCE, arch=arch,
                           name_expressions=["fill<__nv_bfloat16>", "fill<__half>"])
    assert set(prog.kernels) == {"fill<__nv_bfloat16>", "fill<__half>"}


def test_pre_includes_only_what_the_source_mentions():
    from quicklaunch.backends.cuda.program import implicit_includes
    assert implicit_includes("__global__ void k(float *x) {}") == []
    assert implicit_includes("// __half in a comment\n__global__ void k(float *x) {}") == []
    assert implicit_includes("__global__ void k(__half *x) {}") == ["--pre-include=cuda_fp16.h"]
    assert implicit_includes("__global__ void k(__nv_bfloat16 *x) {}") == [
        "--pre-include=cuda_bf16.h"]
    assert implicit_includes("template <class T> __global__ void k(T *x) {}",
                             ["k<__half>"]) == ["--pre-include=cuda_fp16.h"]


def test_the_pre_include_is_in_the_cache_key(private_cache, count_compiles):
    # the same source text, once without and once with a 16-bit name expression
    src = "template <class T> __global__ void k(T *x) { x[0] = T(1.0f); }\n"
    ql.cuda.compile(src, arch="sm_90", name_expressions=["k<float>"])
    ql.cuda.compile(src, arch="sm_90", name_expressions=["k<float>", "k<__half>"])
    ql.cuda.compile(src, arch="sm_90", name_expressions=["k<float>", "k<__half>"])
    assert len(count_compiles) == 2

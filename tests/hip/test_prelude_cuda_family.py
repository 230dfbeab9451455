"""The HIP prelude's CUDA families: cache-hint loads/stores on every type,
mixed-signedness min/max with CUDA's result types, bf16 conversions."""
import pytest

import quicklaunch as ql

ARCHS = ["gfx90a", "gfx1030"]

HINTS = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <class T> __device__ void both(const T *p, T *q) {
    __stwb(q, __ldg(p)); __stcg(q, __ldcg(p)); __stcs(q, __ldcs(p)); __stwt(q, __ldca(p));
    __stcs(q, __ldlu(p)); __stcs(q, __ldcv(p));
}
__global__ void k(const float4 *a, float4 *b, const int4 *c, int4 *d, const __half *h, __half *g,
                  const __half2 *h2, __half2 *g2, const __nv_bfloat16 *e, __nv_bfloat16 *f,
                  const double2 *x, double2 *y, const unsigned long long *u, unsigned long long *v,
                  const char4 *c4, char4 *d4, double *z) {
    both(a, b); both(c, d); both(h, g); both(h2, g2); both(e, f); both(x, y); both(u, v);
    both(c4, d4); __stcs(z, 1.0f);
}
"""

MINMAX = """template <class A, class B> struct same { static const bool v = false; };
template <class A> struct same<A, A> { static const bool v = true; };
#define IS(e, T) static_assert(same<decltype(e), T>::v, #e)
__global__ void k(int i, unsigned u, long long l, unsigned long long ul, float f, double d,
                  int *o) {
    IS(min(i, u), unsigned); IS(max(u, i), unsigned); IS(min(l, ul), unsigned long long);
    IS(max(ul, l), unsigned long long); IS(min(f, d), double); IS(max(d, f), double);
    IS(min(i, i), int); IS(max(f, f), float);
    int t[4] = {0, 1, 2, 3};
    o[0] = t[min(i, u)] + t[max(u, i)];
}
"""

BF16 = """__global__ void k(__nv_bfloat16 b, __nv_bfloat162 b2, float2 f2, int i, float *o) {
    __nv_bfloat162 r = __halves2bfloat162(b, b);
    r = __hmul2(__float22bfloat162_rn(f2), __floats2bfloat162_rn(1.0f, 2.0f));
    r = __lowhigh2highlow(__lows2bfloat162(r, __highs2bfloat162(b2, r)));
    __nv_bfloat16 h = __hfma(__low2bfloat16(r), __high2bfloat16(r), __int2bfloat16_rn(i));
    float2 g = __bfloat1622float2(__high2bfloat162(__low2bfloat162(r)));
    o[0] = g.x + g.y + __bfloat162float(h) + __bfloat162int_rn(h);
}
"""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("src", [HINTS, MINMAX, BF16], ids=["hints", "minmax", "bf16"])
def test_family_compiles(arch, src):
    assert "k" in ql.hip.compile(src, arch=arch).kernels

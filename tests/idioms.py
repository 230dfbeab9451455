"""A corpus of kernels written in the idioms of real CUDA code bases (issue
13): vectorised 128-bit loads with cache hints, templated block sizes,
host code (prototypes, launch wrappers, main) next to the kernels, bf16
math, <cmath>/<cfloat>/<algorithm> users, INFINITY/M_PI/FLT_MAX users,
cooperative-groups reductions with lambdas, `#if __CUDA_ARCH__` paths and
kernels launched without their default arguments.

Every source must compile unmodified on every device: NVRTC (sm_80,
sm_90), hiprtc (gfx90a, gfx1030) and the CPU device. SOURCES maps a name to
a Spec: the source, the kernel to launch (a name expression for templates),
grid and block, ``args(rng)`` building the NumPy arguments, and
``check(args)`` asserting the result against NumPy after the launch.
Anyone may add entries; keep each kernel small and self-checking.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

N = 1024


@dataclass(frozen=True)
class Spec:
    source: str
    kernel: str
    grid: int | tuple
    block: int | tuple
    args: Callable
    check: Callable
    name_expressions: tuple = field(default=())
    # {arch: text of the CompileError}: a device that refuses the idiom by
    # design, with a clear message (32-lane warp masks on a wave64 GPU)
    refused: dict = field(default_factory=dict)


CG_LAMBDA_REDUCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// one warp per row: strided partial sums, then a tile reduction with a lambda
__global__ void row_sums(const float *x, float *out, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const float *row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) acc += row[c];
    float total = cg::reduce(warp, acc, [](float a, float b) { return a + b; });
    if (warp.thread_rank() == 0) out[blockIdx.x] = total;
}
"""

ARCH_PATHS = r"""
// the Ampere+ warp reduction where the architecture has it, shuffles elsewhere
__global__ void warp_totals(const unsigned *x, unsigned *out) {
    unsigned v = x[blockIdx.x * 32 + threadIdx.x];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = __reduce_add_sync(0xffffffffu, v);
#else
    unsigned s = v;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#endif
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""

DEFAULT_ARGS = r"""
// trailing parameters with defaults, launched without them as <<<>>> allows
__global__ void fill_range(float *out, int n, float start = 0.5f, float step = 0.25f,
                           const float *offset = NULL) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = start + step * i + (offset ? offset[i] : 0.0f);
}
"""


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


VEC4_CACHE_HINTS = r"""
#include <cuda_runtime.h>
// 128-bit streaming copy-and-scale: one float4 per thread, evict-first hints
__global__ void scale4(const float4 *__restrict__ in, float4 *__restrict__ out,
                       float a, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = __ldcs(in + i);
        v.x *= a; v.y *= a; v.z *= a; v.w *= a;
        __stcs(out + i, v);
    }
}
__global__ void add4i(const int4 *a, const int4 *b, int4 *c, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        int4 x = __ldg(a + i), y = __ldcs(b + i);
        __stcs(c + i, make_int4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    }
}
"""

TEMPLATED_BLOCK_REDUCE = r"""
#include <cfloat>
#include <algorithm>
template <int BLOCK>
__global__ void block_max(const float *x, float *out, int n) {
    __shared__ float s[BLOCK];
    float m = -FLT_MAX;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x)
        m = fmaxf(m, x[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (int w = BLOCK / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = max(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
template __global__ void block_max<128>(const float *, float *, int);
"""

HOST_CODE_IN_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
extern "C" void launch_axpb(float *d, float a, float b, int n);
void check_error(const char *what);

__global__ void axpb(float *d, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = a * d[i] + b;
}

void check_error(const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e)); exit(1); }
}

extern "C" void launch_axpb(float *d, float a, float b, int n) {
    axpb<<<(n + 255) / 256, 256>>>(d, a, b, n);
    check_error("axpb");
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    float *d;
    cudaMalloc(&d, n * sizeof(float));
    launch_axpb(d, 2.0f, 1.0f, n);
    cudaFree(d);
    printf("done\n");
    return EXIT_SUCCESS;
}
"""

BF16_MATH = r"""
#include <cuda_bf16.h>
__global__ void bf16_axpy(const __nv_bfloat16 *x, __nv_bfloat16 *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = a * __bfloat162float(x[i]) + __bfloat162float(y[i]);
        y[i] = __float2bfloat16(v);
    }
}
"""

MATH_CONSTANTS = r"""
#include <math.h>
#include <float.h>
#include <limits.h>
__global__ void phase(const float *x, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float r = sinf(2.0f * (float)M_PI * v);
    if (v < 0.0f) r = -INFINITY;
    if (r > FLT_MAX) r = FLT_MAX;
    out[i] = (i < INT_MAX) ? r : 0.0f;
}
"""

CMATH_UINT = r"""
#include <cmath>
#include <cstdint>
__global__ void hypot_u(const float *a, const float *b, float *out, uint n) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = sqrtf(a[i] * a[i] + b[i] * b[i]);
}
"""


def _vec4_args(rng):
    x = rng.standard_normal(N).astype(np.float32)
    return [x, np.full_like(x, np.nan), np.float32(3.0), np.int32(N // 4)]


def _nan(n):
    return np.full(n, np.nan, np.float32)   # poisoned: no correct kernel writes NaN here


def _reduce_args(rng):
    return [rng.standard_normal(N * 4).astype(np.float32), _nan(8), np.int32(N * 4)]


def _reduce_check(a):
    x, out = a[0], a[1]
    assert np.float32(out.max()) == x.max()


_BF16_WANT: dict[int, np.ndarray] = {}   # id(y) -> y as the kernel must leave it


def _bf16_args(rng):
    import ml_dtypes  # noqa: F401  (optional: only where bf16 NumPy arrays exist)
    x = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    # float math, one rounding to bf16 at the end, as the kernel does
    _BF16_WANT[id(y)] = (np.float32(0.5) * x.astype(np.float32)
                         + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    return [x, y, np.float32(0.5), np.int32(N)]


def _bf16_check(a):
    want = _BF16_WANT.pop(id(a[1]))
    np.testing.assert_array_equal(a[1].astype(np.float32), want.astype(np.float32))


def _phase_args(rng):
    return [rng.standard_normal(N).astype(np.float32), _nan(N), np.int32(N)]


def _phase_check(a):
    x, out = a[0], a[1]
    want = np.where(x < 0, -np.inf, np.sin(2 * np.pi * x.astype(np.float64))).astype(np.float32)
    np.testing.assert_allclose(out, want, atol=1e-4)


SOURCES: dict[str, Spec] = {
    "vec4_cache_hints": Spec(
        VEC4_CACHE_HINTS, "scale4", N // 4 // 128, 128, _vec4_args,
        lambda a: _close(a[1], a[0] * 3.0)),
    "templated_block_reduce": Spec(
        TEMPLATED_BLOCK_REDUCE, "block_max<128>", 8, 128, _reduce_args, _reduce_check,
        ("block_max<128>",)),
    "host_code_in_source": Spec(
        HOST_CODE_IN_SOURCE, "axpb", N // 256, 256,
        lambda rng: [np.arange(N, dtype=np.float32), np.float32(2.0), np.float32(1.0),
                     np.int32(N)],
        lambda a: _close(a[0], 2.0 * np.arange(N, dtype=np.float32) + 1.0)),
    "bf16_math": Spec(
        BF16_MATH, "bf16_axpy", N // 256, 256, _bf16_args, _bf16_check),
    "math_constants": Spec(MATH_CONSTANTS, "phase", N // 256, 256, _phase_args, _phase_check),
    "cmath_uint": Spec(
        CMATH_UINT, "hypot_u", N // 256, 256,
        lambda rng: [rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32),
                     _nan(N), np.uint32(N)],
        lambda a: _close(a[2], np.hypot(a[0], a[1]), 1e-5)),
    "cg_lambda_reduce": Spec(
        CG_LAMBDA_REDUCE, "row_sums", 37, 32,
        lambda rng: [rng.standard_normal(37 * 77).astype(np.float32), _nan(37), np.int32(77)],
        lambda a: _close(a[1], a[0].reshape(37, 77).sum(1), 1e-4)),
    "arch_paths": Spec(
        ARCH_PATHS, "warp_totals", 9, 32,
        lambda rng: [rng.integers(0, 1 << 20, 9 * 32, dtype=np.uint32),
                     np.full(9, 0xDEADBEEF, np.uint32)],
        lambda a: np.testing.assert_array_equal(a[1], a[0].reshape(9, 32).sum(1)),
        refused={"gfx90a": "mask narrower than 64 bits"}),
    "default_args": Spec(
        DEFAULT_ARGS, "fill_range", 3, 128,
        lambda rng: [_nan(301), np.int32(301)],
        lambda a: _close(a[0], 0.5 + 0.25 * np.arange(301, dtype=np.float32))),
}

/* The CUDA dialect for hiprtc (quicklaunch.hip). quicklaunch includes this
 * before the user's source, so a kernel written for CUDA (and for the
 * quicklaunch CPU device) compiles for AMD GPUs unchanged where HIP can
 * express it, and fails to compile, with a message that says why, where it
 * cannot. See docs/hip-device.md for the mapping table.
 *
 * hiprtc pre-includes HIP's own device runtime (threadIdx, __syncthreads,
 * atomics, math, __half, vector types, warpSize = the wavefront size), so
 * this prelude only adds what CUDA has and HIP spells differently or lacks.
 * Every name it adds starts with ql_ / QL_, or is CUDA's own spelling mapped
 * by a macro onto a ql_hip:: function (so a HIP that defines the same name
 * itself does not collide with it).
 *
 * __CUDACC__ and __CUDA_ARCH__ are deliberately not defined (as on the CPU
 * device): code behind them is usually NVIDIA-specific (inline PTX).
 * QL_HIP_WAVE is the wavefront size (64 on CDNA/GCN, 32 on RDNA unless
 * compiled with -mwavefrontsize64). */
#ifndef QL_HIP_PRELUDE_H
#define QL_HIP_PRELUDE_H

#if __cplusplus < 201103L
#error "quicklaunch.hip needs C++11 or later (it compiles with -std=c++17 unless told otherwise)"
#endif

#define __QUICKLAUNCH_HIP__ 1
#define QL_HIP_WAVE __AMDGCN_WAVEFRONT_SIZE

/* HIP always has __half and __half2; quicklaunch's reflection recognises
 * them, and __nv_bfloat16 (below), by these guards. */
#define __CUDA_FP16_H__
#define __CUDA_BF16_H__

#ifndef NULL   /* as NVRTC, which has it without an #include */
#define NULL __null
#endif
#ifndef INFINITY
#define INFINITY __builtin_huge_valf()
#endif
#ifndef NAN
#define NAN __builtin_nanf("")
#endif
#ifndef HUGE_VALF
#define HUGE_VALF __builtin_huge_valf()
#endif
#ifndef HUGE_VAL
#define HUGE_VAL __builtin_huge_val()
#endif

typedef __INTPTR_TYPE__ intptr_t;
typedef __UINTPTR_TYPE__ uintptr_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;

/* assert, as CUDA has it without an #include (<assert.h> redefines it). */
#ifndef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __assert_fail(#e, __FILE__, __LINE__, __func__))
#endif
#endif

/* __trap: CUDA's spelling of the trap HIP calls __builtin_trap. */
#define __trap() __builtin_trap()

#include "ql_hip_warp.h"
#include "ql_hip_bf16.h"
#include "ql_hip_cache_hints.h"
#include "ql_hip_minmax.h"
#include "ql_hip_texture.h"   /* cudaTextureObject_t */
#include "ql_shift.h"   /* x << __ql_clamp(n): shifts clamped as CUDA's (clamp.py) */

namespace ql_hip {
/* __nanosleep: s_sleep N waits about 64 * N clocks (roughly 30-60 ns); the
 * sleep is approximate, as CUDA's own is. */
__device__ inline void nanosleep(unsigned ns) {
    for (unsigned i = 0; i < ns / 64u + 1u; ++i) __builtin_amdgcn_s_sleep(1);
}
}  // namespace ql_hip
#define __nanosleep ql_hip::nanosleep

#endif

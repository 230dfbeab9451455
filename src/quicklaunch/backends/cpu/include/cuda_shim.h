/* cuda_shim.h: CUDA C++'s device built-ins for the quicklaunch CPU device.
 *
 * Included first in every CPU kernel translation unit, which the host C++
 * compiler (C++17, g++ or clang++) builds into a shared object. It defines
 * the execution-space qualifiers, the thread-coordinate variables, vector
 * types, __half / __nv_bfloat16, CUDA's math functions and intrinsics, and
 * real atomics. Barriers and warp functions (ql_fibers.h, ql_warp.h) are
 * added only in tier-2 builds (QL_TIER2); in tier 1 a block's threads run
 * as a plain loop. Cooperative groups are cooperative_groups.h, which user
 * code includes.
 *
 * Kept light for compile latency: only C library headers, no <iostream>,
 * <atomic> or <type_traits>. (In C++, libstdc++'s <math.h> is its <cmath>,
 * about 0.1 s of the compile; it is what gives sqrt(float), exp(float),
 * fabs(float), ... in the global namespace as CUDA has them, and it keeps
 * a user's own later #include <cmath> consistent with the shim.)
 *
 * __CUDA_ARCH__ is defined by the compiler driver (-D__CUDA_ARCH__=900, or
 * the architecture of an -arch=sm_XX option): the CPU compiles as the device
 * pass of that architecture, so `#if __CUDA_ARCH__ >= 800` takes the same
 * path as on that GPU. The C/C++ library headers test no such macro.
 * __CUDACC__ is not defined; QUICKLAUNCH_CPU and __QUICKLAUNCH__ are.
 *
 * Macros that change the build (the compiler driver, backends/cpu/, sets
 * all but the last):
 *   QL_DEBUG              kernels are out-of-line, kept functions (for gdb);
 *   QL_TIER2              every CUDA thread is a fiber (barriers, warps);
 *   QL_ABORTS             the module can stop a thread (assert, __trap), so
 *                         tier 1 sets up a way back (ql_cpu_export.h);
 *   QL_SCAN_KERNELS       the preprocessor-only scan: __global__ is kept;
 *   QL_NO_BUILTIN_VARS    omit threadIdx, blockIdx, blockDim, gridDim. */
#ifndef QL_CUDA_SHIM_H
#define QL_CUDA_SHIM_H

#ifndef __cplusplus
#error "cuda_shim.h is C++ (compile CUDA kernels with a C++17 compiler)"
#endif

#define QUICKLAUNCH_CPU 1
#define __QUICKLAUNCH__ 1

#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <assert.h>

/* --------------------------------------------------------- qualifiers */
#ifdef QL_DEBUG
#define QL_GLOBAL __attribute__((noinline, used))
#define __forceinline__ inline
#else
#define QL_GLOBAL inline __attribute__((always_inline))
#define __forceinline__ inline __attribute__((always_inline))
#endif
/* QL_SCAN_KERNELS: the preprocessor-only pass that finds the module's
 * kernels leaves __global__ in its output for the signature parser. */
#ifndef QL_SCAN_KERNELS
#define __global__ QL_GLOBAL
#endif
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __device_builtin__
#define __cudart_builtin__
/* One block runs at a time per worker thread, in either tier. In an inline or
 * template kernel these statics are vague-linkage (GNU-unique) symbols,
 * shared by every module of the process that has the same kernel, unless
 * the module is compiled with -fvisibility=hidden. */
/* thread_local alone: at block scope it implies static storage, and a user's
 * own `static __shared__` (a common spelling) stays legal. */
#define __shared__ thread_local __attribute__((unused))
/* libstdc++ spells __attribute__((__noinline__)) in a few headers (<memory>
 * via shared_ptr_base.h), which this macro breaks, as CUDA's own does with
 * GCC 12; #undef __noinline__ before including such a header. */
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __cluster_dims__(...)
/* __restrict__ is a keyword of g++ and clang++ already. */

/* Nothing the shim defines is exported from the kernel module: functions
 * are static, member functions hidden. (A visibility pragma would also
 * hide the types, and warn on every user struct holding a __half.) */
#ifdef QL_MEMCHECK
/* A memcheck build (ql_memcheck.h) checks the user's accesses, not the
 * shim's own bookkeeping; the atomics (QL_FN_CHECKED) are checked. */
#define QL_FN static inline __attribute__((no_sanitize_address))
#else
#define QL_FN static inline
#endif
#define QL_FN_CHECKED static inline
#define QL_MEMBER __attribute__((visibility("hidden")))

#include "ql_vector_types.h"
#include "ql_shift.h"   /* x << __ql_clamp(n): shifts as the GPU clamps them */

/* ------------------------------------------------- thread coordinates */
/* Assigned by the module's block loop around the kernel body
 * (ql_cpu_export.h), per fiber in tier 2 (ql_fibers.h). */
#ifndef QL_NO_BUILTIN_VARS
static thread_local uint3 threadIdx __attribute__((unused));
static thread_local uint3 blockIdx __attribute__((unused));
static thread_local dim3 blockDim __attribute__((unused));
static thread_local dim3 gridDim __attribute__((unused));
#endif
static constexpr int warpSize = 32;

#include "ql_math.h"
#include "ql_half.h"
#include "ql_atomics.h"
#include "ql_launch_state.h"
#include "ql_texture.h"   /* texture objects: cudaTextureObject_t, tex2D<T>, ... */
#ifdef QL_TIER2
#include "ql_fibers.h"
#include "ql_warp.h"
#endif

#endif /* QL_CUDA_SHIM_H */

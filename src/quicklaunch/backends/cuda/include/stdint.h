/* stdint.h for NVRTC (quicklaunch.cuda), which has no C library headers:
 * the fixed-width integer types and their limits, from CCCL's <cuda/std/cstdint>
 * (bundled with NVRTC) when it can be found, else spelled out for the
 * device's data model (char 8, short 16, int 32, long long 64 bits). */
#ifndef QL_NVRTC_STDINT_H
#define QL_NVRTC_STDINT_H
#if defined(__has_include)
#if __has_include(<cuda/std/cstdint>)
#define QL_NVRTC_HAVE_CCCL_CSTDINT 1
#endif
#endif
#ifdef QL_NVRTC_HAVE_CCCL_CSTDINT
/* C++ linkage for CCCL's templates when a source includes <stdint.h> inside
 * extern "C" { } (C headers may be; the CPU device's and hiprtc's are) */
extern "C++" {
#include <cuda/std/cstdint>
using cuda::std::int8_t; using cuda::std::int16_t; using cuda::std::int32_t;
using cuda::std::int64_t; using cuda::std::uint8_t; using cuda::std::uint16_t;
using cuda::std::uint32_t; using cuda::std::uint64_t; using cuda::std::intptr_t;
using cuda::std::uintptr_t; using cuda::std::intmax_t; using cuda::std::uintmax_t;
}
#else
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;
#include "ql_int_limits.h"
#endif
#endif

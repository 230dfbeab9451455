/* math.h for NVRTC and hiprtc: the functions are the device runtime's;
 * here are the macros: INFINITY, NAN, HUGE_VAL(F) and the M_* constants. */
#ifndef QL_MATH_H
#define QL_MATH_H
#include "ql_libc.h"
#if defined(__HIPCC_RTC__) || !defined(__CUDACC_RTC__)
#define QL_INF_F __builtin_huge_valf()
#define QL_INF_D __builtin_huge_val()
#define QL_NAN_F __builtin_nanf("")
#else  /* NVRTC's front end has no __builtin_huge_valf */
#define QL_INF_F __int_as_float(0x7f800000)
#define QL_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define QL_NAN_F __int_as_float(0x7fffffff)
#endif
#ifndef INFINITY
#define INFINITY QL_INF_F
#endif
#ifndef NAN
#define NAN QL_NAN_F
#endif
#ifndef HUGE_VALF
#define HUGE_VALF QL_INF_F
#endif
#ifndef HUGE_VAL
#define HUGE_VAL QL_INF_D
#endif
#ifndef M_PI
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#endif
#endif

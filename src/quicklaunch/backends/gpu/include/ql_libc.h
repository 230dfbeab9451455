/* What the C headers kernels include define, for NVRTC and hiprtc alike
 * (the stand-ins stdio.h, stdlib.h, float.h, limits.h, ... of this folder
 * all come here): NULL, offsetof, EXIT_*, RAND_MAX, the float and integer
 * limits for the GPUs' data model (int 32, long and pointers 64 bits), and
 * the uint/ushort/ulong typedefs. printf, malloc, free, memcpy, memset and
 * clock are the compilers' own device built-ins. A name the compiler
 * already defines keeps its definition. */
#ifndef QL_LIBC_H
#define QL_LIBC_H
#ifndef NULL
#define NULL 0
#endif
#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#ifndef RAND_MAX
#define RAND_MAX 2147483647
#endif
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
typedef decltype((char *)0 - (char *)0) ptrdiff_t;
typedef decltype(sizeof(0)) size_t;

#ifndef CHAR_BIT
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#if defined(__CHAR_UNSIGNED__)   /* the host ABI's char (aarch64: unsigned) */
#define CHAR_MIN 0
#define CHAR_MAX UCHAR_MAX
#else
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#endif
#define SHRT_MIN (-32767 - 1)
#define SHRT_MAX 32767
#define USHRT_MAX 65535
#define INT_MIN (-2147483647 - 1)
#define INT_MAX 2147483647
#define UINT_MAX 4294967295U
#define LONG_MIN (-9223372036854775807L - 1)
#define LONG_MAX 9223372036854775807L
#define ULONG_MAX 18446744073709551615UL
#define LLONG_MIN (-9223372036854775807LL - 1)
#define LLONG_MAX 9223372036854775807LL
#define ULLONG_MAX 18446744073709551615ULL
#endif

#ifndef FLT_MAX
#define FLT_RADIX 2
#define FLT_MANT_DIG 24
#define DBL_MANT_DIG 53
#define FLT_DIG 6
#define DBL_DIG 15
#define FLT_MIN_EXP (-125)
#define DBL_MIN_EXP (-1021)
#define FLT_MAX_EXP 128
#define DBL_MAX_EXP 1024
#define FLT_MAX 3.40282346638528859812e+38F
#define FLT_MIN 1.17549435082228750797e-38F
#define FLT_EPSILON 1.1920928955078125e-07F
#define FLT_TRUE_MIN 1.40129846432481707092e-45F
#define DBL_MAX 1.79769313486231570815e+308
#define DBL_MIN 2.22507385850720138309e-308
#define DBL_EPSILON 2.22044604925031308085e-16
#define DBL_TRUE_MIN 4.94065645841246544177e-324
#endif
#endif

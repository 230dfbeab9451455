/* stdint.h for hiprtc (quicklaunch.hip). Without it hiprtc would find the
 * host's /usr/include/stdint.h, whose typedefs clash with HIP's. HIP's
 * device runtime defines the fixed-width types (int64_t is long long);
 * the prelude adds intptr_t and uintptr_t; here are the limits. */
#ifndef QL_HIP_STDINT_H
#define QL_HIP_STDINT_H
typedef signed char int8_t;
typedef short int16_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;
#include "ql_int_limits.h"
#ifndef SIZE_MAX
#define SIZE_MAX UINT64_MAX
#endif
#endif

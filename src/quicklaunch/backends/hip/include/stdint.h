/* stdint.h for hiprtc (quicklaunch.hip). Without it hiprtc would find the
 * host's /usr/include/stdint.h, whose typedefs clash with HIP's. HIP's
 * device runtime defines the fixed-width types (int64_t is long long);
 * the prelude adds intptr_t and uintptr_t; here are the limits. */
#ifndef QL_HIP_STDINT_H
#define QL_HIP_STDINT_H
typedef long long intmax_t;
typedef unsigned long long uintmax_t;
#ifndef INT8_MAX
#define INT8_MIN (-128)
#define INT16_MIN (-32767 - 1)
#define INT32_MIN (-2147483647 - 1)
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT8_MAX 127
#define INT16_MAX 32767
#define INT32_MAX 2147483647
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define SIZE_MAX UINT64_MAX
#endif
#endif

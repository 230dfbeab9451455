/* The limits of the fixed-width integers (<stdint.h>'s INT8_MIN ...
 * UINT64_MAX) for the GPUs' data model (char 8, short 16, int 32, long long
 * 64 bits), for the stdint.h stand-ins of NVRTC (cuda/include) and hiprtc
 * (hip/include). A compiler that already defines them keeps its own. */
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
#endif

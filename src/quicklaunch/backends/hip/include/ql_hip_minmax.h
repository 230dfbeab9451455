/* CUDA's mixed-signedness min/max overloads for hiprtc: min(int, unsigned)
 * and the like compare as the unsigned type and return it, as CUDA's do
 * (HIP has none, so such a call picked min(double, double)). */
#ifndef QL_HIP_MINMAX_H
#define QL_HIP_MINMAX_H
#define QL_HIP_MIXED(S, U)                                                        \
    __device__ __forceinline__ U min(S a, U b) { return (U)a < b ? (U)a : b; }   \
    __device__ __forceinline__ U min(U a, S b) { return a < (U)b ? a : (U)b; }   \
    __device__ __forceinline__ U max(S a, U b) { return (U)a > b ? (U)a : b; }   \
    __device__ __forceinline__ U max(U a, S b) { return a > (U)b ? a : (U)b; }
QL_HIP_MIXED(int, unsigned int)
QL_HIP_MIXED(long long, unsigned long long)
#undef QL_HIP_MIXED
#endif

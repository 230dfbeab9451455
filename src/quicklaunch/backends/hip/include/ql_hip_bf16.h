/* __nv_bfloat16 and __nv_bfloat162 for hiprtc (quicklaunch.hip), which has
 * no bfloat16 type of CUDA's spelling: 16-bit storage (the top half of an
 * IEEE float), arithmetic in float, conversions rounding to nearest even
 * (NaN stays NaN). Always available, as on the CPU device. */
#ifndef QL_HIP_BF16_H
#define QL_HIP_BF16_H

namespace ql_hip {
constexpr __host__ __device__ unsigned short bits2bf(unsigned u) {
    return (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)  /* quiet NaN */
         : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  /* nearest, ties to even */
}
constexpr __host__ __device__ unsigned short f2bf(float f) {
    return bits2bf(__builtin_bit_cast(unsigned, f));
}
constexpr __host__ __device__ float bf2f(unsigned short b) {
    return __builtin_bit_cast(float, (unsigned)b << 16);
}
}  // namespace ql_hip

struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __host__ __device__ __nv_bfloat16(float f) : __x(ql_hip::f2bf(f)) {}
    __host__ __device__ __nv_bfloat16(double f) : __x(ql_hip::f2bf((float)f)) {}
    __host__ __device__ __nv_bfloat16(int i) : __x(ql_hip::f2bf((float)i)) {}
    __host__ __device__ __nv_bfloat16(__nv_bfloat16_raw r) : __x(r.x) {}
    __host__ __device__ operator float() const { return ql_hip::bf2f(__x); }
    __host__ __device__ operator __nv_bfloat16_raw() const { __nv_bfloat16_raw r = {__x}; return r; }
#define QL_BF16_ASSIGN(op) \
    __host__ __device__ __nv_bfloat16 &operator op##=(__nv_bfloat16 o) { \
        *this = __nv_bfloat16((float)*this op (float)o); return *this; }
    QL_BF16_ASSIGN(+) QL_BF16_ASSIGN(-) QL_BF16_ASSIGN(*) QL_BF16_ASSIGN(/)
#undef QL_BF16_ASSIGN
};
#define QL_BF16_BINARY(op) \
    __host__ __device__ inline __nv_bfloat16 operator op(__nv_bfloat16 a, __nv_bfloat16 b) { \
        return __nv_bfloat16((float)a op (float)b); }
QL_BF16_BINARY(+) QL_BF16_BINARY(-) QL_BF16_BINARY(*) QL_BF16_BINARY(/)
#undef QL_BF16_BINARY
#define QL_BF16_COMPARE(op) \
    __host__ __device__ inline bool operator op(__nv_bfloat16 a, __nv_bfloat16 b) { \
        return (float)a op (float)b; }
QL_BF16_COMPARE(==) QL_BF16_COMPARE(!=) QL_BF16_COMPARE(<) QL_BF16_COMPARE(<=)
QL_BF16_COMPARE(>) QL_BF16_COMPARE(>=)
#undef QL_BF16_COMPARE
__host__ __device__ inline __nv_bfloat16 operator-(__nv_bfloat16 a) {
    __nv_bfloat16 r; r.__x = (unsigned short)(a.__x ^ 0x8000u); return r;
}

struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __host__ __device__ __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

__host__ __device__ inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
__host__ __device__ inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
__host__ __device__ inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
__host__ __device__ inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
__host__ __device__ inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
    __nv_bfloat16 b; b.__x = u; return b;
}
__host__ __device__ inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b));
}
__host__ __device__ inline __nv_bfloat162 __float2bfloat162_rn(float a) {
    return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(a));
}
__host__ __device__ inline float __low2float(__nv_bfloat162 v) { return (float)v.x; }
__host__ __device__ inline float __high2float(__nv_bfloat162 v) { return (float)v.y; }
__host__ __device__ inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return a + b; }
__host__ __device__ inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return a * b; }

/* The rest of CUDA's bf16 conversion family, and the pair arithmetic. */
#define QL_BF2 __host__ __device__ inline __nv_bfloat162
QL_BF2 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
QL_BF2 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
QL_BF2 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
QL_BF2 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
QL_BF2 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
QL_BF2 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
QL_BF2 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
QL_BF2 __lowhigh2highlow(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.x); }
QL_BF2 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x + b.x, a.y + b.y); }
QL_BF2 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x - b.x, a.y - b.y); }
QL_BF2 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x * b.x, a.y * b.y); }
QL_BF2 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __nv_bfloat162(__nv_bfloat16(__builtin_fmaf((float)a.x, (float)b.x, (float)c.x)),
                          __nv_bfloat16(__builtin_fmaf((float)a.y, (float)b.y, (float)c.y)));
}
#undef QL_BF2
__host__ __device__ inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 a) { return a.x; }
__host__ __device__ inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 a) { return a.y; }
__host__ __device__ inline float2 __bfloat1622float2(__nv_bfloat162 a) {
    return make_float2((float)a.x, (float)a.y);
}
__host__ __device__ inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return a - b; }
__host__ __device__ inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __nv_bfloat16(__builtin_fmaf((float)a, (float)b, (float)c));
}
__device__ inline int __bfloat162int_rn(__nv_bfloat16 b) { return __float2int_rn((float)b); }
__device__ inline int __bfloat162int_rz(__nv_bfloat16 b) { return (int)(float)b; }
__host__ __device__ inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __nv_bfloat16(i); }

#endif

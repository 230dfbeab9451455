/* __half, __half2, __nv_bfloat16 and __nv_bfloat162 for the quicklaunch CPU
 * device, with CUDA's conversions, intrinsics and operators. Part of
 * cuda_shim.h; include that instead (cuda_fp16.h / cuda_bf16.h add the
 * `half` / `nv_bfloat16` type names).
 *
 * Conversions are exact integer code (correct for subnormals, overflow,
 * NaN, ties), independent of the FPU's flush-to-zero mode. Arithmetic is
 * done in float and rounded once, which is correctly rounded for + - * /
 * (float has at least 2p+2 bits for p = 11 and p = 8); fma goes through a
 * round-to-odd double so it is correctly rounded too. */
#ifndef QL_HALF_H
#define QL_HALF_H

enum { QL_RN = 0, QL_RZ = 1, QL_RU = 2, QL_RD = 3 };

/* Whether to add one unit to the truncated magnitude q, given the discarded
 * part rem, the value of half a unit, the sign and the rounding mode. */
QL_FN unsigned int ql_round_inc(unsigned int q, unsigned int rem, unsigned int half,
                                unsigned int sign, int mode) {
    if (mode == QL_RN) return rem > half || (rem == half && (q & 1u));
    if (mode == QL_RU) return rem != 0 && !sign;
    if (mode == QL_RD) return rem != 0 && sign;
    return 0;
}

/* float -> binary16 bits. */
QL_FN unsigned short ql_f2h(float f, int mode) {
    unsigned int x = ql_bit_cast<unsigned int>(f);
    unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, q, rem, half;
    if (ax > 0x7f800000u) /* NaN: quiet, keep the payload's top bits */
        return (unsigned short)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x47800000u) { /* |f| >= 2^16 or inf: inf or the largest finite */
        bool inf = ax == 0x7f800000u || mode == QL_RN || (mode == QL_RU && !sign) ||
                   (mode == QL_RD && sign);
        return (unsigned short)(sign | (inf ? 0x7c00u : 0x7bffu));
    }
    if (ax >= 0x38800000u) { /* normal half: rebias the exponent, drop 13 bits */
        unsigned int r = ax - 0x38000000u;
        q = r >> 13, rem = r & 0x1fffu, half = 0x1000u;
    } else { /* subnormal half: units of 2^-24 */
        unsigned int shift = 126u - (ax >> 23);
        if (shift > 24u) {
            q = 0, rem = ax != 0, half = 2; /* below half a unit, or zero */
        } else {
            unsigned int m = (ax & 0x7fffffu) | 0x800000u;
            q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        }
    }
    return (unsigned short)(sign | (q + ql_round_inc(q, rem, half, sign, mode)));
}

/* binary16 bits -> float (exact). */
QL_FN float ql_h2f(unsigned short h) {
    unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    if (e == 0x1f) return ql_bit_cast<float>(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    return ql_bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

/* float -> bfloat16 bits. */
QL_FN unsigned short ql_f2bf(float f, int mode) {
    unsigned int x = ql_bit_cast<unsigned int>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    unsigned int q = x >> 16;
    return (unsigned short)(q + ql_round_inc(q, x & 0xffffu, 0x8000u, x >> 31, mode));
}
QL_FN float ql_bf2f(unsigned short b) { return ql_bit_cast<float>((unsigned int)b << 16); }

/* double -> float rounded to odd: rounding that again to p <= 22 bits, in
 * any mode, equals rounding the double directly. */
QL_FN float ql_d2f_odd(double d) {
    float f = (float)d;
    if ((double)f != d && d == d) {
        unsigned int b = ql_bit_cast<unsigned int>(f);
        if (__builtin_fabs((double)f) > __builtin_fabs(d)) b -= 1u; /* toward zero */
        f = ql_bit_cast<float>(b | 1u);
    }
    return f;
}
/* a + b rounded to odd (to 53 bits): the nearest sum, moved to its odd
 * neighbour when inexact (TwoSum gives the exact error). */
QL_FN double ql_add_odd(double a, double b) {
    double s = a + b, bb = s - a, e = (a - (s - bb)) + (b - bb);
    if (e != 0.0 && !(ql_bit_cast<unsigned long long>(s) & 1ull) && __builtin_isfinite(s)) {
        unsigned long long bits = ql_bit_cast<unsigned long long>(s);
        s = ql_bit_cast<double>((e > 0) == (s > 0) ? bits + 1 : bits - 1);
    }
    return s;
}
/* a * b + c for 16-bit values (a * b is exact), rounded to odd. */
QL_FN double ql_fma16(double a, double b, double c) { return ql_add_odd(a * b, c); }

/* Arithmetic values to float rounded to odd (64-bit integers exactly, in
 * two halves), the first step of every conversion to a 16-bit float. */
QL_FN float ql_to_odd(float v) { return v; }
QL_FN float ql_to_odd(double v) { return ql_d2f_odd(v); }
QL_FN float ql_to_odd(unsigned long long u) {
    return ql_d2f_odd(ql_add_odd((double)(u >> 32) * 4294967296.0, (double)(u & 0xffffffffull)));
}
QL_FN float ql_to_odd(long long v) {
    float f = ql_to_odd(v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
    return v < 0 ? -f : f;
}
QL_FN float ql_to_odd(unsigned long v) { return ql_to_odd((unsigned long long)v); }
QL_FN float ql_to_odd(long v) { return ql_to_odd((long long)v); }
QL_FN float ql_to_odd(unsigned int v) { return ql_d2f_odd((double)v); }
QL_FN float ql_to_odd(int v) { return ql_d2f_odd((double)v); }

/* Which types a 16-bit float converts from (ql_h16_num: all arithmetic
 * types but long double) and to by a template (ql_h16_int: the integers and
 * bool; float has its own operator, and double goes through it as in CUDA,
 * so sqrt(h) still picks sqrt(float)). CUDA spells these as ten constructors
 * and thirteen conversion operators; templates give the same conversions at
 * a fraction of the compile time (overload resolution over that many
 * candidates on every copy is what dominated). */
template <class U> struct ql_h16_int {};
template <class U> struct ql_h16_num : ql_h16_int<U> {};
template <> struct ql_h16_num<float> { typedef float type; };
template <> struct ql_h16_num<double> { typedef double type; };
#define QL_H16_INT(U) template <> struct ql_h16_int<U> { typedef U type; };
QL_H16_INT(bool) QL_H16_INT(char) QL_H16_INT(signed char) QL_H16_INT(unsigned char)
QL_H16_INT(short) QL_H16_INT(unsigned short) QL_H16_INT(int) QL_H16_INT(unsigned int)
QL_H16_INT(long) QL_H16_INT(unsigned long) QL_H16_INT(long long) QL_H16_INT(unsigned long long)
#undef QL_H16_INT

/* float value -> integer type U, truncating and saturating (CUDA's _rz). */
template <class U> QL_FN U ql_h16_to(unsigned short, float f) {
    if ((U)-1 < (U)0) {
        long long hi = (long long)((1ull << (8 * sizeof(U) - 1)) - 1), v = __float2ll_rz(f);
        return (U)(v < -hi - 1 ? -hi - 1 : v > hi ? hi : v);
    }
    unsigned long long hi = (unsigned long long)(U)-1, v = __float2ull_rz(f);
    return (U)(v > hi ? hi : v);
}
template <> inline bool ql_h16_to<bool>(unsigned short bits, float) { return (bits & 0x7fffu) != 0; }

struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

/* The 16-bit float class: bits in __x, trivially copyable. */
#define QL_H16_CLASS(T, RAW, F2B, B2F)                                              \
    struct T {                                                                      \
        unsigned short __x;                                                         \
        T() = default;                                                              \
        QL_MEMBER constexpr T(const RAW &r) : __x(r.x) {}                           \
        template <class U, class = typename ql_h16_num<U>::type>                    \
        QL_MEMBER T(U v) : __x(F2B(ql_to_odd(v), QL_RN)) {}                         \
        QL_MEMBER operator RAW() const { return RAW{__x}; }                         \
        QL_MEMBER operator float() const { return B2F(__x); }                       \
        template <class U, class = typename ql_h16_int<U>::type>                    \
        QL_MEMBER operator U() const { return ql_h16_to<U>(__x, B2F(__x)); }        \
    };

QL_H16_CLASS(__half, __half_raw, ql_f2h, ql_h2f)
QL_H16_CLASS(__nv_bfloat16, __nv_bfloat16_raw, ql_f2bf, ql_bf2f)
#undef QL_H16_CLASS

#define QL_H16_PAIR(T2, T, RAW2)                                                    \
    struct QL_VEC_ALIGN(4) T2 {                                                     \
        T x, y;                                                                     \
        T2() = default;                                                             \
        QL_MEMBER constexpr T2(const T &a, const T &b) : x(a), y(b) {}              \
        QL_MEMBER constexpr T2(const RAW2 &r) : x(T##_raw{r.x}), y(T##_raw{r.y}) {} \
        QL_MEMBER operator RAW2() const { return RAW2{x.__x, y.__x}; }              \
    };
QL_H16_PAIR(__half2, __half, __half2_raw)
QL_H16_PAIR(__nv_bfloat162, __nv_bfloat16, __nv_bfloat162_raw)
#undef QL_H16_PAIR

/* Functions and operators, the same for both types. Bodies call only the
 * uniquely named ql_*_<NAME> helpers: overload resolution against a class
 * with this many conversions is what costs compile time. */
#define QL_H16_FUNCS(T, T2, NAME, F2B, B2F)                                        \
    QL_FN float ql_tof_##NAME(T a) { return B2F(a.__x); }                          \
    QL_FN T ql_mk_##NAME(unsigned short bits) { T r; r.__x = bits; return r; }     \
    QL_FN T ql_rnd_##NAME(float f) { return ql_mk_##NAME(F2B(f, QL_RN)); }         \
    QL_FN T ql_sat_##NAME(T a) {                                                   \
        float f = ql_tof_##NAME(a);                                                \
        return f >= 1.0f ? ql_rnd_##NAME(1.0f) : f > 0.0f ? a : ql_mk_##NAME(0);   \
    }                                                                              \
    QL_FN bool ql_isnan_##NAME(T a) { float f = B2F(a.__x); return f != f; }       \
    QL_FN T ql_fma_##NAME(T a, T b, T c) {                                         \
        return ql_mk_##NAME(F2B(ql_d2f_odd(ql_fma16(ql_tof_##NAME(a), ql_tof_##NAME(b), \
                                                    ql_tof_##NAME(c))), QL_RN));   \
    }                                                                              \
    QL_FN T ql_max_##NAME(T a, T b) { return ql_rnd_##NAME(ql_fmaxf(ql_tof_##NAME(a), ql_tof_##NAME(b))); } \
    QL_FN T ql_min_##NAME(T a, T b) { return ql_rnd_##NAME(ql_fminf(ql_tof_##NAME(a), ql_tof_##NAME(b))); } \
    QL_FN T ql_neg_##NAME(T a) { return ql_mk_##NAME((unsigned short)(a.__x ^ 0x8000u)); } \
    QL_FN T ql_abs_##NAME(T a) { return ql_mk_##NAME((unsigned short)(a.__x & 0x7fffu)); } \
    QL_FN T __hneg(T a) { return ql_neg_##NAME(a); }                               \
    QL_FN T __habs(T a) { return ql_abs_##NAME(a); }                               \
    QL_FN T __hfma(T a, T b, T c) { return ql_fma_##NAME(a, b, c); }               \
    QL_FN T __hfma_sat(T a, T b, T c) { return ql_sat_##NAME(ql_fma_##NAME(a, b, c)); } \
    QL_FN T __hfma_relu(T a, T b, T c) {                                           \
        T r = ql_fma_##NAME(a, b, c);                                              \
        return ql_isnan_##NAME(r) || ql_tof_##NAME(r) > 0.0f ? r : ql_mk_##NAME(0); \
    }                                                                              \
    QL_FN T __hmax(T a, T b) { return ql_max_##NAME(a, b); }                       \
    QL_FN T __hmin(T a, T b) { return ql_min_##NAME(a, b); }                       \
    QL_FN T __hmax_nan(T a, T b) {                                                 \
        return ql_isnan_##NAME(a) ? a : ql_isnan_##NAME(b) ? b : ql_max_##NAME(a, b); \
    }                                                                              \
    QL_FN T __hmin_nan(T a, T b) {                                                 \
        return ql_isnan_##NAME(a) ? a : ql_isnan_##NAME(b) ? b : ql_min_##NAME(a, b); \
    }                                                                              \
    QL_FN bool __hisnan(T a) { return ql_isnan_##NAME(a); }                        \
    QL_FN int __hisinf(T a) {                                                      \
        float f = ql_tof_##NAME(a);                                                \
        return f == INFINITY ? 1 : f == -INFINITY ? -1 : 0;                        \
    }                                                                              \
    QL_FN T operator+(const T &a) { return a; }                                    \
    QL_FN T operator-(const T &a) { return ql_neg_##NAME(a); }                     \
    QL_FN T &operator++(T &a) { return a = ql_rnd_##NAME(ql_tof_##NAME(a) + 1.0f); } \
    QL_FN T &operator--(T &a) { return a = ql_rnd_##NAME(ql_tof_##NAME(a) - 1.0f); } \
    QL_FN T operator++(T &a, int) { T o = a; a = ql_rnd_##NAME(ql_tof_##NAME(a) + 1.0f); return o; } \
    QL_FN T operator--(T &a, int) { T o = a; a = ql_rnd_##NAME(ql_tof_##NAME(a) - 1.0f); return o; } \
    QL_FN T2 __hneg2(T2 a) { return T2(ql_neg_##NAME(a.x), ql_neg_##NAME(a.y)); }  \
    QL_FN T2 __habs2(T2 a) { return T2(ql_abs_##NAME(a.x), ql_abs_##NAME(a.y)); }  \
    QL_FN T2 __hfma2(T2 a, T2 b, T2 c) {                                           \
        return T2(ql_fma_##NAME(a.x, b.x, c.x), ql_fma_##NAME(a.y, b.y, c.y));     \
    }                                                                              \
    QL_FN T2 __hfma2_sat(T2 a, T2 b, T2 c) {                                       \
        return T2(ql_sat_##NAME(ql_fma_##NAME(a.x, b.x, c.x)),                     \
                  ql_sat_##NAME(ql_fma_##NAME(a.y, b.y, c.y)));                    \
    }                                                                              \
    QL_FN T2 __hmax2(T2 a, T2 b) { return T2(ql_max_##NAME(a.x, b.x), ql_max_##NAME(a.y, b.y)); } \
    QL_FN T2 __hmin2(T2 a, T2 b) { return T2(ql_min_##NAME(a.x, b.x), ql_min_##NAME(a.y, b.y)); } \
    QL_FN T2 __hisnan2(T2 a) {                                                     \
        return T2(ql_rnd_##NAME(ql_isnan_##NAME(a.x) ? 1.0f : 0.0f),               \
                  ql_rnd_##NAME(ql_isnan_##NAME(a.y) ? 1.0f : 0.0f));              \
    }                                                                              \
    QL_FN T2 operator+(const T2 &a) { return a; }                                  \
    QL_FN T2 operator-(const T2 &a) { return T2(ql_neg_##NAME(a.x), ql_neg_##NAME(a.y)); } \
    QL_H16_OP(T, T2, NAME, __hadd, __hadd2, +)                                     \
    QL_H16_OP(T, T2, NAME, __hsub, __hsub2, -)                                     \
    QL_H16_OP(T, T2, NAME, __hmul, __hmul2, *)                                     \
    QL_H16_OP(T, T2, NAME, __hdiv, __h2div, /)                                     \
    QL_H16_OP_EXTRA(T, T2, NAME, __hadd, __hadd2)                                  \
    QL_H16_OP_EXTRA(T, T2, NAME, __hsub, __hsub2)                                  \
    QL_H16_OP_EXTRA(T, T2, NAME, __hmul, __hmul2)                                  \
    QL_H16_CMP(T, T2, NAME, eq, x == y) QL_H16_CMP(T, T2, NAME, ne, x < y || x > y) \
    QL_H16_CMP(T, T2, NAME, lt, x < y) QL_H16_CMP(T, T2, NAME, le, x <= y)         \
    QL_H16_CMP(T, T2, NAME, gt, x > y) QL_H16_CMP(T, T2, NAME, ge, x >= y)         \
    QL_H16_CMP(T, T2, NAME, equ, !(x < y || x > y)) QL_H16_CMP(T, T2, NAME, neu, !(x == y)) \
    QL_H16_CMP(T, T2, NAME, ltu, !(x >= y)) QL_H16_CMP(T, T2, NAME, leu, !(x > y)) \
    QL_H16_CMP(T, T2, NAME, gtu, !(x <= y)) QL_H16_CMP(T, T2, NAME, geu, !(x < y)) \
    QL_H16_CMPOP(T, T2, NAME, ==, eq) QL_H16_CMPOP(T, T2, NAME, !=, neu)           \
    QL_H16_CMPOP(T, T2, NAME, <, lt) QL_H16_CMPOP(T, T2, NAME, <=, le)             \
    QL_H16_CMPOP(T, T2, NAME, >, gt) QL_H16_CMPOP(T, T2, NAME, >=, ge)             \
    QL_H16_MATH(T, T2, NAME, sqrt, sqrtf(x)) QL_H16_MATH(T, T2, NAME, rsqrt, 1.0f / sqrtf(x)) \
    QL_H16_MATH(T, T2, NAME, rcp, 1.0f / x) QL_H16_MATH(T, T2, NAME, exp, expf(x)) \
    QL_H16_MATH(T, T2, NAME, exp2, exp2f(x)) QL_H16_MATH(T, T2, NAME, exp10, exp10f(x)) \
    QL_H16_MATH(T, T2, NAME, log, logf(x)) QL_H16_MATH(T, T2, NAME, log2, log2f(x)) \
    QL_H16_MATH(T, T2, NAME, log10, log10f(x)) QL_H16_MATH(T, T2, NAME, sin, sinf(x)) \
    QL_H16_MATH(T, T2, NAME, cos, cosf(x)) QL_H16_MATH(T, T2, NAME, tanh, tanhf(x)) \
    QL_H16_MATH(T, T2, NAME, ceil, ceilf(x)) QL_H16_MATH(T, T2, NAME, floor, floorf(x)) \
    QL_H16_MATH(T, T2, NAME, trunc, truncf(x)) QL_H16_MATH(T, T2, NAME, rint, rintf(x))
/* A binary operation: the function, its pair version and the operators. */
#define QL_H16_OP(T, T2, NAME, fn, fn2, op)                                        \
    QL_FN T ql##fn##_##NAME(T a, T b) {                                            \
        return ql_rnd_##NAME(ql_tof_##NAME(a) op ql_tof_##NAME(b));                \
    }                                                                              \
    QL_FN T fn(T a, T b) { return ql##fn##_##NAME(a, b); }                         \
    QL_FN T operator op(const T &a, const T &b) { return ql##fn##_##NAME(a, b); }  \
    QL_FN T &operator op##=(T &a, const T &b) { return a = ql##fn##_##NAME(a, b); } \
    QL_FN T2 ql##fn2##_##NAME(T2 a, T2 b) {                                        \
        return T2(ql##fn##_##NAME(a.x, b.x), ql##fn##_##NAME(a.y, b.y));           \
    }                                                                              \
    QL_FN T2 fn2(T2 a, T2 b) { return ql##fn2##_##NAME(a, b); }                    \
    QL_FN T2 operator op(const T2 &a, const T2 &b) { return ql##fn2##_##NAME(a, b); } \
    QL_FN T2 &operator op##=(T2 &a, const T2 &b) { return a = ql##fn2##_##NAME(a, b); }
/* The _rn (never contracted: already so) and _sat ([0, 1]) variants. */
#define QL_H16_OP_EXTRA(T, T2, NAME, fn, fn2)                                      \
    QL_FN T fn##_rn(T a, T b) { return ql##fn##_##NAME(a, b); }                    \
    QL_FN T fn##_sat(T a, T b) { return ql_sat_##NAME(ql##fn##_##NAME(a, b)); }    \
    QL_FN T2 fn2##_sat(T2 a, T2 b) {                                               \
        return T2(ql_sat_##NAME(ql##fn##_##NAME(a.x, b.x)),                        \
                  ql_sat_##NAME(ql##fn##_##NAME(a.y, b.y)));                       \
    }
/* A comparison: __h<c>, __h<c>2 (1.0 or 0.0 per lane), __hb<c>2 (both). */
#define QL_H16_CMP(T, T2, NAME, c, test)                                           \
    QL_FN bool ql_##c##_##NAME(T a, T b) {                                         \
        float x = ql_tof_##NAME(a), y = ql_tof_##NAME(b);                          \
        return test;                                                               \
    }                                                                              \
    QL_FN bool __h##c(T a, T b) { return ql_##c##_##NAME(a, b); }                  \
    QL_FN T2 __h##c##2(T2 a, T2 b) {                                               \
        return T2(ql_rnd_##NAME(ql_##c##_##NAME(a.x, b.x) ? 1.0f : 0.0f),          \
                  ql_rnd_##NAME(ql_##c##_##NAME(a.y, b.y) ? 1.0f : 0.0f));         \
    }                                                                              \
    QL_FN bool __hb##c##2(T2 a, T2 b) {                                            \
        return ql_##c##_##NAME(a.x, b.x) && ql_##c##_##NAME(a.y, b.y);             \
    }
#define QL_H16_CMPOP(T, T2, NAME, op, c)                                           \
    QL_FN bool operator op(const T &a, const T &b) { return ql_##c##_##NAME(a, b); } \
    QL_FN bool operator op(const T2 &a, const T2 &b) {                             \
        return ql_##c##_##NAME(a.x, b.x) && ql_##c##_##NAME(a.y, b.y);             \
    }
/* A math function: h<fn> and h2<fn>, computed in float. */
#define QL_H16_MATH(T, T2, NAME, fn, expr)                                         \
    QL_FN T ql_h##fn##_##NAME(T a) { float x = ql_tof_##NAME(a); return ql_rnd_##NAME(expr); } \
    QL_FN T h##fn(T a) { return ql_h##fn##_##NAME(a); }                            \
    QL_FN T2 h2##fn(T2 a) { return T2(ql_h##fn##_##NAME(a.x), ql_h##fn##_##NAME(a.y)); }

QL_H16_FUNCS(__half, __half2, half, ql_f2h, ql_h2f)
QL_H16_FUNCS(__nv_bfloat16, __nv_bfloat162, bfloat16, ql_f2bf, ql_bf2f)
#undef QL_H16_FUNCS
#undef QL_H16_OP
#undef QL_H16_OP_EXTRA
#undef QL_H16_CMP
#undef QL_H16_CMPOP
#undef QL_H16_MATH

/* Conversions named per type. NAME is "half" or "bfloat16", PAIR "half2" or
 * "bfloat162"; CUDA spells them __float2half_rn, __float2bfloat16_rn, ... */
#define QL_H16_CONV(T, T2, NAME, PAIR, F2B, B2F)                                      \
    QL_FN float __##NAME##2float(T a) { return B2F(a.__x); }                          \
    QL_FN T __float2##NAME(float f) { return ql_mk_##NAME(F2B(f, QL_RN)); }          \
    QL_FN T __float2##NAME##_rn(float f) { return ql_mk_##NAME(F2B(f, QL_RN)); }     \
    QL_FN T __float2##NAME##_rz(float f) { return ql_mk_##NAME(F2B(f, QL_RZ)); }     \
    QL_FN T __float2##NAME##_ru(float f) { return ql_mk_##NAME(F2B(f, QL_RU)); }     \
    QL_FN T __float2##NAME##_rd(float f) { return ql_mk_##NAME(F2B(f, QL_RD)); }     \
    QL_FN T __double2##NAME(double d) { return ql_mk_##NAME(F2B(ql_d2f_odd(d), QL_RN)); } \
    QL_FN short __##NAME##_as_short(T a) { return (short)a.__x; }                     \
    QL_FN unsigned short __##NAME##_as_ushort(T a) { return a.__x; }                  \
    QL_FN T __short_as_##NAME(short s) { return ql_mk_##NAME((unsigned short)s); }    \
    QL_FN T __ushort_as_##NAME(unsigned short s) { return ql_mk_##NAME(s); }          \
    QL_H16_I2X(T, NAME, int, int, F2B) QL_H16_I2X(T, NAME, uint, unsigned int, F2B)     \
    QL_H16_I2X(T, NAME, short, short, F2B) QL_H16_I2X(T, NAME, ushort, unsigned short, F2B) \
    QL_H16_I2X(T, NAME, ll, long long, F2B) QL_H16_I2X(T, NAME, ull, unsigned long long, F2B) \
    QL_H16_X2I(T, NAME, int, int, int, B2F) QL_H16_X2I(T, NAME, uint, unsigned int, uint, B2F) \
    QL_H16_X2I(T, NAME, ll, long long, ll, B2F)                                         \
    QL_H16_X2I(T, NAME, ull, unsigned long long, ull, B2F)                              \
    QL_FN short __##NAME##2short_rz(T a) {                                            \
        int v = __float2int_rz(B2F(a.__x));                                           \
        return (short)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);                   \
    }                                                                                 \
    QL_FN unsigned short __##NAME##2ushort_rz(T a) {                                  \
        unsigned int v = __float2uint_rz(B2F(a.__x));                                 \
        return (unsigned short)(v > 65535u ? 65535u : v);                             \
    }                                                                                 \
    QL_FN T2 __float2##PAIR##_rn(float f) { T h = ql_rnd_##NAME(f); return T2(h, h); } \
    QL_FN T2 __floats2##PAIR##_rn(float a, float b) {                                 \
        return T2(ql_rnd_##NAME(a), ql_rnd_##NAME(b));                                \
    }                                                                                 \
    QL_FN T2 __float22##PAIR##_rn(float2 v) { return T2(ql_rnd_##NAME(v.x), ql_rnd_##NAME(v.y)); } \
    QL_FN float2 __##PAIR##2float2(T2 v) {                                            \
        return make_float2(ql_tof_##NAME(v.x), ql_tof_##NAME(v.y));                   \
    }                                                                                 \
    QL_FN float __low2float(T2 v) { return ql_tof_##NAME(v.x); }                      \
    QL_FN float __high2float(T2 v) { return ql_tof_##NAME(v.y); }                     \
    QL_FN T __low2##NAME(T2 v) { return v.x; }                                        \
    QL_FN T __high2##NAME(T2 v) { return v.y; }                                       \
    QL_FN T2 __halves2##PAIR(T a, T b) { return T2(a, b); }                           \
    QL_FN T2 __##NAME##2##PAIR(T a) { return T2(a, a); }                              \
    QL_FN T2 __low2##PAIR(T2 v) { return T2(v.x, v.x); }                              \
    QL_FN T2 __high2##PAIR(T2 v) { return T2(v.y, v.y); }                             \
    QL_FN T2 __lows2##PAIR(T2 a, T2 b) { return T2(a.x, b.x); }                       \
    QL_FN T2 __highs2##PAIR(T2 a, T2 b) { return T2(a.y, b.y); }                      \
    QL_FN T2 __lowhigh2highlow(T2 v) { return T2(v.y, v.x); }                         \
    QL_FN T2 make_##PAIR(T a, T b) { return T2(a, b); }
/* int -> 16-bit float in each rounding mode. */
#define QL_H16_I2X(T, NAME, IN, I, F2B)                                               \
    QL_FN T __##IN##2##NAME##_rn(I v) { return ql_mk_##NAME(F2B(ql_to_odd(v), QL_RN)); } \
    QL_FN T __##IN##2##NAME##_rz(I v) { return ql_mk_##NAME(F2B(ql_to_odd(v), QL_RZ)); } \
    QL_FN T __##IN##2##NAME##_ru(I v) { return ql_mk_##NAME(F2B(ql_to_odd(v), QL_RU)); } \
    QL_FN T __##IN##2##NAME##_rd(I v) { return ql_mk_##NAME(F2B(ql_to_odd(v), QL_RD)); }
#define QL_H16_X2I(T, NAME, OUT, I, FN, B2F)                                          \
    QL_FN I __##NAME##2##OUT##_rn(T a) { return __float2##FN##_rn(B2F(a.__x)); }      \
    QL_FN I __##NAME##2##OUT##_rz(T a) { return __float2##FN##_rz(B2F(a.__x)); }      \
    QL_FN I __##NAME##2##OUT##_ru(T a) { return __float2##FN##_ru(B2F(a.__x)); }      \
    QL_FN I __##NAME##2##OUT##_rd(T a) { return __float2##FN##_rd(B2F(a.__x)); }

QL_H16_CONV(__half, __half2, half, half2, ql_f2h, ql_h2f)
QL_H16_CONV(__nv_bfloat16, __nv_bfloat162, bfloat16, bfloat162, ql_f2bf, ql_bf2f)
#undef QL_H16_CONV
#undef QL_H16_I2X
#undef QL_H16_X2I

#endif /* QL_HALF_H */

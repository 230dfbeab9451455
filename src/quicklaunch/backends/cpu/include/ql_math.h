/* CUDA's math functions and intrinsics for the quicklaunch CPU device.
 * Part of cuda_shim.h; include that instead.
 *
 * The C++ <math.h> (included by the shim) already gives float overloads of
 * the standard functions (sqrt(float), exp(float), fabs(float), ...) in the
 * global namespace, as CUDA does. This file adds CUDA's own functions.
 *
 * Names that glibc's <math.h> declares without exporting (__expf, __logf,
 * __sinf, ...) or that newer C libraries may declare (rsqrtf, sinpif, ...)
 * are implemented as ql_* functions and mapped with a macro, so they both
 * compile and link. fminf/fmaxf/fmin/fmax and expf are mapped too: the libm
 * calls stop GCC from vectorising a loop, the inline versions do not. */
#ifndef QL_MATH_H
#define QL_MATH_H

/* ------------------------------------------------------------- bit casts */
/* __builtin_bit_cast is a value conversion; the memcpy fallback is a
 * character-typed access that GCC assumes may alias anything, which stops it
 * vectorising a loop with other stores (expf's table read, in a fission
 * thread loop that stores replicated locals). */
template <typename To, typename From>
QL_FN To ql_bit_cast(const From &from) {
    static_assert(sizeof(To) == sizeof(From), "ql_bit_cast: size mismatch");
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define QL_HAS_BIT_CAST 1
#endif
#endif
#ifdef QL_HAS_BIT_CAST
    return __builtin_bit_cast(To, from);
#else
    To to;
    __builtin_memcpy(&to, &from, sizeof(To));
    return to;
#endif
}

QL_FN int __float_as_int(float x) { return ql_bit_cast<int>(x); }
QL_FN unsigned int __float_as_uint(float x) { return ql_bit_cast<unsigned int>(x); }
QL_FN float __int_as_float(int x) { return ql_bit_cast<float>(x); }
QL_FN float __uint_as_float(unsigned int x) { return ql_bit_cast<float>(x); }
QL_FN long long __double_as_longlong(double x) { return ql_bit_cast<long long>(x); }
QL_FN double __longlong_as_double(long long x) { return ql_bit_cast<double>(x); }
QL_FN int __double2hiint(double x) { return (int)(ql_bit_cast<unsigned long long>(x) >> 32); }
QL_FN int __double2loint(double x) { return (int)ql_bit_cast<unsigned long long>(x); }
QL_FN double __hiloint2double(int hi, int lo) {
    return ql_bit_cast<double>(((unsigned long long)(unsigned int)hi << 32) | (unsigned int)lo);
}

/* Keeps the compiler from fusing the value into a multiply-add (the _rn
 * intrinsics promise never to be contracted, even with -ffp-contract=fast). */
#if defined(__x86_64__) || defined(__i386__)
#define QL_OPAQUE(v) __asm__("" : "+x"(v))
#elif defined(__aarch64__)
#define QL_OPAQUE(v) __asm__("" : "+w"(v))
#else
#define QL_OPAQUE(v) __asm__("" : "+m"(v))
#endif

/* --------------------------------------------------------------- min/max */
#define QL_MINMAX(R, A, B)                                                  \
    QL_FN R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }             \
    QL_FN R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
QL_MINMAX(int, int, int)
QL_MINMAX(unsigned int, unsigned int, unsigned int)
QL_MINMAX(unsigned int, int, unsigned int)
QL_MINMAX(unsigned int, unsigned int, int)
QL_MINMAX(long, long, long)
QL_MINMAX(unsigned long, unsigned long, unsigned long)
QL_MINMAX(unsigned long, long, unsigned long)
QL_MINMAX(unsigned long, unsigned long, long)
QL_MINMAX(long long, long long, long long)
QL_MINMAX(unsigned long long, unsigned long long, unsigned long long)
QL_MINMAX(unsigned long long, long long, unsigned long long)
QL_MINMAX(unsigned long long, unsigned long long, long long)
#undef QL_MINMAX

/* CUDA's named variants; umin/umax take unsigned, llmin/llmax long long. */
QL_FN unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
QL_FN unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
QL_FN long long llmin(long long a, long long b) { return a < b ? a : b; }
QL_FN long long llmax(long long a, long long b) { return a > b ? a : b; }
QL_FN unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
QL_FN unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

/* fmin/fmax with C's NaN rule (a NaN argument yields the other one), written
 * as compare-and-select so loops using them still vectorise. The compares are
 * the quiet ones (isless: false for a NaN, as < is, but raising no invalid
 * flag), which the compiler may evaluate unconditionally under the default
 * -ftrapping-math: with < it keeps a branch, and a loop with one stays
 * scalar. */
#define QL_FMINMAX(T, MINF, MAXF)                                                   \
    QL_FN T MINF(T a, T b) { return (__builtin_isless(a, b) || b != b) ? a : b; }    \
    QL_FN T MAXF(T a, T b) { return (__builtin_isgreater(a, b) || b != b) ? a : b; }
QL_FMINMAX(float, ql_fminf, ql_fmaxf)
QL_FMINMAX(double, ql_fmin, ql_fmax)
QL_FMINMAX(float, ql_fmin, ql_fmax)
QL_FMINMAX(long double, ql_fmin, ql_fmax)
#undef QL_FMINMAX
/* Mixed arithmetic arguments promote like std::fmax (int, float -> double). */
template <typename A, typename B>
QL_FN decltype(A() + B() + 0.0) ql_fmin(A a, B b) {
    typedef decltype(A() + B() + 0.0) R;
    return ql_fmin((R)a, (R)b);
}
template <typename A, typename B>
QL_FN decltype(A() + B() + 0.0) ql_fmax(A a, B b) {
    typedef decltype(A() + B() + 0.0) R;
    return ql_fmax((R)a, (R)b);
}
namespace std { using ::ql_fminf; using ::ql_fmaxf; using ::ql_fmin; using ::ql_fmax; }
#define fminf ql_fminf
#define fmaxf ql_fmaxf
#define fmin ql_fmin
#define fmax ql_fmax

QL_FN float min(float a, float b) { return ql_fminf(a, b); }
QL_FN float max(float a, float b) { return ql_fmaxf(a, b); }
QL_FN double min(double a, double b) { return ql_fmin(a, b); }
QL_FN double max(double a, double b) { return ql_fmax(a, b); }
QL_FN double min(float a, double b) { return ql_fmin((double)a, b); }
QL_FN double max(float a, double b) { return ql_fmax((double)a, b); }
QL_FN double min(double a, float b) { return ql_fmin(a, (double)b); }
QL_FN double max(double a, float b) { return ql_fmax(a, (double)b); }

/* ------------------------------------------------- CUDA-only functions */
QL_FN float ql_rsqrtf(float x) { return 1.0f / sqrtf(x); }
QL_FN double ql_rsqrt(double x) { return 1.0 / sqrt(x); }
#define rsqrtf ql_rsqrtf
#define rsqrt ql_rsqrt
QL_FN float rcbrtf(float x) { return 1.0f / cbrtf(x); }
QL_FN double rcbrt(double x) { return 1.0 / cbrt(x); }
QL_FN float fdividef(float a, float b) { return a / b; }
QL_FN float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }

/* sin(pi x), cos(pi x): reduce exactly to r in [-1, 1], then to [-1/2, 1/2]. */
QL_FN double ql_sinpi_reduced(double r) {
    if (r > 0.5) r = 1.0 - r;
    else if (r < -0.5) r = -1.0 - r;
    return sin(3.141592653589793 * r);
}
QL_FN double ql_sinpi(double x) { return ql_sinpi_reduced(x - 2.0 * rint(0.5 * x)); }
QL_FN double ql_cospi(double x) {
    double r = fabs(x - 2.0 * rint(0.5 * x));
    return ql_sinpi_reduced(0.5 - r);
}
QL_FN float ql_sinpif(float x) { return (float)ql_sinpi(x); }
QL_FN float ql_cospif(float x) { return (float)ql_cospi(x); }
#define sinpi ql_sinpi
#define cospi ql_cospi
#define sinpif ql_sinpif
#define cospif ql_cospif
QL_FN void sincospif(float x, float *s, float *c) { *s = ql_sinpif(x); *c = ql_cospif(x); }
QL_FN void sincospi(double x, double *s, double *c) { *s = ql_sinpi(x); *c = ql_cospi(x); }

/* erfinv / erfcinv by Newton's method from Winitzki's closed-form estimate
 * (w = log(1 - x*x)): on erf near the centre; in the tails on log(erfc)
 * first (erfc is exponential there, plain Newton would crawl), then on erfc
 * to polish. */
QL_FN double ql_erfinv_guess(double w, bool negative) {
    const double a = 0.147, k = 2.0 / (3.141592653589793 * a);
    double u = k + 0.5 * w;
    double t = sqrt(sqrt(u * u - w / a) - u);
    return negative ? -t : t;
}
/* t > 0 with erfc(t) = y, for 0 < y <= 1/2. */
QL_FN double ql_erfcinv_tail(double y) {
    const double c = 1.1283791670955126; /* 2 / sqrt(pi) */
    double t = ql_erfinv_guess(log(y * (2.0 - y)), false), ly = log(y);
    if (y < 1e-300) { /* erfc(t) underflows nearby: use its asymptotic log */
        for (int i = 0; i < 4; ++i) {
            double u = 0.5 / (t * t), /* log erfc = -t^2 - log(t sqrt(pi)) + ... */
                l = -t * t - log(t) - 0.5723649429247001 +
                    log1p(u * (-1.0 + u * (3.0 + u * (-15.0 + u * 105.0))));
            t += (l - ly) / (2.0 * t + 1.0 / t);
        }
        return t;
    }
    for (int i = 0; i < 3; ++i) {
        double e = erfc(t);
        t += (log(e) - ly) * e / (c * exp(-t * t));
    }
    for (int i = 0; i < 2; ++i) t += (erfc(t) - y) / (c * exp(-t * t));
    return t;
}
QL_FN double ql_erfinv(double x) {
    if (!(fabs(x) < 1.0)) return x == 1.0 ? HUGE_VAL : x == -1.0 ? -HUGE_VAL : NAN;
    if (fabs(x) > 0.5) { /* 1 - |x| is exact (Sterbenz) */
        double t = ql_erfcinv_tail(1.0 - fabs(x));
        return x < 0 ? -t : t;
    }
    double t = ql_erfinv_guess(log1p(-x * x), x < 0);
    for (int i = 0; i < 4; ++i) t -= (erf(t) - x) / (1.1283791670955126 * exp(-t * t));
    return t;
}
QL_FN double ql_erfcinv(double y) {
    if (!(y > 0.0 && y < 2.0)) return y == 0.0 ? HUGE_VAL : y == 2.0 ? -HUGE_VAL : NAN;
    if (y >= 0.5 && y <= 1.5) return ql_erfinv(1.0 - y); /* exact (Sterbenz) */
    if (y > 1.0) return -ql_erfcinv_tail(2.0 - y);      /* exact; erfc near 2 cancels */
    return ql_erfcinv_tail(y);
}
QL_FN double erfinv(double x) { return ql_erfinv(x); }
QL_FN float erfinvf(float x) { return (float)ql_erfinv(x); }
QL_FN double erfcinv(double y) { return ql_erfcinv(y); }
QL_FN float erfcinvf(float y) { return (float)ql_erfcinv(y); }
/* erfc(-x / sqrt 2) with the argument's rounding error corrected to first
 * order: in the far tail it would otherwise cost ~t^2 ulp. */
QL_FN double normcdf(double x) {
    const double c_hi = 0.7071067811865476, c_lo = -4.833646656726457e-17;
    double t = -x * c_hi, lo = fma(-x, c_hi, -t) + -x * c_lo;
    return 0.5 * (erfc(t) - 1.1283791670955126 * exp(-t * t) * lo);
}
QL_FN float normcdff(float x) { return (float)(0.5 * erfc(-(double)x * 0.7071067811865476)); }
QL_FN double normcdfinv(double p) { return -1.4142135623730951 * ql_erfcinv(2.0 * p); }
QL_FN float normcdfinvf(float p) { return (float)(-1.4142135623730951 * ql_erfcinv(2.0 * p)); }

/* Norms without undue overflow or underflow: float ones summed in double,
 * double ones scaled by the largest magnitude (inf wins over NaN). */
QL_FN double ql_norm(int n, const double *v) {
    double m = 0.0, s = 0.0;
    for (int i = 0; i < n; ++i) m = ql_fmax(m, fabs(v[i]));
    if (m == 0.0 || m == HUGE_VAL) return m;
    for (int i = 0; i < n; ++i) s += (v[i] / m) * (v[i] / m);
    return m * sqrt(s);
}
QL_FN float ql_normf(int n, const float *v) {
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += (double)v[i] * v[i];
    for (int i = 0; i < n; ++i) if (isinf(v[i])) return HUGE_VALF;
    return (float)sqrt(s);
}
QL_FN double norm(int dim, const double *p) { return ql_norm(dim, p); }
QL_FN float normf(int dim, const float *p) { return ql_normf(dim, p); }
QL_FN double rnorm(int dim, const double *p) { return 1.0 / ql_norm(dim, p); }
QL_FN float rnormf(int dim, const float *p) { return (float)(1.0 / (double)ql_normf(dim, p)); }
QL_FN double norm3d(double a, double b, double c) { double v[3] = {a, b, c}; return ql_norm(3, v); }
QL_FN double norm4d(double a, double b, double c, double d) { double v[4] = {a, b, c, d}; return ql_norm(4, v); }
QL_FN float norm3df(float a, float b, float c) { float v[3] = {a, b, c}; return ql_normf(3, v); }
QL_FN float norm4df(float a, float b, float c, float d) { float v[4] = {a, b, c, d}; return ql_normf(4, v); }
QL_FN double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
QL_FN double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
QL_FN float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
QL_FN float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
QL_FN double rhypot(double a, double b) { return 1.0 / hypot(a, b); }
QL_FN float rhypotf(float a, float b) { return (float)(1.0 / hypot((double)a, (double)b)); }

/* ------------------------------------------------------------------ expf */
/* The shim's own expf (ql_exp.h): inline and vectorisable, unlike libm's. */
#include "ql_exp.h"
namespace std { using ::ql_expf; }
#define expf ql_expf

/* ------------------------------------------- fast-math intrinsics (__expf) */
/* CUDA's versions trade accuracy for speed; the libm ones are more accurate,
 * which CUDA's error bounds allow. */
QL_FN float ql___expf(float x) { return ql_expf(x); }
QL_FN float ql___exp10f(float x) { return exp10f(x); }
QL_FN float ql___logf(float x) { return logf(x); }
QL_FN float ql___log2f(float x) { return log2f(x); }
QL_FN float ql___log10f(float x) { return log10f(x); }
QL_FN float ql___sinf(float x) { return sinf(x); }
QL_FN float ql___cosf(float x) { return cosf(x); }
QL_FN float ql___tanf(float x) { return tanf(x); }
QL_FN void ql___sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
QL_FN float ql___powf(float x, float y) { return powf(x, y); }
#define __expf ql___expf
#define __exp10f ql___exp10f
#define __logf ql___logf
#define __log2f ql___log2f
#define __log10f ql___log10f
#define __sinf ql___sinf
#define __cosf ql___cosf
#define __tanf ql___tanf
#define __sincosf ql___sincosf
#define __powf ql___powf
QL_FN float __fdividef(float a, float b) { return a / b; }

/* IEEE round-to-nearest arithmetic that is never contracted into an FMA. */
#define QL_RN_OP(name, T, op)                                                \
    QL_FN T name(T a, T b) {                                                 \
        QL_OPAQUE(a);                                                        \
        QL_OPAQUE(b);                                                        \
        T r = a op b;                                                        \
        QL_OPAQUE(r);                                                        \
        return r;                                                            \
    }
QL_RN_OP(__fadd_rn, float, +)
QL_RN_OP(__fsub_rn, float, -)
QL_RN_OP(__fmul_rn, float, *)
QL_RN_OP(__fdiv_rn, float, /)
QL_RN_OP(__dadd_rn, double, +)
QL_RN_OP(__dsub_rn, double, -)
QL_RN_OP(__dmul_rn, double, *)
QL_RN_OP(__ddiv_rn, double, /)
#undef QL_RN_OP
QL_FN float __frcp_rn(float x) { return 1.0f / x; }
QL_FN double __drcp_rn(double x) { return 1.0 / x; }
QL_FN float __fsqrt_rn(float x) { return sqrtf(x); }
QL_FN double __dsqrt_rn(double x) { return sqrt(x); }
QL_FN float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
QL_FN float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
QL_FN double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

/* ------------------------------------------------------------ conversions */
/* Float to integer: round as the suffix says, saturate to the destination
 * range, NaN -> 0 (CUDA's cvt semantics; a C cast would be undefined). */
#define QL_F2I(name, F, I, lo, hi, round)                                   \
    QL_FN I name(F x) {                                                      \
        F r = round(x);                                                      \
        if (r != r) return 0;                                                \
        if (r <= (F)(lo)) return (lo);                                       \
        if (r >= (F)(hi)) return (hi);                                       \
        return (I)r;                                                         \
    }
#define QL_F2I_ALL(prefix, F, I, lo, hi, RN, RZ, RU, RD)                    \
    QL_F2I(prefix##_rn, F, I, lo, hi, RN)                                    \
    QL_F2I(prefix##_rz, F, I, lo, hi, RZ)                                    \
    QL_F2I(prefix##_ru, F, I, lo, hi, RU)                                    \
    QL_F2I(prefix##_rd, F, I, lo, hi, RD)
#define QL_F2I_FLOAT(prefix, I, lo, hi)                                     \
    QL_F2I_ALL(prefix, float, I, lo, hi, rintf, truncf, ceilf, floorf)
#define QL_F2I_DOUBLE(prefix, I, lo, hi)                                    \
    QL_F2I_ALL(prefix, double, I, lo, hi, rint, trunc, ceil, floor)
QL_F2I_FLOAT(__float2int, int, INT_MIN, INT_MAX)
QL_F2I_FLOAT(__float2uint, unsigned int, 0u, UINT_MAX)
QL_F2I_FLOAT(__float2ll, long long, LLONG_MIN, LLONG_MAX)
QL_F2I_FLOAT(__float2ull, unsigned long long, 0ull, ULLONG_MAX)
QL_F2I_DOUBLE(__double2int, int, INT_MIN, INT_MAX)
QL_F2I_DOUBLE(__double2uint, unsigned int, 0u, UINT_MAX)
QL_F2I_DOUBLE(__double2ll, long long, LLONG_MIN, LLONG_MAX)
QL_F2I_DOUBLE(__double2ull, unsigned long long, 0ull, ULLONG_MAX)
#undef QL_F2I_DOUBLE
#undef QL_F2I_FLOAT
#undef QL_F2I_ALL
#undef QL_F2I

/* Integer to floating point, round to nearest (the C conversion). */
QL_FN float __int2float_rn(int x) { return (float)x; }
QL_FN float __uint2float_rn(unsigned int x) { return (float)x; }
QL_FN float __ll2float_rn(long long x) { return (float)x; }
QL_FN float __ull2float_rn(unsigned long long x) { return (float)x; }
QL_FN double __int2double_rn(int x) { return (double)x; }
QL_FN double __uint2double_rn(unsigned int x) { return (double)x; }
QL_FN double __ll2double_rn(long long x) { return (double)x; }
QL_FN double __ull2double_rn(unsigned long long x) { return (double)x; }
QL_FN float __double2float_rn(double x) { return (float)x; }

/* ---------------------------------------------------- integer intrinsics */
QL_FN int __popc(unsigned int x) { return __builtin_popcount(x); }
QL_FN int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
QL_FN int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
QL_FN int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
QL_FN int __ffs(int x) { return __builtin_ffs(x); }
QL_FN int __ffsll(long long x) { return __builtin_ffsll(x); }
QL_FN unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
QL_FN unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
/* Byte n of the result is byte (s >> 4n) & 7 of the 8-byte value y:x. */
QL_FN unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i)
        r |= (unsigned int)((v >> (((s >> (4 * i)) & 7u) * 8)) & 0xffu) << (8 * i);
    return r;
}
QL_FN unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (shift & 31u)) >> 32);
}
QL_FN unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((v << (shift < 32u ? shift : 32u)) >> 32);
}
QL_FN unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (shift & 31u));
}
QL_FN unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int shift) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(v >> (shift < 32u ? shift : 32u));
}
/* 24-bit multiplies use the low 24 bits of each operand (signed for mul24). */
QL_FN int __mul24(int x, int y) {
    long long a = (int)((unsigned int)x << 8) >> 8, b = (int)((unsigned int)y << 8) >> 8;
    return (int)(unsigned int)(unsigned long long)(a * b);
}
QL_FN unsigned int __umul24(unsigned int x, unsigned int y) {
    return (unsigned int)((unsigned long long)(x & 0xffffffu) * (y & 0xffffffu));
}
QL_FN int __mulhi(int x, int y) { return (int)(((long long)x * y) >> 32); }
QL_FN unsigned int __umulhi(unsigned int x, unsigned int y) {
    return (unsigned int)(((unsigned long long)x * y) >> 32);
}
__extension__ typedef __int128 ql_int128;
__extension__ typedef unsigned __int128 ql_uint128;
QL_FN long long __mul64hi(long long x, long long y) {
    return (long long)(((ql_int128)x * y) >> 64);
}
QL_FN unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
    return (unsigned long long)(((ql_uint128)x * y) >> 64);
}
QL_FN unsigned int __sad(int x, int y, unsigned int z) {
    return (x > y ? (unsigned int)x - (unsigned int)y : (unsigned int)y - (unsigned int)x) + z;
}
QL_FN unsigned int __usad(unsigned int x, unsigned int y, unsigned int z) {
    return (x > y ? x - y : y - x) + z;
}
/* Halving adds without intermediate overflow. */
QL_FN int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
QL_FN int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
QL_FN unsigned int __uhadd(unsigned int x, unsigned int y) {
    return (unsigned int)(((unsigned long long)x + y) >> 1);
}
QL_FN unsigned int __urhadd(unsigned int x, unsigned int y) {
    return (unsigned int)(((unsigned long long)x + y + 1) >> 1);
}
/* Dot product of the four bytes of a and b (signed or unsigned), plus c. */
QL_FN int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 32; i += 8) c += (int)(signed char)(a >> i) * (int)(signed char)(b >> i);
    return c;
}
QL_FN unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    for (int i = 0; i < 32; i += 8) c += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);
    return c;
}

/* ----------------------------------------------------- loads and timers */
/* Cache-hinted loads and stores are plain accesses on the CPU. */
template <typename T> QL_FN T __ldg(const T *p) { return *p; }
template <typename T> QL_FN T __ldcg(const T *p) { return *p; }
template <typename T> QL_FN T __ldca(const T *p) { return *p; }
template <typename T> QL_FN T __ldcs(const T *p) { return *p; }
template <typename T> QL_FN T __ldlu(const T *p) { return *p; }
template <typename T> QL_FN T __ldcv(const T *p) { return *p; }
template <typename T> QL_FN void __stwb(T *p, T v) { *p = v; }
template <typename T> QL_FN void __stcg(T *p, T v) { *p = v; }
template <typename T> QL_FN void __stcs(T *p, T v) { *p = v; }
template <typename T> QL_FN void __stwt(T *p, T v) { *p = v; }

/* clock64(): a monotonic counter (TSC cycles on x86, else nanoseconds).
 * clock() is mapped by a macro because <time.h> declares a host clock(). */
QL_FN long long clock64(void) {
#if defined(__x86_64__) || defined(__i386__)
    return (long long)__builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
#endif
}
QL_FN clock_t ql_clock(void) { return (clock_t)clock64(); }
#define clock ql_clock
#ifndef QL_TIER2 /* with fibers, __nanosleep lets the block's other threads run */
QL_FN void __nanosleep(unsigned int ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, 0);
}
#endif

#endif /* QL_MATH_H */

/* cuComplex.h for quicklaunch's CPU device and hiprtc (the same file in
 * backends/cpu/include and backends/hip/include; NVRTC finds CUDA's own).
 *
 * CUDA's single- and double-precision complex numbers as its vector types
 * (cuFloatComplex = float2, cuDoubleComplex = double2: re in .x, im in .y)
 * and all of cuComplex.h's functions, computed as CUDA computes them:
 * cuCdiv scales both operands by 1 / (|re(y)| + |im(y)|) before the
 * textbook formula, so huge and tiny magnitudes neither overflow nor
 * underflow; cuCabs is max * sqrt(1 + (min/max)^2), and max + min where
 * that is undefined (0, infinities). The CPU's and HIP's prelude come
 * first in every unit, so this header includes nothing. */
#ifndef QL_CUCOMPLEX_H
#define QL_CUCOMPLEX_H

typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;

/* ------------------------------------------------------------- float */
__host__ __device__ static inline float cuCrealf(cuFloatComplex z) { return z.x; }
__host__ __device__ static inline float cuCimagf(cuFloatComplex z) { return z.y; }
__host__ __device__ static inline cuFloatComplex make_cuFloatComplex(float re, float im) {
    cuFloatComplex z;
    z.x = re;
    z.y = im;
    return z;
}
__host__ __device__ static inline cuFloatComplex cuConjf(cuFloatComplex z) {
    return make_cuFloatComplex(z.x, -z.y);
}
__host__ __device__ static inline cuFloatComplex cuCaddf(cuFloatComplex a, cuFloatComplex b) {
    return make_cuFloatComplex(a.x + b.x, a.y + b.y);
}
__host__ __device__ static inline cuFloatComplex cuCsubf(cuFloatComplex a, cuFloatComplex b) {
    return make_cuFloatComplex(a.x - b.x, a.y - b.y);
}
__host__ __device__ static inline cuFloatComplex cuCmulf(cuFloatComplex a, cuFloatComplex b) {
    return make_cuFloatComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__host__ __device__ static inline cuFloatComplex cuCdivf(cuFloatComplex a, cuFloatComplex b) {
    const float scale = 1.0f / (fabsf(b.x) + fabsf(b.y));
    const float ar = a.x * scale, ai = a.y * scale, br = b.x * scale, bi = b.y * scale;
    const float inv = 1.0f / (br * br + bi * bi);
    return make_cuFloatComplex((ar * br + ai * bi) * inv, (ai * br - ar * bi) * inv);
}
__host__ __device__ static inline float cuCabsf(cuFloatComplex z) {
    const float a = fabsf(z.x), b = fabsf(z.y);
    const float hi = fmaxf(a, b), lo = fminf(a, b);
    const float q = lo / hi;
    float r = hi * sqrtf(1.0f + q * q);
    if (hi == 0.0f || hi > 3.402823466e38f || lo > 3.402823466e38f) r = hi + lo;
    return r;
}
/* a * b + c */
__host__ __device__ static inline cuFloatComplex cuCfmaf(cuFloatComplex a, cuFloatComplex b,
                                                         cuFloatComplex c) {
    float re = a.x * b.x + c.x;
    float im = a.x * b.y + c.y;
    re = -(a.y * b.y) + re;
    im = a.y * b.x + im;
    return make_cuFloatComplex(re, im);
}

/* ------------------------------------------------------------ double */
__host__ __device__ static inline double cuCreal(cuDoubleComplex z) { return z.x; }
__host__ __device__ static inline double cuCimag(cuDoubleComplex z) { return z.y; }
__host__ __device__ static inline cuDoubleComplex make_cuDoubleComplex(double re, double im) {
    cuDoubleComplex z;
    z.x = re;
    z.y = im;
    return z;
}
__host__ __device__ static inline cuDoubleComplex cuConj(cuDoubleComplex z) {
    return make_cuDoubleComplex(z.x, -z.y);
}
__host__ __device__ static inline cuDoubleComplex cuCadd(cuDoubleComplex a, cuDoubleComplex b) {
    return make_cuDoubleComplex(a.x + b.x, a.y + b.y);
}
__host__ __device__ static inline cuDoubleComplex cuCsub(cuDoubleComplex a, cuDoubleComplex b) {
    return make_cuDoubleComplex(a.x - b.x, a.y - b.y);
}
__host__ __device__ static inline cuDoubleComplex cuCmul(cuDoubleComplex a, cuDoubleComplex b) {
    return make_cuDoubleComplex(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__host__ __device__ static inline cuDoubleComplex cuCdiv(cuDoubleComplex a, cuDoubleComplex b) {
    const double scale = 1.0 / (fabs(b.x) + fabs(b.y));
    const double ar = a.x * scale, ai = a.y * scale, br = b.x * scale, bi = b.y * scale;
    const double inv = 1.0 / (br * br + bi * bi);
    return make_cuDoubleComplex((ar * br + ai * bi) * inv, (ai * br - ar * bi) * inv);
}
__host__ __device__ static inline double cuCabs(cuDoubleComplex z) {
    const double a = fabs(z.x), b = fabs(z.y);
    const double hi = fmax(a, b), lo = fmin(a, b);
    const double q = lo / hi;
    double r = hi * sqrt(1.0 + q * q);
    if (hi == 0.0 || hi > 1.79769313486231570e+308 || lo > 1.79769313486231570e+308)
        r = hi + lo;
    return r;
}
__host__ __device__ static inline cuDoubleComplex cuCfma(cuDoubleComplex a, cuDoubleComplex b,
                                                         cuDoubleComplex c) {
    double re = a.x * b.x + c.x;
    double im = a.x * b.y + c.y;
    re = -(a.y * b.y) + re;
    im = a.y * b.x + im;
    return make_cuDoubleComplex(re, im);
}

/* ------------------------------------------------- cuComplex, converting */
__host__ __device__ static inline cuComplex make_cuComplex(float re, float im) {
    return make_cuFloatComplex(re, im);
}
__host__ __device__ static inline cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex z) {
    return make_cuDoubleComplex((double)z.x, (double)z.y);
}
__host__ __device__ static inline cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex z) {
    return make_cuFloatComplex((float)z.x, (float)z.y);
}

#endif /* QL_CUCOMPLEX_H */

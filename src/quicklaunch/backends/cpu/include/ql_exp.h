/* expf for the quicklaunch CPU device: inline, branch-free, vectorisable.
 * Part of cuda_shim.h (through ql_math.h); include that instead.
 *
 * glibc's expf is a call: a thread loop that calls it cannot be vectorised,
 * and every call clobbers the vector registers (an online softmax spent most
 * of its time there). This one is a few double operations the compiler
 * inlines and, in a thread loop, vectorises (the table read becomes a
 * gather).
 *
 * exp(x) = 2^(k/32) * exp(u), k = round(x * 32 / ln 2), u = x - k ln 2 / 32,
 * |u| <= ln 2 / 64. 2^(k/32) is the table entry for k mod 32 with k div 32
 * added to its exponent; exp(u) is its Taylor polynomial to u^4 (truncation
 * error below 2^-39 relative). All in double, rounded to float once at the
 * end: the result is within 1 ulp of the correctly rounded value for every
 * float (checked exhaustively), well inside CUDA's 2 ulp for expf, and
 * agrees with glibc's expf on all but 1 in 25,000 inputs (by 1 ulp there).
 * Overflow gives +inf, underflow 0 or a subnormal, NaN stays NaN. Both CPU
 * tiers use it, so fission and fibers give the same bits. */
#ifndef QL_EXP_H
#define QL_EXP_H

/* 2^(i/32), i = 0..31, as doubles */
static const double ql_exp2_32[32] __attribute__((unused)) = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};

QL_FN float ql_expf(float xf) {
    /* Straight-line code, no branch and no floating-point select: under the
     * default -ftrapping-math the compiler keeps any such branch (and moves
     * the double arithmetic after it into both arms), and a loop with a
     * branch stays scalar. Out-of-range arguments run through the same
     * arithmetic on garbage (the table index is masked, the shifts are
     * unsigned) and have their results replaced by integer masks at the end:
     * below -150 the result rounds to 0, above 89 to +inf. */
    const double x = (double)xf;
    const double shift = 0x1.8p52;   /* adding it rounds to an integer in the low bits */
    double kd = x * 0x1.71547652b82fep+5 + shift; /* 32 / ln 2 */
    const unsigned long long kb = ql_bit_cast<unsigned long long>(kd);
    kd -= shift;
    const double u = x - kd * 0x1.62e42fefa39efp-6; /* ln 2 / 32 */
    /* (kb >> 5) << 52 is (k div 32) << 52: the shift constant's own bits
     * leave through the top */
    const double s = ql_bit_cast<double>(ql_bit_cast<unsigned long long>(ql_exp2_32[kb & 31]) +
                                         ((kb >> 5) << 52));
    const double p = 1.0 + u * (1.0 + u * (0.5 + u * (1.0 / 6.0 + u * (1.0 / 24.0))));
    const unsigned r = ql_bit_cast<unsigned>((float)(s * p));
    /* quiet compares (false for a NaN, raising nothing) */
    const unsigned big = 0u - (unsigned)__builtin_isgreater(xf, 89.0f);
    const unsigned small = 0u - (unsigned)__builtin_isless(xf, -150.0f);
    const unsigned nan = 0u - (unsigned)(xf != xf);   /* comes back quiet, as xf + xf */
    const unsigned in_range = ~(big | small | nan);
    return ql_bit_cast<float>((r & in_range) | (0x7f800000u & big) |
                              ((ql_bit_cast<unsigned>(xf) | 0x00400000u) & nan));
}

#endif

/* Scalar conversions for the launcher: Python numbers to the C types of
 * kernel parameters, with range checks. Static inline, hot path only.
 * Every function returns 0 on success, -1 with a Python exception set. */
#ifndef QL_CONVERT_H
#define QL_CONVERT_H

#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Rounds a finite or special double to a narrow IEEE-style binary format
 * (half: 5/10 bits, bfloat16: 8/7 bits) with round-to-nearest-even,
 * correctly for subnormals, without double rounding through float. */
static inline uint16_t ql_double_to_narrow(double d, int exp_bits, int mant_bits) {
    uint64_t b;
    memcpy(&b, &d, 8);
    const uint16_t sign = (uint16_t)((b >> 63) << (exp_bits + mant_bits));
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int exp = (int)((b >> 52) & 0x7ff);
    const uint64_t mant = b & ((1ull << 52) - 1);
    const uint16_t inf = (uint16_t)(((1u << exp_bits) - 1) << mant_bits);
    if (exp == 0x7ff) /* inf or nan (quiet nan keeps the top mantissa bit) */
        return (uint16_t)(sign | inf | (mant ? (1u << (mant_bits - 1)) : 0));
    if (exp == 0 && mant == 0) return sign;
    int e = exp - 1023;
    uint64_t m = mant | (1ull << 52);  /* doubles' subnormals are far below ours */
    int shift = 52 - mant_bits;
    uint64_t biased;
    if (e >= 1 - bias) {
        biased = (uint64_t)(e + bias);
    } else { /* our subnormal: shift further */
        shift += (1 - bias) - e;
        biased = 0;
        if (shift > 63) return sign;
    }
    uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (biased) q &= (1ull << mant_bits) - 1;
    if (rem > half || (rem == half && (q & 1))) ++q;  /* may carry into the exponent */
    uint64_t r = (biased << mant_bits) + q;
    if (r >= inf) return (uint16_t)(sign | inf);
    return (uint16_t)(sign | r);
}

/* Fast path for the common case: an exact int that fits in one digit.
 * Returns 1 with *out set, or 0 when the general path must decide. */
static inline int ql_small_int(PyObject *o, long *out) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o)) {
        *out = (long)PyUnstable_Long_CompactValue((PyLongObject *)o);
        return 1;
    }
#else
    if (PyLong_CheckExact(o)) {
        Py_ssize_t size = Py_SIZE(o);
        if (size == 1 || size == -1) {
            long d = (long)((PyLongObject *)o)->ob_digit[0];
            *out = size < 0 ? -d : d;
            return 1;
        }
        if (size == 0) { /* zero may have no digit allocated */
            *out = 0;
            return 1;
        }
    }
#endif
    return 0;
}

/* Integer in [lo, hi] from a Python int (or an object with __index__). */
static inline int ql_as_int64(PyObject *o, int64_t lo, int64_t hi, int64_t *out,
                              int *overflow) {
    long long v;
    *overflow = 0;
    if (PyLong_CheckExact(o)) {
        v = PyLong_AsLongLongAndOverflow(o, overflow);
    } else {
        PyObject *idx = PyNumber_Index(o);
        if (!idx) return -1;
        v = PyLong_AsLongLongAndOverflow(idx, overflow);
        Py_DECREF(idx);
    }
    if (v == -1 && PyErr_Occurred()) return -1;
    if (*overflow || v < lo || v > hi) { *overflow = 1; return 0; }
    *out = v;
    return 0;
}

static inline int ql_as_uint64(PyObject *o, uint64_t hi, uint64_t *out, int *overflow) {
    PyObject *idx = PyLong_CheckExact(o) ? (Py_INCREF(o), o) : PyNumber_Index(o);
    if (!idx) return -1;
    int sign_overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(idx, &sign_overflow);
    unsigned long long v = 0;
    *overflow = 0;
    if (s == -1 && !sign_overflow && PyErr_Occurred()) { Py_DECREF(idx); return -1; }
    if (sign_overflow < 0 || (!sign_overflow && s < 0)) {
        *overflow = 1;                       /* negative */
    } else if (!sign_overflow) {
        v = (unsigned long long)s;
    } else {
        v = PyLong_AsUnsignedLongLong(idx);  /* above 2**63 - 1 */
        if (v == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); *overflow = 1; }
    }
    Py_DECREF(idx);
    if (*overflow) return 0;
    if (v > hi) { *overflow = 1; return 0; }
    *out = v;
    return 0;
}

/* A complex number (Python's, or anything with __complex__: NumPy's complex
 * scalars) as the two lanes of a float2 / double2: re, then im, as floats
 * (size 4) or doubles (size 8). 0 on success, -1 with an exception set, 1
 * when a finite part is out of float's range (nothing written). Not on the
 * fast path: struct parameters only. */
static inline int ql_complex_pair(PyObject *o, int size, char *slot) {
    Py_complex c = PyComplex_AsCComplex(o);
    if (c.real == -1.0 && PyErr_Occurred()) return -1;
    if (size == 8) {
        memcpy(slot, &c.real, 8);
        memcpy(slot + 8, &c.imag, 8);
        return 0;
    }
    const float re = (float)c.real, im = (float)c.imag;
    if ((isinf(re) && isfinite(c.real)) || (isinf(im) && isfinite(c.imag))) return 1;
    memcpy(slot, &re, 4);
    memcpy(slot + 4, &im, 4);
    return 0;
}

#endif

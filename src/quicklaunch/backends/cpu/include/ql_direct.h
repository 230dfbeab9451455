// A kernel module's readers of Python argument objects, for its direct entry
// (ql_cpu_abi.h's ql_cpu_direct_fn; the layout is ql_pyargs.h's).
//
// Each reader accepts exactly what the launcher's fast pass accepts for its
// parameter's kind and reads the value the fast pass would write; anything
// else is a refusal, and the launcher's own passes then pack the argument
// or raise the error that names it. The checks are integer compares only:
// a module built with -ffast-math would drop NaN tests on floats.
#ifndef QL_DIRECT_H
#define QL_DIRECT_H

#include <string.h>

#include "ql_cpu_abi.h"

namespace ql_export {

// A field of a Python object, `at` bytes from its address.
template <class T> static inline T py_field(const void *o, unsigned at) {
    T v;
    memcpy(&v, static_cast<const char *>(o) + at, sizeof v);
    return v;
}

static inline const void *py_type(const void *o) {
    return py_field<const void *>(o, QL_PY_TYPE_AT);
}

// A one-digit Python int (|v| < 2**30), as the fast pass reads it.
static inline bool py_small_int(const void *o, const ql_pyargs *py, long &out) {
    if (py_type(o) != py->long_type) return false;
    const intptr_t size = py_field<intptr_t>(o, QL_PY_LONG_SIZE_AT);
    if (py->long_layout == QL_PY_LONG_OB_SIZE) {
        if (size == 0) {  // zero may have no digit allocated
            out = 0;
            return true;
        }
        if (size != 1 && size != -1) return false;
        const long d = (long)py_field<uint32_t>(o, QL_PY_LONG_DIGIT_AT);
        out = size < 0 ? -d : d;
        return true;
    }
    const uintptr_t tag = (uintptr_t)size;
    if (tag >= (2u << 3)) return false;  // more than one digit
    // sign bits 0: positive, 1: zero (its digit is 0), 2: negative
    out = (1 - (long)(tag & 3)) * (long)py_field<uint32_t>(o, QL_PY_LONG_DIGIT_AT);
    return true;
}

// How a parameter of kind K and type T reads its argument; `ok` is false
// for kinds the direct entry does not read (the kernel then has none).
template <int K, class T> struct py_read {
    enum { ok = 0 };
    static bool read(const void *, const ql_pyargs *, unsigned, T &) { return false; }
};

// A pointer: a NumPy array of the exact type, C-contiguous (and writeable
// for a non-const pointee), of the dtype this parameter accepted last.
template <class T, int Need> struct py_array {
    enum { ok = 1 };
    static inline bool read(const void *o, const ql_pyargs *py, unsigned i, T &out) {
        if (py_type(o) != py->array_type ||
            (py_field<int>(o, QL_NP_FLAGS_AT) & Need) != Need ||
            py_field<const void *>(o, QL_NP_DESCR_AT) != py->dtype_ok[i])
            return false;
        out = reinterpret_cast<T>(py_field<void *>(o, QL_NP_DATA_AT));
        return true;
    }
};
template <class T> struct py_read<QL_KIND_PTR, T>
    : py_array<T, QL_NP_C_CONTIGUOUS | QL_NP_WRITEABLE> {};
template <class T> struct py_read<QL_KIND_PTR_CONST, T> : py_array<T, QL_NP_C_CONTIGUOUS> {};

// float: a Python float, rounded; one that overflows to infinity is refused
// (the launcher raises), infinities and NaNs given as such are not.
template <class T> struct py_read<QL_KIND_F32, T> {
    enum { ok = 1 };
    static inline bool read(const void *o, const ql_pyargs *py, unsigned, T &out) {
        if (py_type(o) != py->float_type) return false;
        const double d = py_field<double>(o, QL_PY_FLOAT_AT);
        const float f = (float)d;
        uint32_t fb;
        uint64_t db;
        memcpy(&fb, &f, 4);
        memcpy(&db, &d, 8);
        if ((fb & 0x7f800000u) == 0x7f800000u &&
            (db & 0x7ff0000000000000ull) != 0x7ff0000000000000ull)
            return false;  // finite, but past FLT_MAX
        out = (T)f;
        return true;
    }
};
template <class T> struct py_read<QL_KIND_F64, T> {
    enum { ok = 1 };
    static inline bool read(const void *o, const ql_pyargs *py, unsigned, T &out) {
        if (py_type(o) != py->float_type) return false;
        out = (T)py_field<double>(o, QL_PY_FLOAT_AT);
        return true;
    }
};

// Integers: a one-digit Python int, non-negative for an unsigned type
// (every such value fits each of them). Enums take their value so.
template <class T, bool Unsigned> struct py_int {
    enum { ok = 1 };
    static inline bool read(const void *o, const ql_pyargs *py, unsigned, T &out) {
        long v;
        if (!py_small_int(o, py, v) || (Unsigned && v < 0)) return false;
        out = (T)v;
        return true;
    }
};
template <class T> struct py_read<QL_KIND_I32, T> : py_int<T, false> {};
template <class T> struct py_read<QL_KIND_I64, T> : py_int<T, false> {};
template <class T> struct py_read<QL_KIND_U32, T> : py_int<T, true> {};
template <class T> struct py_read<QL_KIND_U64, T> : py_int<T, true> {};

// One parameter's value, held by index so that a pack of them can be read
// one by one and then passed on.
template <unsigned I, class T> struct py_slot { T v; };

}  // namespace ql_export

#endif

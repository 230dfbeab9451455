/* quicklaunch._launch: the general pass over one argument (pack_one),
 * every kind and every input the fast pass in _launch.c leaves: pointers
 * from arrays, ql buffers, textures and the slow readers; integers, floats,
 * bools and structs by value; and every error, each naming the kernel, the
 * parameter and the fix. Included once, by _launch.c, before its fast pass.
 * Nothing here runs for a launch whose arguments the fast pass takes. */
#ifndef QL_LAUNCH_GENERAL_H
#define QL_LAUNCH_GENERAL_H

#include "_launch_core.h"
#include "_launch_pointers.h"
#include "_launch_texture.h"

/* -------------------------------------------------------------- pointers */

static inline int pack_pointer(KernelCore *k, uint32_t i, PyObject *o, void **out,
                               pack_ctx *c) {
    if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        int flags = PyArray_FLAGS(a);
        if (!k->host_memory)
            return arg_error(k, i, LaunchTypeError,
                             "a NumPy array is host memory, not memory of device %U; "
                             "copy it with ql.asarray(x, device=...)", k->device_name);
        if (!(flags & NPY_ARRAY_C_CONTIGUOUS))
            return arg_error(k, i, LaunchValueError,
                             "the array is not C-contiguous; pass np.ascontiguousarray(x)");
        if (!(flags & NPY_ARRAY_WRITEABLE) && k->codes[i] == QL_KIND_PTR)
            return arg_error(k, i, LaunchValueError,
                             "the array is read-only but the parameter is a non-const "
                             "pointer; pass a writable copy or declare the parameter const");
        if ((PyObject *)PyArray_DESCR(a) != k->elem_ok[i] && check_descr(k, i, PyArray_DESCR(a)) < 0)
            return -1;
        *out = PyArray_DATA(a);
        return 0;
    }
    if (PyObject_TypeCheck(o, &BufferBaseType)) {
        BufferBase *b = (BufferBase *)o;
        if (b->device_id != k->device_id)
            return arg_error(k, i, LaunchValueError,
                             "the buffer lives on another device than the kernel (%U); "
                             "copy it there with ql.asarray(x, device=...)", k->device_name);
        if (b->readonly && k->codes[i] == QL_KIND_PTR)
            return arg_error(k, i, LaunchValueError,
                             "the buffer is read-only but the parameter is a non-const pointer");
        if (b->dtype && b->dtype != k->elem_ok[i] &&
            check_descr(k, i, (PyArray_Descr *)b->dtype) < 0)
            return -1;
        *out = (void *)b->ptr;
        return 0;
    }
    if (is_texture(o)) return pack_texture(k, i, o, out);
    return pointer_slow(k, i, o, out, c);
}

/* --------------------------------------------------------------- scalars */

static int pack_integer(KernelCore *k, uint32_t i, PyObject *o, char *slot) {
    static const int64_t lo[] = {INT8_MIN, INT16_MIN, INT32_MIN, INT64_MIN};
    static const int64_t hi[] = {INT8_MAX, INT16_MAX, INT32_MAX, INT64_MAX};
    static const uint64_t uhi[] = {UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
    uint8_t code = k->codes[i];
    int overflow;
    if (!PyLong_CheckExact(o) && (PyFloat_Check(o) || PyArray_Check(o) ||
                                  !PyIndex_Check(o))) {
        if (is_texture(o)) return pack_texture(k, i, o, slot);
        if (PyFloat_Check(o) || PyArray_IsScalar(o, Floating))
            return arg_error(k, i, LaunchTypeError,
                             "expects an integer (C type %s), got a float; convert it "
                             "with int(x) if truncation is intended", kind_text(code));
        return wrong_kind(k, i, o, "an integer");
    }
    if (code <= QL_KIND_I64) {
        int w = code - QL_KIND_I8;
        int64_t v;
        if (ql_as_int64(o, lo[w], hi[w], &v, &overflow) < 0) return -1;
        if (overflow) goto out_of_range;
        switch (w) {
        case 0: *(int8_t *)slot = (int8_t)v; break;
        case 1: *(int16_t *)slot = (int16_t)v; break;
        case 2: *(int32_t *)slot = (int32_t)v; break;
        default: *(int64_t *)slot = v;
        }
        return 0;
    } else {
        int w = code - QL_KIND_U8;
        uint64_t v;
        if (ql_as_uint64(o, uhi[w], &v, &overflow) < 0) return -1;
        if (overflow) goto out_of_range;
        switch (w) {
        case 0: *(uint8_t *)slot = (uint8_t)v; break;
        case 1: *(uint16_t *)slot = (uint16_t)v; break;
        case 2: *(uint32_t *)slot = (uint32_t)v; break;
        default: *(uint64_t *)slot = v;
        }
        return 0;
    }
out_of_range:
    if (code <= QL_KIND_I64) {
        int w = code - QL_KIND_I8;
        return arg_error(k, i, LaunchOverflowError, "%R is out of range for %s [%lld, %lld]",
                         o, kind_text(code), (long long)lo[w], (long long)hi[w]);
    }
    return arg_error(k, i, LaunchOverflowError, "%R is out of range for %s [0, %llu]", o,
                     kind_text(code), (unsigned long long)uhi[code - QL_KIND_U8]);
}

static int pack_floating(KernelCore *k, uint32_t i, PyObject *o, char *slot) {
    double d;
    uint8_t code = k->codes[i];
    if (PyFloat_CheckExact(o)) {
        d = PyFloat_AS_DOUBLE(o);
    } else if (PyLong_CheckExact(o)) {
        d = PyLong_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return arg_error(k, i, LaunchOverflowError, "the int is too large for %s",
                             kind_text(code));
        }
    } else if (PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Integer) ||
               PyArray_IsScalar(o, Floating)) {
        d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
            PyErr_Clear();
            return arg_error(k, i, LaunchOverflowError, "%R is too large for %s", o,
                             kind_text(code));
        }
    } else {
        return wrong_kind(k, i, o, "a real number");
    }
    switch (code) {
    case QL_KIND_F64: memcpy(slot, &d, 8); return 0;
    case QL_KIND_F32: {
        float f = (float)d;
        if (isinf(f) && isfinite(d)) break;
        memcpy(slot, &f, 4);
        return 0;
    }
    default: { /* F16, BF16 */
        int half = code == QL_KIND_F16;
        uint16_t h = ql_double_to_narrow(d, half ? 5 : 8, half ? 10 : 7);
        if ((h & 0x7fff) == (half ? 0x7c00 : 0x7f80) && isfinite(d)) break;
        memcpy(slot, &h, 2);
        return 0;
    }
    }
    return arg_error(k, i, LaunchOverflowError, "%R is out of range for %s (it would become "
                     "infinity); pass float('inf') if that is intended", o, kind_text(code));
}

static int pack_bool(KernelCore *k, uint32_t i, PyObject *o, char *slot) {
    if (o == Py_True || o == Py_False) { *slot = o == Py_True; return 0; }
    if (PyArray_IsScalar(o, Bool)) { *slot = PyObject_IsTrue(o) == 1; return 0; }
    if (PyLong_CheckExact(o)) {
        int overflow;
        long v = PyLong_AsLongAndOverflow(o, &overflow);
        if (!overflow && (v == 0 || v == 1)) { *slot = (char)v; return 0; }
        return arg_error(k, i, LaunchValueError, "expects a bool, got the int %R", o);
    }
    return wrong_kind(k, i, o, "a bool");
}

static int pack_struct(KernelCore *k, uint32_t i, PyObject *o, char *slot) {
    Py_buffer view;
    /* float2 / double2 / cuComplex / cuDoubleComplex: a Python (or NumPy) complex */
    if (k->elems && k->elems[i].kind == 'f' && k->elems[i].lanes == 2 &&
        (PyComplex_Check(o) || PyArray_IsScalar(o, ComplexFloating))) {
        const int rc = ql_complex_pair(o, k->elems[i].size, slot);
        if (rc <= 0) return rc;
        return arg_error(k, i, LaunchOverflowError, "%R is out of range for a pair of floats "
                         "(a part would become infinity); pass a double2 / cuDoubleComplex "
                         "parameter, or complex('inf') if that is intended", o);
    }
    if (!PyObject_CheckBuffer(o) || PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return wrong_kind(k, i, o, "a struct: bytes, a NumPy structured scalar or a "
                                   "ctypes structure");
    }
    Py_ssize_t len = view.len;
    if (len == k->sizes[i]) memcpy(slot, view.buf, (size_t)len);
    PyBuffer_Release(&view);
    if (len != k->sizes[i])
        return arg_error(k, i, LaunchValueError,
                         "the struct is %zd bytes but the parameter's type is %u bytes; "
                         "match the C layout (mind padding and alignment)",
                         len, (unsigned)k->sizes[i]);
    return 0;
}

/* Every kind, every input: the general path, out of line so the fast pass
 * keeps its values in registers. */
static __attribute__((noinline)) int pack_one(KernelCore *k, uint32_t i, PyObject *o,
                                              char *slot, pack_ctx *c) {
    switch (k->codes[i]) {
    case QL_KIND_PTR:
    case QL_KIND_PTR_CONST:
        return pack_pointer(k, i, o, (void **)slot, c);
    case QL_KIND_I8: case QL_KIND_I16: case QL_KIND_I32: case QL_KIND_I64:
    case QL_KIND_U8: case QL_KIND_U16: case QL_KIND_U32: case QL_KIND_U64:
        return pack_integer(k, i, o, slot);
    case QL_KIND_F16: case QL_KIND_BF16: case QL_KIND_F32: case QL_KIND_F64:
        return pack_floating(k, i, o, slot);
    case QL_KIND_BOOL:
        return pack_bool(k, i, o, slot);
    default:
        return pack_struct(k, i, o, slot);
    }
}

#endif /* QL_LAUNCH_GENERAL_H */

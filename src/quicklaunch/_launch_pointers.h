/* quicklaunch._launch: pointer arguments from every source other than the
 * two the hot loop handles inline (a C-contiguous ndarray, a ql Buffer):
 * ints and None, ctypes pointers, the buffer protocol, __array_interface__;
 * for a GPU kernel, other libraries' device arrays (_launch_interop.h).
 * Included once, by _launch.c; runs only when the fast checks miss. */
#ifndef QL_LAUNCH_POINTERS_H
#define QL_LAUNCH_POINTERS_H

#include "_launch_core.h"
#include "_launch_elements.h"
#include "_launch_interop.h"

static int pointer_from_buffer_protocol(KernelCore *k, uint32_t i, PyObject *o, void **out,
                                        pack_ctx *c) {
    int writable = k->codes[i] == QL_KIND_PTR;
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                                     (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Clear();
        if (writable && PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS) == 0) {
            PyBuffer_Release(&view);
            return arg_error(k, i, LaunchValueError,
                             "the %.100s is read-only but the parameter is a non-const "
                             "pointer; pass a writable copy or declare the parameter const",
                             Py_TYPE(o)->tp_name);
        }
        if (PyObject_GetBuffer(o, &view, PyBUF_FULL_RO) == 0) { /* strided */
            PyBuffer_Release(&view);
            return arg_error(k, i, LaunchValueError,
                             "the %.100s is not C-contiguous; pass a contiguous copy",
                             Py_TYPE(o)->tp_name);
        }
        PyErr_Clear();
        return arg_error(k, i, LaunchValueError,
                         "the %.100s does not export a contiguous buffer for a pointer",
                         Py_TYPE(o)->tp_name);
    }
    if (check_format(k, i, view.format) < 0) {
        PyBuffer_Release(&view);
        return -1;
    }
    *out = view.buf;
    if (c->nviews < QL_MAX_VIEWS) {
        c->views[c->nviews++] = view;   /* pinned until the launch returns */
    } else {
        PyBuffer_Release(&view);
        c->hold_gil = 1;                /* no thread can resize it meanwhile */
    }
    return 0;
}

static int pointer_from_array_interface(KernelCore *k, uint32_t i, PyObject *o,
                                        PyObject *iface, void **out, pack_ctx *c) {
    PyObject *data = PyDict_Check(iface) ? PyDict_GetItemString(iface, "data") : NULL;
    PyObject *strides = PyDict_Check(iface) ? PyDict_GetItemString(iface, "strides") : NULL;
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return arg_error(k, i, LaunchTypeError,
                         "the __array_interface__ of %.100s has no (pointer, read_only) "
                         "'data' entry", Py_TYPE(o)->tp_name);
    if (strides && strides != Py_None)
        return arg_error(k, i, LaunchValueError,
                         "the %.100s is strided; pass a C-contiguous copy", Py_TYPE(o)->tp_name);
    if (check_typestr(k, i, PyDict_GetItemString(iface, "typestr"), "an __array_interface__ "
                      "of") < 0)
        return -1;
    /* Own the tuple: PyObject_IsTrue below may run code that drops it. */
    Py_INCREF(data);
    int rc = 0;
    if (address_from_int(PyTuple_GET_ITEM(data, 0), out) < 0) {
        PyErr_Clear();
        rc = arg_error(k, i, LaunchValueError, "the __array_interface__ of %.100s has an "
                       "invalid data address", Py_TYPE(o)->tp_name);
    } else if (k->codes[i] == QL_KIND_PTR) {
        int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
        if (ro < 0)
            rc = -1;
        else if (ro)
            rc = arg_error(k, i, LaunchValueError,
                           "the %.100s is read-only but the parameter is a non-const pointer; "
                           "pass a writable copy or declare the parameter const",
                           Py_TYPE(o)->tp_name);
    }
    Py_DECREF(data);
    c->hold_gil = 1; /* nothing pins the memory but the object itself */
    return rc;
}

/* ctypes: a c_void_p or a POINTER(T) instance holds an address (read from
 * its storage); other simple ctypes values are not memory to point at.
 * Arrays and Structures fall through to the buffer protocol (their storage
 * is the memory). */
static int pointer_from_ctypes(KernelCore *k, uint32_t i, PyObject *o, void **out, int *done) {
    *done = 0;
    PyObject *mro = Py_TYPE(o)->tp_mro;
    int simple = 0, pointer = 0;
    for (Py_ssize_t m = 0; mro && m < PyTuple_GET_SIZE(mro); ++m) {
        const char *name = ((PyTypeObject *)PyTuple_GET_ITEM(mro, m))->tp_name;
        if (strcmp(name, "_ctypes._SimpleCData") == 0) simple = 1;
        if (strcmp(name, "_ctypes._Pointer") == 0 || strcmp(name, "_ctypes.PyCFuncPtr") == 0)
            pointer = 1;
    }
    if (!simple && !pointer) return 0;
    *done = 1;
    if (simple) {
        PyObject *code = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "_type_");
        int is_addr = code && PyUnicode_Check(code) &&
                      (PyUnicode_CompareWithASCIIString(code, "P") == 0 ||
                       PyUnicode_CompareWithASCIIString(code, "z") == 0 ||
                       PyUnicode_CompareWithASCIIString(code, "Z") == 0);
        Py_XDECREF(code);
        PyErr_Clear();
        if (!is_addr)
            return arg_error(k, i, LaunchTypeError,
                             "a ctypes %.100s is a value, not memory; pass an array, "
                             "ctypes.addressof(x) or ctypes.byref-style c_void_p",
                             Py_TYPE(o)->tp_name);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_SIMPLE) < 0 || view.len != sizeof(void *)) {
        if (!PyErr_Occurred()) PyBuffer_Release(&view);
        PyErr_Clear();
        return wrong_kind(k, i, o, "an array, a ql buffer or an int address");
    }
    memcpy(out, view.buf, sizeof(void *));
    PyBuffer_Release(&view);
    return 0;
}

static int pointer_slow(KernelCore *k, uint32_t i, PyObject *o, void **out, pack_ctx *c) {
    if (torch_pointer_slow(k, i, o, out) == 0) return 0; /* a torch tensor, at C speed */
    if (o == Py_None) { *out = NULL; return 0; }
    if (PyBool_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o))
        return wrong_kind(k, i, o, "an array, a ql buffer or an int address");
    /* Ints (and NumPy integer scalars) are addresses. Not PyLong_AsVoidPtr:
     * it takes negative ints as addresses. */
    if (PyLong_Check(o) || PyArray_IsScalar(o, Integer)) {
        if (address_from_int(o, out) < 0) {
            PyErr_Clear();
            return arg_error(k, i, LaunchOverflowError,
                             "the int is not a valid address (negative or above 2**64 - 1)");
        }
        return 0;
    }
    /* Other NumPy scalars export their own storage through the buffer
     * protocol; that is never what a pointer parameter means. */
    if (PyArray_IsScalar(o, Generic)) return wrong_kind(k, i, o, "an array, a ql buffer or an int address");
    if (!k->host_memory) {
        int r = pointer_from_device_array(k, i, o, out);
        if (r <= 0) return r;
        if (!PyObject_CheckBuffer(o) && !PyObject_HasAttrString(o, "__array_interface__")) {
            PyErr_Clear();
            return wrong_kind(k, i, o, "a ql buffer, an array with __cuda_array_interface__ "
                              "or DLPack, or an int device address");
        }
        return arg_error(k, i, LaunchTypeError,
                         "a %.100s is host memory, not memory of device %U; "
                         "copy it with ql.asarray(x, device=...)",
                         Py_TYPE(o)->tp_name, k->device_name);
    }
    int done;
    int rc = pointer_from_ctypes(k, i, o, out, &done);
    if (done) return rc;
    if (PyObject_CheckBuffer(o)) return pointer_from_buffer_protocol(k, i, o, out, c);
    PyObject *iface = PyObject_GetAttrString(o, "__array_interface__");
    if (iface) {
        int r = pointer_from_array_interface(k, i, o, iface, out, c);
        Py_DECREF(iface);
        return r;
    }
    PyErr_Clear();
    /* torch tensors (data_ptr) and DLPack exporters in host memory */
    int r = pointer_from_device_array(k, i, o, out);
    if (r <= 0) return r;
    return wrong_kind(k, i, o, "an array, a ql buffer, a torch tensor, a DLPack array or an "
                      "int address");
}

#endif /* QL_LAUNCH_POINTERS_H */

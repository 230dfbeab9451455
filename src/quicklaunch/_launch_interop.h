/* quicklaunch._launch: pointer arguments for a GPU kernel from other
 * libraries' arrays, and DLPack capsules of quicklaunch's own buffers.
 * Included once, by _launch_pointers.h (whose pointer_slow asks it); runs
 * only when the fast checks (ndarray, ql Buffer) miss.
 *
 * An object is read through the first protocol it offers:
 *   1. `data_ptr()` with `is_contiguous()`, `is_cuda` and `get_device()`
 *      (torch tensors: the cheapest question to ask them),
 *   2. `__cuda_array_interface__` (CuPy, Numba, JAX, cuda.core, ...),
 *   3. `__dlpack__()` (anything that speaks DLPack).
 * Which one a type offers is remembered per type, so a loop over launches
 * asks each argument's type once. The array must be on the kernel's device
 * as DLPack names it (KernelCore's dlpack_type and dlpack_ordinal, given
 * by the backend); nothing here decodes device ids. */
#ifndef QL_LAUNCH_INTEROP_H
#define QL_LAUNCH_INTEROP_H

#include "_launch_core.h"
#include "_launch_elements.h"
#include "_launch_torch.h"

/* ---------------------------------------------------------------- DLPack */
typedef struct { int32_t device_type, device_id; } QLDLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } QLDLDataType;
typedef struct {
    void *data;
    QLDLDevice device;
    int32_t ndim;
    QLDLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} QLDLTensor;
typedef struct QLDLManagedTensor {
    QLDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct QLDLManagedTensor *self);
} QLDLManagedTensor;

/* DLPack device types (dlpack.h's DLDeviceType). */
enum { QL_DL_CPU = 1, QL_DL_CUDA = 2, QL_DL_ROCM = 10, QL_DL_CUDA_MANAGED = 13 };

static int compact(int32_t ndim, const int64_t *shape, const int64_t *strides) {
    if (!strides) return 1;
    int64_t expect = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[d] != expect) return 0;
        expect *= shape[d];
    }
    return 1;
}

/* Exported tensors: the deleter may run on any thread, without the GIL. */
static void dl_deleter(QLDLManagedTensor *t) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)t->manager_ctx);
    PyGILState_Release(g);
    PyMem_RawFree(t);
}

static void dl_capsule_destructor(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, "dltensor")) return; /* consumed: theirs now */
    QLDLManagedTensor *t = PyCapsule_GetPointer(capsule, "dltensor");
    if (t && t->deleter) t->deleter(t);
}

/* _dlpack_capsule(ptr, shape, code, bits, device_type, device_id, owner) */
static PyObject *dlpack_capsule(PyObject *self, PyObject *args) {
    unsigned long long ptr;
    PyObject *shape, *owner;
    int code, bits, device_type, device_id;
    if (!PyArg_ParseTuple(args, "KO!iiiiO", &ptr, &PyTuple_Type, &shape, &code, &bits,
                          &device_type, &device_id, &owner))
        return NULL;
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    QLDLManagedTensor *t = PyMem_RawCalloc(1, sizeof *t + (size_t)ndim * sizeof(int64_t));
    if (!t) return PyErr_NoMemory();
    int64_t *dims = (int64_t *)(t + 1);
    for (Py_ssize_t d = 0; d < ndim; ++d) {
        dims[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
        if (dims[d] == -1 && PyErr_Occurred()) {
            PyMem_RawFree(t);
            return NULL;
        }
    }
    t->dl_tensor.data = (void *)(uintptr_t)ptr;
    t->dl_tensor.device.device_type = device_type;
    t->dl_tensor.device.device_id = device_id;
    t->dl_tensor.ndim = (int32_t)ndim;
    t->dl_tensor.dtype.code = (uint8_t)code;
    t->dl_tensor.dtype.bits = (uint8_t)bits;
    t->dl_tensor.dtype.lanes = 1;
    t->dl_tensor.shape = dims;
    t->dl_tensor.strides = NULL; /* compact, row-major */
    t->manager_ctx = Py_NewRef(owner);
    t->deleter = dl_deleter;
    PyObject *capsule = PyCapsule_New(t, "dltensor", dl_capsule_destructor);
    if (!capsule) dl_deleter(t);
    return capsule;
}

/* ------------------------------------------------------ reading arguments */
enum { VIA_NONE, VIA_DATA_PTR, VIA_CAI, VIA_DLPACK };

#define QL_TYPE_CACHE 8
static struct { PyTypeObject *type; int via; } type_cache[QL_TYPE_CACHE];
static int type_cache_next;

static int protocol_of(PyObject *o) {
    PyTypeObject *t = Py_TYPE(o);
    for (int j = 0; j < QL_TYPE_CACHE; ++j)
        if (type_cache[j].type == t) return type_cache[j].via;
    int via = VIA_NONE;
    if (PyObject_HasAttrString(o, "data_ptr") && PyObject_HasAttrString(o, "is_contiguous") &&
        PyObject_HasAttrString(o, "is_cuda"))
        via = VIA_DATA_PTR;
    else if (PyObject_HasAttrString(o, "__cuda_array_interface__"))
        via = VIA_CAI;
    else if (PyObject_HasAttrString(o, "__dlpack__"))
        via = VIA_DLPACK;
    PyErr_Clear();
    if (via == VIA_DATA_PTR && !torch_abi_tried) torch_abi_try();
    if (via != VIA_NONE) { /* remember it (the type is kept alive by the entry) */
        int j = type_cache_next++ % QL_TYPE_CACHE;
        PyTypeObject *old = type_cache[j].type;
        type_cache[j].type = (PyTypeObject *)Py_NewRef((PyObject *)t);
        type_cache[j].via = via;
        Py_XDECREF((PyObject *)old);
    }
    return via;
}

static int call_bool(PyObject *o, const char *attr, int call) {
    PyObject *r = call ? PyObject_CallMethod(o, attr, NULL) : PyObject_GetAttrString(o, attr);
    if (!r) return -1;
    int v = PyObject_IsTrue(r);
    Py_DECREF(r);
    return v;
}

static int via_data_ptr(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    /* the kernel's memory: host (CPU device) or a CUDA/ROCm device */
    int on_host = call_bool(o, "is_cuda", 0);
    if (on_host >= 0) on_host = !on_host;
    if (on_host == 1 && k->host_memory && PyObject_HasAttrString(o, "is_cpu"))
        on_host = call_bool(o, "is_cpu", 0); /* not meta, mps, xpu, ... */
    if (on_host < 0) return -1;
    long ordinal = 0;
    if (!on_host) {
        PyObject *dev = PyObject_CallMethod(o, "get_device", NULL);
        if (!dev) return -1;
        ordinal = PyLong_AsLong(dev);
        Py_DECREF(dev);
        if (ordinal == -1 && PyErr_Occurred()) return -1;
    }
    if (on_host != k->host_memory || (!on_host && ordinal != k->dlpack_ordinal)) {
        /* the tensor's device by its own name (torch: .device), else from the answers */
        PyObject *dev = PyObject_GetAttrString(o, "device");
        PyObject *name = dev ? PyObject_Str(dev) : NULL;
        Py_XDECREF(dev);
        if (!name) {
            PyErr_Clear();
            name = on_host ? PyUnicode_FromString("the host")
                           : PyUnicode_FromFormat("cuda:%ld", ordinal);
            if (!name) return -1;
        }
        int rc = on_host && !k->host_memory
            ? arg_error(k, i, LaunchTypeError, "the %.100s lives on %U, not on a CUDA device: "
                        "the kernel runs on %U; move it there first (e.g. .cuda())",
                        Py_TYPE(o)->tp_name, name, k->device_name)
            : arg_error(k, i, LaunchValueError, "the %.100s lives on %U, the kernel on %U; "
                        "move it to the kernel's device", Py_TYPE(o)->tp_name, name,
                        k->device_name);
        Py_DECREF(name);
        return rc;
    }
    int contiguous = call_bool(o, "is_contiguous", 1);
    if (contiguous < 0) return -1;
    if (contiguous == 0)
        return arg_error(k, i, LaunchValueError, "the %.100s is not contiguous; pass "
                         ".contiguous()", Py_TYPE(o)->tp_name);
    if (check_named_dtype(k, i, o) < 0) return -1;
    PyObject *p = PyObject_CallMethod(o, "data_ptr", NULL);
    if (!p) return -1;
    int rc = address_from_int(p, out);
    Py_DECREF(p);
    return rc;
}

static int via_cai(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    PyObject *iface = PyObject_GetAttrString(o, "__cuda_array_interface__");
    if (!iface) return -1;
    PyObject *data = PyDict_Check(iface) ? PyDict_GetItemString(iface, "data") : NULL;
    PyObject *strides = PyDict_Check(iface) ? PyDict_GetItemString(iface, "strides") : NULL;
    PyObject *shape = PyDict_Check(iface) ? PyDict_GetItemString(iface, "shape") : NULL;
    int rc = 0;
    if (!data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2) {
        rc = arg_error(k, i, LaunchTypeError, "the __cuda_array_interface__ of %.100s has no "
                       "(pointer, read_only) 'data' entry", Py_TYPE(o)->tp_name);
    } else if (strides && strides != Py_None && shape && PyTuple_Check(shape) &&
               PyTuple_Check(strides) && PyTuple_GET_SIZE(strides) == PyTuple_GET_SIZE(shape)) {
        /* explicit strides: fine if they spell a C-contiguous layout */
        PyObject *typestr = PyDict_GetItemString(iface, "typestr");
        const char *ts = typestr && PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
        int64_t item = ts ? atoi(ts + 2) : 0, sh[32], st[32];
        Py_ssize_t nd = PyTuple_GET_SIZE(shape);
        int ok = item > 0 && nd <= 32;
        for (Py_ssize_t d = 0; ok && d < nd; ++d) {
            sh[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
            st[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, d)) / item;
        }
        PyErr_Clear();
        if (!ok || !compact((int32_t)nd, sh, st))
            rc = arg_error(k, i, LaunchValueError, "the %.100s is strided; pass a "
                           "C-contiguous copy", Py_TYPE(o)->tp_name);
    } else if (strides && strides != Py_None) {
        rc = arg_error(k, i, LaunchValueError, "the %.100s is strided; pass a C-contiguous "
                       "copy", Py_TYPE(o)->tp_name);
    }
    if (!rc)
        rc = check_typestr(k, i, PyDict_GetItemString(iface, "typestr"),
                           "a __cuda_array_interface__ of");
    if (!rc) {
        Py_INCREF(data);
        if (address_from_int(PyTuple_GET_ITEM(data, 0), out) < 0) {
            PyErr_Clear();
            rc = arg_error(k, i, LaunchValueError, "the __cuda_array_interface__ of %.100s "
                           "has an invalid data address", Py_TYPE(o)->tp_name);
        } else if (k->codes[i] == QL_KIND_PTR) {
            int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
            if (ro < 0) rc = -1;
            else if (ro)
                rc = arg_error(k, i, LaunchValueError, "the %.100s is read-only but the "
                               "parameter is a non-const pointer; pass a writable array or "
                               "declare the parameter const", Py_TYPE(o)->tp_name);
        }
        Py_DECREF(data);
    }
    Py_DECREF(iface);
    return rc;
}

static int via_dlpack(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    PyObject *capsule = PyObject_CallMethod(o, "__dlpack__", NULL);
    if (!capsule) return -1;
    QLDLManagedTensor *t = PyCapsule_IsValid(capsule, "dltensor")
                               ? PyCapsule_GetPointer(capsule, "dltensor") : NULL;
    int rc = 0;
    if (!t) {
        PyErr_Clear();
        rc = arg_error(k, i, LaunchTypeError, "__dlpack__ of %.100s did not return a "
                       "'dltensor' capsule", Py_TYPE(o)->tp_name);
    } else {
        const QLDLTensor *x = &t->dl_tensor;
        /* managed memory of a CUDA device is that device's memory too */
        int type = x->device.device_type == QL_DL_CUDA_MANAGED ? QL_DL_CUDA
                                                               : x->device.device_type;
        if (type != k->dlpack_type || x->device.device_id != k->dlpack_ordinal)
            rc = arg_error(k, i, LaunchValueError, "the %.100s lives on DLPack device (%d, %d), "
                           "not on the kernel's device %U; move it there first",
                           Py_TYPE(o)->tp_name, x->device.device_type, x->device.device_id,
                           k->device_name);
        else if (!compact(x->ndim, x->shape, x->strides))
            rc = arg_error(k, i, LaunchValueError, "the %.100s is strided; pass a "
                           "C-contiguous copy", Py_TYPE(o)->tp_name);
        else if (check_dlpack(k, i, x->dtype.code, x->dtype.bits, x->dtype.lanes) < 0)
            rc = -1;
        else
            *out = (char *)x->data + x->byte_offset;
    }
    Py_DECREF(capsule); /* not consumed: the producer's deleter runs; `o` keeps the memory */
    return rc;
}

/* A GPU kernel's pointer argument from another library's array. Returns 1
 * if `o` offered none of the protocols (the caller reports the kind). */
static int pointer_from_device_array(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    switch (protocol_of(o)) {
    case VIA_DATA_PTR: return via_data_ptr(k, i, o, out);
    case VIA_CAI:
        if (k->host_memory)
            return arg_error(k, i, LaunchValueError, "the %.100s lives on a CUDA device "
                             "(__cuda_array_interface__), the kernel on %U; move it to the "
                             "kernel's device", Py_TYPE(o)->tp_name, k->device_name);
        return via_cai(k, i, o, out);
    case VIA_DLPACK: return via_dlpack(k, i, o, out);
    default: return 1;
    }
}

#endif /* QL_LAUNCH_INTEROP_H */

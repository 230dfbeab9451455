/* quicklaunch._launch: torch tensors as pointer arguments at C speed.
 *
 * A torch tensor answers data_ptr(), is_contiguous(), dtype and device
 * through Python calls (~250 ns together). torch also exports those same
 * questions as plain C functions (its AOTInductor shim, libtorch's stable
 * C ABI: aoti_torch_get_data_ptr, ...), taking an AtenTensorHandle, which is
 * an at::Tensor*; a Python tensor object holds its at::Tensor at a fixed
 * offset. quicklaunch.frameworks._torch_abi finds the functions and the
 * offset when the first tensor is seen, checks them on a probe tensor
 * against the Python answers, and registers them here; until then, or if
 * the check fails, tensors take the Python path in _launch_interop.h.
 * Any question the shim cannot answer, and every refusal, also goes to the
 * Python path, which writes the message. Included once, by
 * _launch_pointers.h. */
#ifndef QL_LAUNCH_TORCH_H
#define QL_LAUNCH_TORCH_H

#include <stdbool.h>
#include "_launch_core.h"
#include "_launch_elements.h"

typedef int32_t (*ql_aoti_ptr)(void *, void **);
typedef int32_t (*ql_aoti_i32)(void *, int32_t *);
typedef int32_t (*ql_aoti_bool)(void *, bool *);

static struct {
    PyTypeObject *base;   /* torch._C.TensorBase; NULL: not registered */
    PyTypeObject *tensor; /* torch.Tensor exactly (the launcher's inline check) */
    Py_ssize_t offset;    /* of the at::Tensor inside the Python object */
    ql_aoti_ptr data_ptr;
    ql_aoti_i32 dtype, device_type, device_index;
    ql_aoti_bool contiguous;
} torch_abi;
static int torch_abi_tried;

/* _register_torch(TensorBase, Tensor, offset, data_ptr, dtype, device_type,
 *                 device_index, is_contiguous): addresses as ints. */
static PyObject *register_torch(PyObject *self, PyObject *args) {
    PyObject *base, *tensor;
    Py_ssize_t off;
    unsigned long long f[5];
    if (!PyArg_ParseTuple(args, "O!O!nKKKKK", &PyType_Type, &base, &PyType_Type, &tensor, &off, &f[0], &f[1], &f[2],
                          &f[3], &f[4]))
        return NULL;
    for (int j = 0; j < 5; ++j)
        if (!f[j]) return PyErr_Format(PyExc_ValueError, "a null torch ABI function");
    Py_XSETREF(torch_abi.base, (PyTypeObject *)Py_NewRef(base));
    Py_XSETREF(torch_abi.tensor, (PyTypeObject *)Py_NewRef(tensor));
    torch_abi.offset = off;
    torch_abi.data_ptr = (ql_aoti_ptr)(uintptr_t)f[0];
    torch_abi.dtype = (ql_aoti_i32)(uintptr_t)f[1];
    torch_abi.device_type = (ql_aoti_i32)(uintptr_t)f[2];
    torch_abi.device_index = (ql_aoti_i32)(uintptr_t)f[3];
    torch_abi.contiguous = (ql_aoti_bool)(uintptr_t)f[4];
    torch_abi_tried = 1;
    Py_RETURN_NONE;
}

/* c10::ScalarType -> what the element check compares. */
static ql_got torch_got(int32_t st) {
    static const struct { char kind; signed char size; } t[30] = {
        {'u', 1}, {'i', 1}, {'i', 2}, {'i', 4}, {'i', 8}, {'f', 2}, {'f', 4}, {'f', 8},
        {'c', 4}, {'c', 8}, {'c', 16}, {'b', 1}, {'?', 0}, {'?', 0}, {'?', 0}, {'B', 2},
        {'?', 0}, {'?', 0}, {'?', 0}, {'?', 0}, {'?', 0}, {'?', 0}, {'?', 0}, {'?', 0},
        {'?', 0}, {'?', 0}, {'?', 0}, {'u', 2}, {'u', 4}, {'u', 8}};
    ql_got g = {'?', 0, 0};
    if (st >= 0 && st < 30) { g.kind = t[st].kind; g.size = t[st].size; }
    return g;
}

/* The first time a tensor-like type is met: let Python look for the ABI. */
static void torch_abi_try(void) {
    PyObject *m = PyImport_ImportModule("quicklaunch.frameworks._torch_abi");
    PyObject *r = m ? PyObject_CallMethod(m, "register", NULL) : NULL;
    /* None: torch is not imported yet (a tensor-like type of another library):
     * ask again at the next new type; True or False: decided for good */
    if (!r || r != Py_None) torch_abi_tried = 1;
    Py_XDECREF(r);
    Py_XDECREF(m);
    PyErr_Clear(); /* no ABI: the Python path serves */
}

/* 0 and *out set: accepted. 1: not a tensor, or not decided here (the
 * Python path answers, with its message where it refuses). */
static inline int pointer_from_torch(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    if (!torch_abi.base ||
        (Py_TYPE(o) != torch_abi.tensor && !PyObject_TypeCheck(o, torch_abi.base)))
        return 1;
    void *h = (char *)o + torch_abi.offset;
    int32_t dev, idx, st;
    bool contiguous;
    /* c10::DeviceType: CPU 0, CUDA 1 (ROCm builds of torch say CUDA too) */
    const int32_t want = k->host_memory ? 0 : 1;
    if (torch_abi.device_type(h, &dev) || dev != want) return 1;
    if (!k->host_memory && (torch_abi.device_index(h, &idx) || idx != k->dlpack_ordinal))
        return 1;
    if (torch_abi.contiguous(h, &contiguous) || !contiguous) return 1;
    if (k->elems && k->elems[i].kind) {
        if (torch_abi.dtype(h, &st)) return 1;
        if (st + 1 != k->torch_ok[i]) {
            ql_got g = torch_got(st);
            if (g.kind == '?' || !elem_accepts(&k->elems[i], g)) return 1;
            k->torch_ok[i] = (signed char)(st + 1);   /* st < 30 here */
        }
    }
    return torch_abi.data_ptr(h, out) ? 1 : 0;
}

#endif /* QL_LAUNCH_TORCH_H */

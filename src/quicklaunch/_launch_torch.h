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
 * Python path, which writes the message.
 *
 * Faster still, with no call at all: _torch_abi also finds where a
 * TensorImpl keeps the fields those functions read (each the one offset at
 * which every probe shows torch's own answer) and registers them with
 * _register_torch_layout. A tensor is then read directly only when its
 * dispatch key set is one the shim has already accepted, with the direct
 * answer agreeing (torch_learn): exotic tensors (sparse, nested, wrapped,
 * functional, quantized) carry their own keys and keep the shim. Included
 * once, by _launch_pointers.h. */
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

/* Byte offsets inside a TensorImpl (storage, numel, ...) and inside a
 * StorageImpl (data); ready == 0: not found, the shim alone serves. */
static struct {
    int ready, nkeys;
    Py_ssize_t storage, data, soff, numel, dtype, device, flags;
    unsigned char contiguous;  /* the is-contiguous bit of the flags byte */
    Py_ssize_t keys;
    uint64_t known[4];         /* key sets the shim accepted, direct agreeing */
    /* The window: where dtype, device and the contiguous bit share one
     * 8-byte word starting at the dtype (window_mask == 0: they do not), so
     * that a parameter's memo checks all three with one compare. */
    uint64_t window_mask;
} torch_fields;

/* _register_torch_layout(storage, data, storage_offset, numel, dtype,
 *                        device, flags, contiguous_mask, keys) */
static PyObject *register_torch_layout(PyObject *self, PyObject *args) {
    Py_ssize_t f[7], keys;
    unsigned char mask;
    if (!PyArg_ParseTuple(args, "nnnnnnnbn", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &mask,
                          &keys))
        return NULL;
    for (int j = 0; j < 7; ++j)
        if (f[j] < 0 || f[j] > 4096) return PyErr_Format(PyExc_ValueError, "a torch field offset out of range");
    if (!mask || keys < 0 || keys > 4096) return PyErr_Format(PyExc_ValueError, "a bad torch key-set field");
    torch_fields.storage = f[0]; torch_fields.data = f[1]; torch_fields.soff = f[2];
    torch_fields.numel = f[3]; torch_fields.dtype = f[4]; torch_fields.device = f[5];
    torch_fields.flags = f[6]; torch_fields.contiguous = mask; torch_fields.keys = keys;
    torch_fields.nkeys = 0;
    for (int j = 0; j < 4; ++j) torch_fields.known[j] = ~0ull; /* no key set */
    /* dtype: 2 bytes; device: type, index, has_value; the flags byte; and
     * the top byte free for the element size */
    const Py_ssize_t dev = f[5] - f[4], flags = f[6] - f[4];
    torch_fields.window_mask = 0;
    if (dev >= 2 && dev + 3 <= 7 && flags >= 2 && flags < 7 && (flags < dev || flags >= dev + 3))
        torch_fields.window_mask = 0xFFFFull | 0xFFFFFFull << (8 * dev) |
                                   (uint64_t)mask << (8 * flags);
    torch_fields.ready = 1;
    Py_RETURN_NONE;
}

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

/* _torch_direct_keys(): the key sets read directly (for the tests). */
static PyObject *torch_direct_keys(PyObject *self, PyObject *unused) {
    PyObject *t = PyTuple_New(torch_fields.nkeys);
    for (int j = 0; t && j < torch_fields.nkeys; ++j)
        PyTuple_SET_ITEM(t, j, PyLong_FromUnsignedLongLong(torch_fields.known[j]));
    return t;
}

static inline uint64_t torch_keys(const char *impl) {
    uint64_t ks;
    memcpy(&ks, impl + torch_fields.keys, 8);
    return ks;
}

/* The direct read: 0 with *out and *st set, or 1 (the shim decides). The
 * device, contiguity, count and storage are checked here; the element type
 * by the caller, as on the shim path. */
static inline int torch_direct(const char *impl, int32_t want, int32_t ordinal, void **out, int32_t *st) {
    const signed char *dev = (const signed char *)(impl + torch_fields.device);
    if (dev[0] != want || (want && dev[1] != ordinal)) return 1;
    if (!(impl[torch_fields.flags] & torch_fields.contiguous)) return 1;
    int64_t numel, soff;
    memcpy(&numel, impl + torch_fields.numel, 8);
    memcpy(&soff, impl + torch_fields.soff, 8);
    uint16_t code;
    memcpy(&code, impl + torch_fields.dtype, 2);
    const char *storage = *(const char *const *)(impl + torch_fields.storage);
    if (numel <= 0 || !storage) return 1; /* data_ptr() of an empty tensor is NULL */
    const char *data = *(const char *const *)(storage + torch_fields.data);
    const ql_got g = torch_got(code);
    if (!data || g.size <= 0) return 1;
    *out = (void *)(data + soff * g.size);
    *st = code;
    return 0;
}

/* After the shim accepted a tensor: trust its key set from now on if the
 * direct read gives the same pointer. */
static void torch_learn(const char *impl, int32_t want, int32_t ordinal, void *ptr) {
    void *p;
    int32_t st;
    if (torch_fields.nkeys >= 4 || torch_direct(impl, want, ordinal, &p, &st) || p != ptr) return;
    const uint64_t ks = torch_keys(impl);
    for (int j = 0; j < torch_fields.nkeys; ++j)
        if (torch_fields.known[j] == ks) return;
    torch_fields.known[torch_fields.nkeys++] = ks;
}

/* 0 and *out set: accepted. 1: not a tensor, or not decided here (the
 * Python path answers, with its message where it refuses). */
/* The element check, remembered per parameter: 1 + the ScalarType it took
 * last (any type, for an untyped pointer), so a repeat is one compare. */
static inline int torch_dtype_ok(KernelCore *k, uint32_t i, int32_t st) {
    if (st + 1 == k->torch_ok[i].st) return 1;
    if (k->elems && k->elems[i].kind) {
        ql_got g = torch_got(st);
        if (g.kind == '?' || !elem_accepts(&k->elems[i], g)) return 0;
    } else if (st < 0 || st > 126) {
        return 1; /* accepted, not remembered */
    }
    k->torch_ok[i].st = (signed char)(st + 1);
    return 1;
}

/* After a tensor was accepted for parameter i: remember its window word. */
static inline void torch_remember(KernelCore *k, uint32_t i, const char *impl, int32_t st) {
    const int size = torch_got(st).size;
    uint64_t w;
    if (!torch_fields.window_mask || size <= 0) return;
    memcpy(&w, impl + torch_fields.dtype, 8);
    k->torch_ok[i].word = (w & torch_fields.window_mask) | (uint64_t)size << 56;
}

/* Not inlined: the shim path, the other learned key sets, the learning. */
static int __attribute__((noinline)) torch_pointer_slow(KernelCore *k, uint32_t i, PyObject *o,
                                                        void **out) {
    if (!torch_abi.base ||
        (Py_TYPE(o) != torch_abi.tensor && !PyObject_TypeCheck(o, torch_abi.base)))
        return 1;
    void *h = (char *)o + torch_abi.offset;
    int32_t dev, idx, st;
    bool contiguous;
    /* c10::DeviceType: CPU 0, CUDA 1 (ROCm builds of torch say CUDA too) */
    const int32_t want = k->host_memory ? 0 : 1;
    const char *impl = *(const char *const *)h;
    if (!impl) return 1; /* an undefined tensor: the Python path says so */
    const uint64_t ks = torch_fields.nkeys ? torch_keys(impl) : 0;
    for (int j = 0; j < torch_fields.nkeys; ++j) {
        void *p;
        if (torch_fields.known[j] != ks) continue;
        if (torch_direct(impl, want, k->dlpack_ordinal, &p, &st)) break;
        if (!torch_dtype_ok(k, i, st)) return 1;
        torch_remember(k, i, impl, st);
        *out = p;
        return 0;
    }
    if (torch_abi.device_type(h, &dev) || dev != want) return 1;
    if (!k->host_memory && (torch_abi.device_index(h, &idx) || idx != k->dlpack_ordinal))
        return 1;
    if (torch_abi.contiguous(h, &contiguous) || !contiguous) return 1;
    if (torch_abi.dtype(h, &st) || !torch_dtype_ok(k, i, st)) return 1;
    if (torch_abi.data_ptr(h, out)) return 1;
    if (torch_fields.ready) torch_learn(impl, want, k->dlpack_ordinal, *out);
    torch_remember(k, i, impl, st);
    return 0;
}

/* The memo's hit: `impl` (a defined tensor's TensorImpl) of the key set,
 * dtype, device and contiguity parameter i accepted last, with storage and
 * elements; its data pointer into *out. 0: not a hit (nothing written). It
 * calls nothing: the launcher's fast pass uses it too. */
static inline __attribute__((always_inline)) int torch_memo_hit(KernelCore *k, uint32_t i,
                                                                const char *impl,
                                                                void **out) {
    const uint64_t memo = k->torch_ok[i].word;
    uint64_t ks, w;
    int64_t numel, soff;
    memcpy(&ks, impl + torch_fields.keys, 8);
    memcpy(&w, impl + torch_fields.dtype, 8);
    memcpy(&numel, impl + torch_fields.numel, 8);
    const char *storage = *(const char *const *)(impl + torch_fields.storage);
    if (ks == torch_fields.known[0] && !((w ^ memo) & torch_fields.window_mask) && numel > 0 &&
        storage) {
        const char *data = *(const char *const *)(storage + torch_fields.data);
        memcpy(&soff, impl + torch_fields.soff, 8);
        if (data) {
            *out = (void *)(data + soff * (int64_t)(memo >> 56));
            return 1;
        }
    }
    return 0;
}

/* The TensorImpl of a torch.Tensor `o` whose parameter has a memo, or NULL
 * (no memo yet, or an undefined tensor). */
static inline __attribute__((always_inline)) const char *torch_impl(KernelCore *k, uint32_t i,
                                                                    PyObject *o) {
    if (!k->torch_ok[i].word) return NULL;
    return *(const char *const *)((char *)o + torch_abi.offset);
}

/* A torch.Tensor `o` that the launcher's fast pass did not take (it tries
 * torch_memo_hit first, so that test is not made again here). 0 and *out
 * set: accepted. 1: not decided here (the Python path answers, with its
 * message where it refuses): an undefined tensor, or what
 * torch_pointer_slow declines. */
static inline int pointer_from_torch(KernelCore *k, uint32_t i, PyObject *o, void **out) {
    if (k->torch_ok[i].word && !*(const char *const *)((char *)o + torch_abi.offset))
        return 1;   /* an undefined tensor: the Python path says so */
    return torch_pointer_slow(k, i, o, out);
}

#endif /* QL_LAUNCH_TORCH_H */

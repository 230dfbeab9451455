/* quicklaunch._launch: texture objects as kernel arguments.
 *
 * A ql.Texture (quicklaunch/textures.py) is a TextureBase: the 64-bit handle
 * a cudaTextureObject_t parameter takes (the CPU device's descriptor
 * address, the CUDA driver's CUtexObject), the tag of its device and that
 * device's name. The launcher packs it only into parameters whose C type is
 * a texture object (their element, from quicklaunch/elements.py, has kind
 * 'T'), only on its own device, and only while it is open; everything else
 * is a LaunchError naming the kernel, the parameter and the fix. A plain int
 * for such a parameter is a raw handle, passed as it is (as an int address
 * is for a pointer). Reached only from the launcher's out-of-line paths
 * (pack_integer and pack_pointer, once an argument is no int or array). */
#ifndef QL_LAUNCH_TEXTURE_H
#define QL_LAUNCH_TEXTURE_H

#include "_launch_core.h"

typedef struct {
    PyObject_HEAD
    unsigned long long handle; /* 0 once closed */
    int device_id;
    PyObject *device_name;
} TextureBase;

static PyTypeObject TextureBaseType;

static int is_texture(PyObject *o) { return PyObject_TypeCheck(o, &TextureBaseType); }

/* The texture `o` into parameter i's slot (8 bytes, or a pointer's size). */
static int pack_texture(KernelCore *k, uint32_t i, PyObject *o, void *slot) {
    TextureBase *t = (TextureBase *)o;
    if (!k->elems || k->elems[i].kind != 'T')
        return arg_error(k, i, LaunchTypeError,
                         "got a ql.Texture, which goes only to a cudaTextureObject_t "
                         "parameter, and this one is of kind %s; pass what it "
                         "expects, or declare it cudaTextureObject_t",
                         kind_text(k->codes[i]));
    if (t->device_id != k->device_id)
        return arg_error(k, i, LaunchValueError,
                         "the texture lives on device %S but the kernel runs on %U; create "
                         "the texture on %U with ql.Texture(data, device=...)",
                         t->device_name ? t->device_name : Py_None, k->device_name,
                         k->device_name);
    if (!t->handle)
        return arg_error(k, i, LaunchValueError,
                         "the texture is closed; create a new ql.Texture");
    if (k->sizes[i] == 8) {
        uint64_t h = t->handle;
        memcpy(slot, &h, 8);
    } else {
        void *p = (void *)(uintptr_t)t->handle;
        memcpy(slot, &p, sizeof p);
    }
    return 0;
}

static int texture_init(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"handle", "device_id", "device_name", NULL};
    TextureBase *t = (TextureBase *)self;
    unsigned long long handle;
    int device_id;
    PyObject *dname;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "KiU", names, &handle, &device_id, &dname))
        return -1;
    t->handle = handle;
    t->device_id = device_id;
    Py_XSETREF(t->device_name, Py_NewRef(dname));
    return 0;
}

/* t._release() -> the handle, which the texture no longer holds (0 if it
 * held none): launches refuse it from then on. */
static PyObject *texture_release(PyObject *self, PyObject *unused) {
    TextureBase *t = (TextureBase *)self;
    unsigned long long h = t->handle;
    t->handle = 0;
    return PyLong_FromUnsignedLongLong(h);
}

static void texture_dealloc(PyObject *self) {
    Py_CLEAR(((TextureBase *)self)->device_name);
    Py_TYPE(self)->tp_free(self);
}

static PyMemberDef texture_members[] = {
    {"handle", T_ULONGLONG, offsetof(TextureBase, handle), READONLY,
     "the texture object's 64-bit handle (0 once closed)"},
    {"device_id", T_INT, offsetof(TextureBase, device_id), READONLY,
     "the tag of its device"},
    {NULL}};

static PyMethodDef texture_methods[] = {
    {"_release", texture_release, METH_NOARGS,
     "Returns the handle and forgets it (launches then refuse the texture)."},
    {NULL}};

static PyTypeObject TextureBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicklaunch._launch.TextureBase",
    .tp_basicsize = sizeof(TextureBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A texture object's handle and device, as kernel launches read them.",
    .tp_new = PyType_GenericNew,
    .tp_init = texture_init,
    .tp_dealloc = texture_dealloc,
    .tp_members = texture_members,
    .tp_methods = texture_methods,
};

#endif /* QL_LAUNCH_TEXTURE_H */

/* quicklaunch._launch: the Buffer base type, device memory as the launcher
 * reads it (address, size, device id, read-only flag, owner). The struct is
 * in _launch_core.h; the fast path reads it directly. Included once, by
 * _launch.c. */
#ifndef QL_LAUNCH_BUFFER_H
#define QL_LAUNCH_BUFFER_H

#include "_launch_core.h"

static int buffer_init(PyObject *self, PyObject *args, PyObject *kw) {
    BufferBase *b = (BufferBase *)self;
    static char *names[] = {"ptr", "nbytes", "device_id", "readonly", "owner", "dtype", NULL};
    unsigned long long ptr;
    Py_ssize_t nbytes;
    int device_id, readonly = 0;
    PyObject *owner = Py_None, *dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Kni|pO$O", names, &ptr, &nbytes, &device_id,
                                     &readonly, &owner, &dtype))
        return -1;
    if (dtype != Py_None && !PyArray_DescrCheck(dtype)) {
        PyErr_Format(PyExc_TypeError, "dtype must be a numpy.dtype or None, got %.100s",
                     Py_TYPE(dtype)->tp_name);
        return -1;
    }
    Py_XSETREF(b->dtype, dtype == Py_None ? NULL : Py_NewRef(dtype));
    b->ptr = (uintptr_t)ptr;
    b->nbytes = nbytes;
    b->device_id = device_id;
    b->readonly = readonly;
    Py_XSETREF(b->owner, Py_NewRef(owner));
    return 0;
}

static int buffer_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((BufferBase *)self)->owner);
    return 0;
}

static int buffer_clear(PyObject *self) {
    Py_CLEAR(((BufferBase *)self)->owner);
    Py_CLEAR(((BufferBase *)self)->dtype);
    return 0;
}

static void buffer_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    buffer_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyMemberDef buffer_members[] = {
    {"ptr", T_ULONGLONG, offsetof(BufferBase, ptr), READONLY, "device address"},
    {"nbytes", T_PYSSIZET, offsetof(BufferBase, nbytes), READONLY, "size in bytes"},
    {"device_id", T_INT, offsetof(BufferBase, device_id), READONLY, "owning device's id"},
    {"readonly", T_BOOL, offsetof(BufferBase, readonly), READONLY, "read-only memory"},
    {"owner", T_OBJECT, offsetof(BufferBase, owner), READONLY, "keeps the memory alive"},
    {NULL}};

static PyTypeObject BufferBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicklaunch._launch.Buffer",
    .tp_basicsize = sizeof(BufferBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Device memory as the launcher reads it: address, size, device, owner.",
    .tp_new = PyType_GenericNew,
    .tp_init = buffer_init,
    .tp_dealloc = buffer_dealloc,
    .tp_traverse = buffer_traverse,
    .tp_clear = buffer_clear,
    .tp_members = buffer_members,
};

#endif /* QL_LAUNCH_BUFFER_H */

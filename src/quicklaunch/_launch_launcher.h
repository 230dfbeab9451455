/* quicklaunch._launch: the Launcher type (a kernel bound to one launch
 * configuration): its GC slots, getters, repr and type object.
 * make_launcher() in _launch_config.h builds one; the call path itself
 * (launcher_vectorcall) is in _launch.c. Included once, by _launch.c, after
 * the fast path and before _launch_config.h. Nothing here runs per call. */

static int launcher_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Launcher *)self)->kernel);
    Py_VISIT(((Launcher *)self)->stream_obj);
    Py_VISIT(((Launcher *)self)->skip_type);
    return 0;
}

static int launcher_clear(PyObject *self) {
    Py_CLEAR(((Launcher *)self)->stream_obj);
    Py_CLEAR(((Launcher *)self)->skip_type);
    return 0; /* the kernel stays: a call may still be running on another thread */
}

static void launcher_dealloc(PyObject *self) {
    Launcher *l = (Launcher *)self;
    PyObject_GC_UnTrack(self);
    Py_CLEAR(l->kernel);
    Py_CLEAR(l->stream_obj);
    Py_CLEAR(l->skip_type);
    PyObject_GC_Del(self);
}

static PyObject *launcher_get(PyObject *self, void *which) {
    Launcher *l = (Launcher *)self;
    switch ((int)(intptr_t)which) {
    case 0: return Py_NewRef(l->kernel ? (PyObject *)l->kernel : Py_None);
    case 1: return Py_BuildValue("(III)", l->grid[0], l->grid[1], l->grid[2]);
    case 2: return Py_BuildValue("(III)", l->block[0], l->block[1], l->block[2]);
    case 3: return PyLong_FromUnsignedLong(l->shared);
    case 5: return PyBool_FromLong(l->planned != NULL);
    case 6: return PyBool_FromLong(l->direct != NULL);
    default: return Py_NewRef(l->stream_obj ? l->stream_obj : Py_None);
    }
}

static PyObject *launcher_repr(PyObject *self) {
    Launcher *l = (Launcher *)self;
    return PyUnicode_FromFormat("<Launcher %U[(%u, %u, %u), (%u, %u, %u), %u]>",
                                l->kernel->name, l->grid[0], l->grid[1], l->grid[2],
                                l->block[0], l->block[1], l->block[2], l->shared);
}

static PyGetSetDef launcher_getset[] = {
    {"kernel", launcher_get, NULL, "the kernel", (void *)0},
    {"grid", launcher_get, NULL, "grid dimensions (x, y, z)", (void *)1},
    {"block", launcher_get, NULL, "block dimensions (x, y, z)", (void *)2},
    {"shared_mem", launcher_get, NULL, "dynamic shared memory in bytes", (void *)3},
    {"stream", launcher_get, NULL, "the stream, as given", (void *)4},
    {"planned", launcher_get, NULL, "whether calls take the backend's plan of this "
     "configuration (checked once) instead of its general launch entry", (void *)5},
    {"direct", launcher_get, NULL, "whether calls hand the argument objects to the "
     "kernel's module, which reads them itself (a planned CPU launch of one small "
     "block; other arguments still take the parameter block)", (void *)6},
    {NULL}};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicklaunch._launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A kernel bound to one launch configuration. k.configure() returns its "
              "bound launch function (whose __self__ this is); calling the Launcher "
              "itself launches too.",
    .tp_vectorcall_offset = offsetof(Launcher, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = launcher_dealloc,
    .tp_traverse = launcher_traverse,
    .tp_clear = launcher_clear,
    .tp_repr = launcher_repr,
    .tp_getset = launcher_getset,
};

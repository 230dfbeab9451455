/* quicklaunch._launch: launch configurations. Parsing and checking a grid,
 * a block, a shared-memory size and a stream, and make_launcher, which
 * builds the Launcher of a checked configuration (planned, direct or
 * general). Included once, by _launch.c, after the fast path it binds
 * (launcher_*_fastcall) and _launch_launcher.h (the Launcher type), before
 * _launch_types.h (KernelCore, whose methods call it). Nothing here runs
 * per call on the configured-launcher path. */

/* ------------------------------------------------------ configurations */

static int dim_error(KernelCore *k, const char *what, PyObject *o) {
    PyErr_Format(LaunchTypeError,
                 "kernel '%U': %s must be a positive int or a tuple of 1 to 3 positive "
                 "ints, got %R", k->name, what, o);
    return -1;
}

static int parse_dims(KernelCore *k, PyObject *o, const char *what, uint32_t out[3]) {
    out[0] = out[1] = out[2] = 1;
    PyObject *items[3] = {o, NULL, NULL};
    Py_ssize_t n = 1;
    if (PyTuple_Check(o)) {
        n = PyTuple_GET_SIZE(o);
        if (n < 1 || n > 3) return dim_error(k, what, o);
        for (Py_ssize_t j = 0; j < n; ++j) items[j] = PyTuple_GET_ITEM(o, j);
    }
    for (Py_ssize_t j = 0; j < n; ++j) {
        PyObject *v = items[j];
        if (PyBool_Check(v) || PyFloat_Check(v) || !PyIndex_Check(v)) return dim_error(k, what, o);
        PyObject *idx = PyNumber_Index(v);
        if (!idx) return -1;
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(idx, &overflow);
        if (overflow || x < 1 || x > 0xffffffffLL) {
            PyErr_Format(LaunchValueError,
                         "kernel '%U': %s dimension %c is %R; each dimension must be "
                         "between 1 and the device's limit", k->name, what, "xyz"[j], idx);
            Py_DECREF(idx);
            return -1;
        }
        Py_DECREF(idx);
        out[j] = (uint32_t)x;
    }
    return 0;
}

static int check_config(KernelCore *k, const uint32_t grid[3], const uint32_t block[3],
                        long long shared) {
    for (int j = 0; j < 3; ++j) {
        if (block[j] > k->max_block[j]) {
            PyErr_Format(LaunchValueError,
                         "kernel '%U': block dimension %c is %u; device %U allows at most "
                         "(%u, %u, %u)", k->name, "xyz"[j], block[j], k->device_name,
                         k->max_block[0], k->max_block[1], k->max_block[2]);
            return -1;
        }
        if (grid[j] > k->max_grid[j]) {
            PyErr_Format(LaunchValueError,
                         "kernel '%U': grid dimension %c is %u; device %U allows at most "
                         "(%u, %u, %u); use a larger block or loop inside the kernel",
                         k->name, "xyz"[j], grid[j], k->device_name, k->max_grid[0],
                         k->max_grid[1], k->max_grid[2]);
            return -1;
        }
    }
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    if (threads > k->max_threads) {
        PyErr_Format(LaunchValueError,
                     "kernel '%U': block (%u, %u, %u) has %llu threads; device %U allows "
                     "at most %u per block; use a smaller block and more blocks", k->name,
                     block[0], block[1], block[2], (unsigned long long)threads,
                     k->device_name, k->max_threads);
        return -1;
    }
    if (shared < 0 || shared > k->max_shared) {
        PyErr_Format(LaunchValueError,
                     "kernel '%U': shared_mem is %lld bytes; device %U allows 0 to %u",
                     k->name, shared, k->device_name, k->max_shared);
        return -1;
    }
    return 0;
}

static int parse_shared(KernelCore *k, PyObject *o, long long *out) {
    *out = 0;
    if (!o || o == Py_None) return 0;
    if (PyBool_Check(o) || PyFloat_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(LaunchTypeError, "kernel '%U': shared_mem must be an int number of "
                     "bytes, got %.100s", k->name, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    PyObject *idx = PyNumber_Index(o);
    if (!idx) return -1;
    *out = PyLong_AsLongLongAndOverflow(idx, &overflow);
    Py_DECREF(idx);
    if (overflow) {
        PyErr_Format(LaunchValueError, "kernel '%U': shared_mem is %R bytes; device %U "
                     "allows 0 to %u", k->name, o, k->device_name, k->max_shared);
        return -1;
    }
    return 0;
}

/* A stream: None (the default stream), a raw int handle, a ql.Stream
 * (__ql_stream__() -> (device id, handle), which must be the kernel's
 * device), or an object that exports __cuda_stream__() -> (version,
 * handle). */
static int parse_stream(KernelCore *k, PyObject *o, void **out) {
    *out = NULL;
    if (!o || o == Py_None) return 0;
    PyObject *handle = NULL;
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        handle = Py_NewRef(o);
    } else if (PyObject_HasAttrString(o, "__ql_stream__")) {
        /* a ql.Stream: (device id, handle); the device must be the kernel's */
        PyObject *t = PyObject_CallMethod(o, "__ql_stream__", NULL);
        if (!t) return -1;
        long dev = PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2
                       ? PyLong_AsLong(PyTuple_GET_ITEM(t, 0)) : -1;
        if (dev == -1) {
            Py_DECREF(t);
            PyErr_Clear();
            PyErr_Format(LaunchTypeError, "kernel '%U': __ql_stream__ of %.100s did not "
                         "return (device id, handle)", k->name, Py_TYPE(o)->tp_name);
            return -1;
        }
        if (dev != k->device_id) {
            Py_DECREF(t);
            PyErr_Format(LaunchValueError, "kernel '%U' runs on %U but the stream belongs to "
                         "another device; use a stream of the kernel's device", k->name,
                         k->device_name);
            return -1;
        }
        handle = Py_NewRef(PyTuple_GET_ITEM(t, 1));
        Py_DECREF(t);
    } else {
        PyObject *t = PyObject_CallMethod(o, "__cuda_stream__", NULL);
        if (t && PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 2)
            handle = Py_NewRef(PyTuple_GET_ITEM(t, 1));
        Py_XDECREF(t);
        if (!handle) {
            PyErr_Clear();
            PyErr_Format(LaunchTypeError, "kernel '%U': stream must be None, a ql.Stream, "
                         "an object with __cuda_stream__ or an int handle, got %.100s",
                         k->name, Py_TYPE(o)->tp_name);
            return -1;
        }
    }
    int rc = address_from_int(handle, out);
    Py_DECREF(handle);
    if (rc < 0) {
        PyErr_Clear();
        PyErr_Format(LaunchOverflowError, "kernel '%U': the stream handle %R is not valid "
                     "(negative or above 2**64 - 1)", k->name, o);
    }
    return rc;
}

static int wants_gil_release(KernelCore *k, const uint32_t *grid, const uint32_t *block) {
    uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2], threads;
    uint64_t per_block = (uint64_t)block[0] * block[1] * block[2];
    if (__builtin_mul_overflow(blocks, per_block, &threads)) return 1; /* > 2**64 */
    return threads > k->inline_threads;
}

/* Validates a configuration and returns the launch function bound to it. */
static PyObject *make_launcher(KernelCore *k, PyObject *grid_o, PyObject *block_o,
                               PyObject *shared_o, PyObject *stream_o) {
    uint32_t grid[3], block[3];
    long long shared;
    void *stream;
    if (parse_dims(k, grid_o, "grid", grid) < 0 || parse_dims(k, block_o, "block", block) < 0 ||
        parse_shared(k, shared_o, &shared) < 0 || check_config(k, grid, block, shared) < 0 ||
        parse_stream(k, stream_o, &stream) < 0)
        return NULL;
    Launcher *l = PyObject_GC_New(Launcher, &LauncherType);
    if (!l) return NULL;
    l->vectorcall = launcher_vectorcall_entry;
    l->kernel = (KernelCore *)Py_NewRef(k);
    memcpy(l->grid, grid, sizeof grid);
    memcpy(l->block, block, sizeof block);
    l->shared = (uint32_t)shared;
    l->stream = stream;
    l->stream_obj = Py_NewRef(stream_o ? stream_o : Py_None);
    l->release_gil = wants_gil_release(k, grid, block);
    l->planned = NULL;
    l->direct = NULL;
    l->skip_type = NULL;
    l->skip_at = 0;
    if (k->plan && !l->release_gil) {
        const unsigned dims[6] = {grid[0], grid[1], grid[2], block[0], block[1], block[2]};
        l->planned = k->plan(k->func, dims, (unsigned)shared, stream, l->plan, QL_PLAN_BYTES);
        /* a direct launch reads NumPy arrays as device memory: host devices only */
        if (l->planned && k->plan_direct && k->host_array && k->pyargs.array_type)
            l->direct = k->plan_direct(l->plan, l->planned);
    }
    l->def.ml_name = PyUnicode_AsUTF8(k->name); /* lives as long as the kernel */
    l->def.ml_meth = l->direct    ? (PyCFunction)(void (*)(void))launcher_direct_fastcall
                     : l->planned ? (PyCFunction)(void (*)(void))launcher_planned_fastcall
                                  : (PyCFunction)(void (*)(void))launcher_fastcall;
    l->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
    l->def.ml_doc = "Launches the kernel with this configuration; pass the kernel's "
                    "arguments by position. __self__ is the Launcher.";
    PyObject_GC_Track(l);
    if (!l->def.ml_name) {
        Py_DECREF(l);
        return NULL;
    }
    /* A builtin method named after the kernel, bound to the Launcher. */
    PyObject *bound = PyCFunction_NewEx(&l->def, (PyObject *)l, NULL);
    Py_DECREF(l);
    return bound;
}

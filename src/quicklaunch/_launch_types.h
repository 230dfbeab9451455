/* quicklaunch._launch: the KernelCore type. Construction, the kernel's
 * launch methods (k[grid, block], configure, launch) and the
 * per-configuration Launcher cache. Included once, by _launch.c, after
 * _launch_config.h (make_launcher, which builds a Launcher for a checked
 * configuration). Nothing here runs per call on the configured-launcher
 * path. */

/* ------------------------------------------------------------ KernelCore */

static int read_u32_triple(PyObject *o, uint32_t out[3], const char *what) {
    if (!PyArg_ParseTuple(o, "III", &out[0], &out[1], &out[2])) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of three ints", what);
        return -1;
    }
    return 0;
}

/* elems: per parameter None (any element) or (kind, size, lanes, expect
 * text, NumPy spelling), from quicklaunch/elements.py. */
static void free_elems(KernelCore *k);

static int init_elems(KernelCore *k, PyObject *name, Py_ssize_t n, PyObject *elems) {
    free_elems(k); /* a failed __init__ may be retried */
    k->elem_ok = n ? PyMem_Calloc((size_t)n, sizeof(PyObject *)) : NULL;
    k->torch_ok = n ? PyMem_Calloc((size_t)n, sizeof(ql_torch_memo)) : NULL;
    if (n && (!k->elem_ok || !k->torch_ok)) { PyErr_NoMemory(); return -1; }
    if (!elems || elems == Py_None) return 0;
    PyObject *seq = PySequence_Fast(elems, "elems must be a sequence");
    if (!seq) return -1;
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "kernel '%U': %zd elems for %zd parameters", name,
                     PySequence_Fast_GET_SIZE(seq), n);
        goto out;
    }
    k->elems = PyMem_Calloc((size_t)n, sizeof(ql_elem));
    k->elem_texts = PyTuple_New(n);
    if (!k->elems || !k->elem_texts) { PyErr_NoMemory(); goto out; }
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
        if (e == Py_None) {
            PyTuple_SET_ITEM(k->elem_texts, i, Py_NewRef(Py_None));
            continue;
        }
        const char *kind;
        int size, lanes;
        PyObject *expect, *npname;
        if (!PyArg_ParseTuple(e, "siiUU", &kind, &size, &lanes, &expect, &npname)) goto out;
        /* 'T': a texture object (a uint64, or a pointer on HIP): _launch_texture.h */
        const int texture = kind[0] == 'T' && !kind[1] &&
                            (k->codes[i] == QL_KIND_U64 || k->codes[i] == QL_KIND_PTR ||
                             k->codes[i] == QL_KIND_PTR_CONST);
        /* a 2-lane float struct by value (float2, cuDoubleComplex): it takes a
         * Python complex too (_launch.c, pack_struct) */
        const int complex_pair = kind[0] == 'f' && !kind[1] && lanes == 2 &&
                                 (size == 4 || size == 8) && k->codes[i] == QL_KIND_STRUCT &&
                                 k->sizes[i] == 2 * size;
        if (!texture && !complex_pair &&
            (!strchr("fiubB", kind[0]) || !kind[0] || kind[1] || size < 1 ||
             size > 16 || lanes < 1 || lanes > 16 ||
             (k->codes[i] != QL_KIND_PTR && k->codes[i] != QL_KIND_PTR_CONST))) {
            PyErr_Format(PyExc_ValueError, "kernel '%U', parameter %zd: bad element %R", name,
                         i + 1, e);
            goto out;
        }
        k->elems[i].kind = kind[0];
        k->elems[i].size = (uint16_t)size;
        k->elems[i].lanes = (uint8_t)lanes;
        PyTuple_SET_ITEM(k->elem_texts, i, Py_BuildValue("(OO)", expect, npname));
        if (!PyTuple_GET_ITEM(k->elem_texts, i)) goto out;
    }
    rc = 0;
out:
    Py_DECREF(seq);
    return rc;
}

static void free_elems(KernelCore *k) {
    if (k->elem_ok)
        for (uint32_t i = 0; i < k->nparams; ++i) Py_CLEAR(k->elem_ok[i]);
    PyMem_Free(k->elem_ok);
    PyMem_Free(k->torch_ok);
    PyMem_Free(k->elems);
    k->elem_ok = NULL;
    k->torch_ok = NULL;
    k->elems = NULL;
    Py_CLEAR(k->elem_texts);
}

/* How this interpreter keeps a Python int's size (enum ql_py_long_layout),
 * when it and NumPy keep everything a direct launch reads where
 * ql_pyargs.h says; else -1, and no launcher takes a direct entry. Decided
 * by the headers this file is built with. */
static int pyargs_long_layout(void) {
#if defined(Py_GIL_DISABLED) || PY_VERSION_HEX >= 0x030F0000 || SIZEOF_VOID_P != 8
    return -1; /* other object headers, or a layout not checked yet */
#else
    if (offsetof(PyObject, ob_type) != QL_PY_TYPE_AT ||
        offsetof(PyFloatObject, ob_fval) != QL_PY_FLOAT_AT ||
        offsetof(PyArrayObject_fields, data) != QL_NP_DATA_AT ||
        offsetof(PyArrayObject_fields, descr) != QL_NP_DESCR_AT ||
        offsetof(PyArrayObject_fields, flags) != QL_NP_FLAGS_AT ||
        sizeof(((PyArrayObject_fields *)0)->flags) != sizeof(int) ||
        NPY_ARRAY_C_CONTIGUOUS != QL_NP_C_CONTIGUOUS || NPY_ARRAY_WRITEABLE != QL_NP_WRITEABLE ||
        sizeof(digit) != 4 || PyLong_SHIFT != 30)
        return -1;
#if PY_VERSION_HEX >= 0x030C0000
    if (offsetof(PyLongObject, long_value.lv_tag) != QL_PY_LONG_SIZE_AT ||
        offsetof(PyLongObject, long_value.ob_digit) != QL_PY_LONG_DIGIT_AT)
        return -1;
    return QL_PY_LONG_LV_TAG;
#else
    if (offsetof(PyVarObject, ob_size) != QL_PY_LONG_SIZE_AT ||
        offsetof(PyLongObject, ob_digit) != QL_PY_LONG_DIGIT_AT)
        return -1;
    return QL_PY_LONG_OB_SIZE;
#endif
#endif
}

static int core_init(PyObject *self, PyObject *args, PyObject *kw) {
    KernelCore *k = (KernelCore *)self;
    static char *names[] = {"name", "param_names", "codes", "sizes", "aligns", "launch",
                            "func", "device_id", "device_name", "host_memory",
                            "inline_threads", "max_block", "max_grid", "max_threads",
                            "max_shared", "error_hook", "dlpack_device", "defaults",
                            "elems", "plan", "plan_direct", NULL};
    PyObject *name, *pnames, *sizes, *aligns, *dname, *mb, *mg, *hook, *defaults = NULL;
    PyObject *elems = NULL;
    Py_buffer codes;
    unsigned long long launch, func, inline_threads, plan = 0, plan_direct = 0;
    int device_id, host_memory, dlpack_type = 1, dlpack_ordinal = 0; /* kDLCPU, 0 */
    unsigned int max_threads, max_shared;
    if (k->launch) {
        PyErr_SetString(PyExc_RuntimeError, "KernelCore is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "UO!y*OOKKiUpKOOIIO|$(ii)O!OKK", names, &name,
                                     &PyTuple_Type, &pnames, &codes, &sizes, &aligns,
                                     &launch, &func, &device_id, &dname, &host_memory,
                                     &inline_threads, &mb, &mg, &max_threads, &max_shared,
                                     &hook, &dlpack_type, &dlpack_ordinal, &PyTuple_Type,
                                     &defaults, &elems, &plan, &plan_direct))
        return -1;
    Py_ssize_t n = codes.len;
    int rc = -1;
    PyObject *sz = PySequence_Fast(sizes, "sizes must be a sequence");
    PyObject *al = sz ? PySequence_Fast(aligns, "aligns must be a sequence") : NULL;
    if (!al) goto done;
    if (n > QL_MAX_PARAMS || PyTuple_GET_SIZE(pnames) != n ||
        PySequence_Fast_GET_SIZE(sz) != n || PySequence_Fast_GET_SIZE(al) != n) {
        PyErr_Format(LaunchValueError, "kernel '%U': %zd parameters; the launcher takes "
                     "at most %d and needs a name, size and alignment for each",
                     name, n, QL_MAX_PARAMS);
        goto done;
    }
    if (!launch || !PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_ValueError, "a backend launch entry and error hook are required");
        goto done;
    }
    if (defaults && PyTuple_GET_SIZE(defaults) > n) {
        PyErr_Format(PyExc_ValueError, "kernel '%U': %zd defaults for %zd parameters", name,
                     PyTuple_GET_SIZE(defaults), n);
        goto done;
    }
    if (dlpack_type < 1 || dlpack_ordinal < 0) {
        PyErr_Format(PyExc_ValueError, "dlpack_device must be (DLPack device type, ordinal) "
                     "with a type >= 1 and an ordinal >= 0, got (%d, %d)", dlpack_type,
                     dlpack_ordinal);
        goto done;
    }
    size_t off = 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
        size_t s = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(sz, i));
        size_t a = PyLong_AsSize_t(PySequence_Fast_GET_ITEM(al, i));
        if (PyErr_Occurred()) goto done;
        uint8_t c = ((uint8_t *)codes.buf)[i];
        if (!PyUnicode_Check(PyTuple_GET_ITEM(pnames, i))) {
            PyErr_Format(PyExc_TypeError, "kernel '%U': parameter names must be str", name);
            goto done;
        }
        /* Scalars and pointers have their natural size; the launcher writes
         * exactly that many bytes into the slot. */
        static const uint8_t natural[QL_KIND_COUNT] = {
            [QL_KIND_PTR] = sizeof(void *), [QL_KIND_PTR_CONST] = sizeof(void *),
            [QL_KIND_I8] = 1, [QL_KIND_I16] = 2, [QL_KIND_I32] = 4, [QL_KIND_I64] = 8,
            [QL_KIND_U8] = 1, [QL_KIND_U16] = 2, [QL_KIND_U32] = 4, [QL_KIND_U64] = 8,
            [QL_KIND_F16] = 2, [QL_KIND_BF16] = 2, [QL_KIND_F32] = 4, [QL_KIND_F64] = 8,
            [QL_KIND_BOOL] = 1};
        if (c >= QL_KIND_PTR && c < QL_KIND_STRUCT && (s != natural[c] || a > s)) {
            PyErr_Format(LaunchValueError, "kernel '%U', parameter %zd '%U': a %s of %zu "
                         "bytes (alignment %zu) does not match its kind", name, i + 1,
                         PyTuple_GET_ITEM(pnames, i), kind_text(c), s, a);
            goto done;
        }
        if (c < QL_KIND_PTR || c > QL_KIND_STRUCT || !a || (a & (a - 1)) || a > 64) {
            PyErr_Format(LaunchValueError, "kernel '%U', parameter %zd '%U': a kernel "
                         "cannot take this type by value (kind %d, alignment %zu); pass "
                         "a pointer", name, i + 1, PyTuple_GET_ITEM(pnames, i), c, a);
            goto done;
        }
        off = (off + a - 1) & ~(a - 1);
        if (s == 0 || s > QL_MAX_PARAM_BYTES || off + s > QL_MAX_PARAM_BYTES) {
            PyErr_Format(LaunchValueError, "kernel '%U': its parameters take more than %d "
                         "bytes; pass large structs through a pointer", name,
                         QL_MAX_PARAM_BYTES);
            goto done;
        }
        k->codes[i] = c;
        k->sizes[i] = (uint16_t)s;
        k->offsets[i] = (uint16_t)off;
        off += s;
        if (off > QL_MAX_PARAM_BYTES) {
            PyErr_Format(LaunchValueError, "kernel '%U': its parameters take more than %d "
                         "bytes; pass large structs through a pointer", name,
                         QL_MAX_PARAM_BYTES);
            goto done;
        }
    }
    if (init_elems(k, name, n, elems) < 0) goto done;
    if (read_u32_triple(mb, k->max_block, "max_block") < 0 ||
        read_u32_triple(mg, k->max_grid, "max_grid") < 0)
        goto done;
    k->nparams = (uint32_t)n;
    k->param_bytes = (uint32_t)off;
    k->func = (void *)(uintptr_t)func;
    k->device_id = device_id;
    k->dlpack_type = dlpack_type;
    k->dlpack_ordinal = dlpack_ordinal;
    k->host_memory = host_memory;
    k->host_array = host_memory ? &PyArray_Type : NULL;
    k->inline_threads = inline_threads;
    k->max_threads = max_threads;
    k->max_shared = max_shared;
    k->name = Py_NewRef(name);
    k->param_names = Py_NewRef(pnames);
    k->device_name = Py_NewRef(dname);
    k->error_hook = Py_NewRef(hook);
    k->defaults = defaults && PyTuple_GET_SIZE(defaults) ? Py_NewRef(defaults) : NULL;
    k->configs = PyDict_New();
    if (!k->configs) goto done;
    k->launch = (ql_launch_fn)(uintptr_t)launch;
    k->plan = (ql_plan_fn)(uintptr_t)plan;
    k->plan_direct = (ql_plan_direct_fn)(uintptr_t)plan_direct;
    const int long_layout = pyargs_long_layout();
    if (k->host_array && long_layout >= 0) /* else array_type stays NULL: no direct launch */
        k->pyargs = (ql_pyargs){.array_type = k->host_array, .float_type = &PyFloat_Type,
                                .long_type = &PyLong_Type, .long_layout = (uint32_t)long_layout,
                                .dtype_ok = (const void *const *)k->elem_ok};
    rc = 0;
done:
    Py_XDECREF(sz);
    Py_XDECREF(al);
    PyBuffer_Release(&codes);
    return rc;
}

static int core_ready(KernelCore *k) {
    if (k->launch && k->configs) return 1; /* (configs is NULL after a GC clear) */
    PyErr_SetString(LaunchError, "this kernel was not initialised; get kernels from a "
                    "module: ql.compile(...).get_kernel(name)");
    return 0;
}

static int exact_int(PyObject *o) { return PyLong_CheckExact(o); }

/* An exact int or a tuple of exact ints: immutable, equal only to itself. */
static int exact_dims(PyObject *o) {
    if (exact_int(o)) return 1;
    if (!PyTuple_CheckExact(o)) return 0;
    for (Py_ssize_t m = 0; m < PyTuple_GET_SIZE(o); ++m)
        if (!exact_int(PyTuple_GET_ITEM(o, m))) return 0;
    return 1;
}

/* Only keys of exact ints and a stream that is None or an exact int are
 * cached: 1.0 == True == 1, and a dict hit must not accept what
 * make_launcher would refuse. A stream object is resolved afresh each time:
 * its handle can change (a closed ql.Stream) and the cache would keep it
 * alive. */
static int canonical_key(PyObject *key) {
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    for (Py_ssize_t j = 0; j < n && j < 3; ++j) {
        PyObject *v = PyTuple_GET_ITEM(key, j);
        if (j < 2 ? !exact_dims(v) : !exact_int(v)) return 0;
    }
    if (n == 4) {
        PyObject *st = PyTuple_GET_ITEM(key, 3);
        if (st != Py_None && !exact_int(st)) return 0;
    }
    return 1;
}

/* k[grid, block], k[grid, block, shared_mem], k[grid, block, shared_mem, stream]. */
static PyObject *core_subscript(PyObject *self, PyObject *key) {
    KernelCore *k = (KernelCore *)self;
    if (!core_ready(k)) return NULL;
    PyObject *last = k->last_key;
    if (last == key) return Py_NewRef(k->last_launcher);
    if (last && PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == PyTuple_GET_SIZE(last)) {
        Py_ssize_t j, n = PyTuple_GET_SIZE(key);
        for (j = 0; j < n && PyTuple_GET_ITEM(key, j) == PyTuple_GET_ITEM(last, j); ++j) {}
        if (j == n) return Py_NewRef(k->last_launcher);
    }
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) < 2 || PyTuple_GET_SIZE(key) > 4) {
        PyErr_Format(LaunchTypeError, "kernel '%U': index with [grid, block], [grid, block, "
                     "shared_mem] or [grid, block, shared_mem, stream]", k->name);
        return NULL;
    }
    int cacheable = canonical_key(key);
    PyObject *l = cacheable ? PyDict_GetItemWithError(k->configs, key) : NULL;
    if (l) {
        Py_INCREF(l);
    } else {
        if (PyErr_Occurred()) { /* unhashable stream object: build without caching */
            PyErr_Clear();
            cacheable = 0;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(key);
        l = make_launcher(k, PyTuple_GET_ITEM(key, 0), PyTuple_GET_ITEM(key, 1),
                          n > 2 ? PyTuple_GET_ITEM(key, 2) : NULL,
                          n > 3 ? PyTuple_GET_ITEM(key, 3) : NULL);
        if (!l) return NULL;
        if (!cacheable) return l;
        if (PyDict_GET_SIZE(k->configs) >= QL_CONFIG_CACHE_MAX) PyDict_Clear(k->configs);
        if (PyDict_SetItem(k->configs, key, l) < 0) PyErr_Clear();
    }
    /* Both fields change before either old value is released: releasing
     * can run a finalizer that indexes this kernel again. */
    PyObject *old_key = k->last_key, *old_launcher = k->last_launcher;
    k->last_key = Py_NewRef(key);
    k->last_launcher = Py_NewRef(l);
    Py_XDECREF(old_key);
    Py_XDECREF(old_launcher);
    return l;
}

static PyObject *core_configure(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
    static const char *const kws[] = {"shared_mem", "stream", "cooperative"};
    KernelCore *k = (KernelCore *)self;
    PyObject *opt[3] = {NULL, NULL, NULL};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (!core_ready(k)) return NULL;
    if (nargs < 2 || nargs > 4) {
        PyErr_Format(LaunchTypeError, "kernel '%U': configure(grid, block, shared_mem=0, "
                     "stream=None, *, cooperative=False) takes 2 to 4 positional arguments", k->name);
        return NULL;
    }
    for (Py_ssize_t j = 2; j < nargs; ++j) opt[j - 2] = args[j];
    for (Py_ssize_t j = 0; j < nkw; ++j) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, j);
        int slot = PyUnicode_CompareWithASCIIString(kn, kws[0]) == 0   ? 0
                   : PyUnicode_CompareWithASCIIString(kn, kws[1]) == 0 ? 1
                   : PyUnicode_CompareWithASCIIString(kn, kws[2]) == 0 ? 2 : -1;
        if (slot < 0 || opt[slot]) {
            PyErr_Format(LaunchTypeError, "kernel '%U': configure() got an unexpected or "
                         "repeated keyword '%U'", k->name, kn);
            return NULL;
        }
        opt[slot] = args[nargs + j];
    }
    if (opt[2]) {
        /* cooperative=True: every block resident at once (rare and heavy,
         * so Python: Kernel._configure_cooperative, quicklaunch.cooperative);
         * a plain configure pays only the keyword compare above. */
        const int on = PyObject_IsTrue(opt[2]);
        if (on < 0) return NULL;
        if (on) {
            PyObject *zero = opt[0] ? NULL : PyLong_FromLong(0);
            if (!opt[0] && !zero) return NULL;
            PyObject *r = PyObject_CallMethod(self, "_configure_cooperative", "OOOO", args[0],
                                              args[1], opt[0] ? opt[0] : zero,
                                              opt[1] ? opt[1] : Py_None);
            Py_XDECREF(zero);
            return r;
        }
    }
    return make_launcher(k, args[0], args[1], opt[0], opt[1]);
}

/* k.launch(grid, block, *args, shared_mem=0, stream=None): no Launcher kept. */
static PyObject *core_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
    KernelCore *k = (KernelCore *)self;
    PyObject *shared_o = NULL, *stream_o = NULL;
    uint32_t grid[3], block[3];
    long long shared;
    void *stream;
    if (!core_ready(k)) return NULL;
    if (nargs < 2) {
        PyErr_Format(LaunchTypeError, "kernel '%U': launch(grid, block, *args) needs a grid "
                     "and a block", k->name);
        return NULL;
    }
    for (Py_ssize_t j = 0, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0; j < nkw; ++j) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, j);
        if (PyUnicode_CompareWithASCIIString(kn, "shared_mem") == 0) shared_o = args[nargs + j];
        else if (PyUnicode_CompareWithASCIIString(kn, "stream") == 0) stream_o = args[nargs + j];
        else {
            PyErr_Format(LaunchTypeError, "kernel '%U': launch() got an unexpected keyword "
                         "'%U'; kernel arguments are positional", k->name, kn);
            return NULL;
        }
    }
    if (args[0] == k->direct_grid && args[1] == k->direct_block) {
        memcpy(grid, k->direct_dims, sizeof grid);
        memcpy(block, k->direct_dims + 3, sizeof block);
        shared = 0;
        if ((shared_o && (parse_shared(k, shared_o, &shared) < 0 ||
                          check_config(k, grid, block, shared) < 0)) ||
            parse_stream(k, stream_o, &stream) < 0)
            return NULL;
    } else {
        if (parse_dims(k, args[0], "grid", grid) < 0 ||
            parse_dims(k, args[1], "block", block) < 0 ||
            parse_shared(k, shared_o, &shared) < 0 ||
            check_config(k, grid, block, shared) < 0 || parse_stream(k, stream_o, &stream) < 0)
            return NULL;
        if (exact_dims(args[0]) && exact_dims(args[1])) {
            /* immutable: safe to recognise by identity next time */
            Py_XSETREF(k->direct_grid, Py_NewRef(args[0]));
            Py_XSETREF(k->direct_block, Py_NewRef(args[1]));
            memcpy(k->direct_dims, grid, sizeof grid);
            memcpy(k->direct_dims + 3, block, sizeof block);
        }
    }
    const int release = wants_gil_release(k, grid, block);
    int rc = do_launch(k, grid, block, (uint32_t)shared, stream, release, args + 2, nargs - 2,
                       NULL, NULL);
    if (rc != 0 && (rc != QL_WRONG_COUNT ||
                    launch_with_defaults(k, grid, block, (uint32_t)shared, stream, release,
                                         args + 2, nargs - 2) < 0))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *core_layout(PyObject *self, PyObject *unused) {
    KernelCore *k = (KernelCore *)self;
    if (!core_ready(k)) return NULL;
    PyObject *t = PyTuple_New(k->nparams);
    for (uint32_t i = 0; t && i < k->nparams; ++i) {
        PyObject *row = Py_BuildValue("(iII)", k->codes[i], (unsigned)k->sizes[i],
                                      (unsigned)k->offsets[i]);
        if (!row) { Py_CLEAR(t); break; }
        PyTuple_SET_ITEM(t, i, row);
    }
    return t;
}

static int core_traverse(PyObject *self, visitproc visit, void *arg) {
    KernelCore *k = (KernelCore *)self;
    Py_VISIT(k->error_hook);
    Py_VISIT(k->defaults);
    Py_VISIT(k->configs);
    Py_VISIT(k->last_key);
    Py_VISIT(k->last_launcher);
    return 0;
}

static int core_clear(PyObject *self) {
    KernelCore *k = (KernelCore *)self;
    Py_CLEAR(k->error_hook);
    Py_CLEAR(k->defaults);
    Py_CLEAR(k->configs);
    Py_CLEAR(k->last_key);
    Py_CLEAR(k->last_launcher);
    Py_CLEAR(k->direct_grid);
    Py_CLEAR(k->direct_block);
    return 0;
}

static void core_dealloc(PyObject *self) {
    KernelCore *k = (KernelCore *)self;
    PyObject_GC_UnTrack(self);
    core_clear(self);
    Py_CLEAR(k->name);
    Py_CLEAR(k->param_names);
    Py_CLEAR(k->device_name);
    free_elems(k);
    Py_TYPE(self)->tp_free(self); /* a subclass' dealloc releases its heap type */
}

/* k._pack(*args) -> bytes: the parameter block a launch with these arguments
 * would pass (graph nodes keep it, and keep the arguments alive). */
static PyObject *core_pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    KernelCore *k = (KernelCore *)self;
    char raw[QL_MAX_PARAM_BYTES + 64];
    char *params = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    void *ptrs[QL_MAX_PARAMS];
    PyObject *full[QL_MAX_PARAMS];
    if ((uint32_t)nargs != k->nparams) {
        if (fill_defaults(k, args, nargs, full) < 0) return NULL;
        args = full;
        nargs = k->nparams;
    }
    memset(params, 0, k->param_bytes); /* padding reads as zeros */
    pack_ctx c;
    c.nviews = c.hold_gil = 0;
    int rc = pack_args(k, args, params, ptrs, &c);
    release_views(&c);
    if (rc < 0) return NULL;
    return PyBytes_FromStringAndSize(params, (Py_ssize_t)k->param_bytes);
}

static PyMethodDef core_methods[] = {
    {"_pack", (PyCFunction)(void (*)(void))core_pack, METH_FASTCALL,
     "_pack(*args) -> bytes: the parameter block for these arguments"},
    {"configure", (PyCFunction)(void (*)(void))core_configure, METH_FASTCALL | METH_KEYWORDS,
     "configure(grid, block, shared_mem=0, stream=None, *, cooperative=False) -> Launcher "
     "bound to that config (cooperative: every block resident at once, for grid.sync())"},
    {"launch", (PyCFunction)(void (*)(void))core_launch, METH_FASTCALL | METH_KEYWORDS,
     "launch(grid, block, *args, shared_mem=0, stream=None): launch once"},
    {"_layout", core_layout, METH_NOARGS,
     "((type code, size, offset), ...) of the parameter block"},
    {NULL}};

static PyMappingMethods core_mapping = {NULL, core_subscript, NULL};

static PyTypeObject KernelCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicklaunch._launch.KernelCore",
    .tp_basicsize = sizeof(KernelCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A compiled kernel's launch data: backend entry, handle, parameter layout.",
    .tp_new = PyType_GenericNew,
    .tp_init = core_init,
    .tp_dealloc = core_dealloc,
    .tp_traverse = core_traverse,
    .tp_clear = core_clear,
    .tp_as_mapping = &core_mapping,
    .tp_methods = core_methods,
};

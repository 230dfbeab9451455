/* quicklaunch._launch: the fast launch path, for every backend.
 *
 * Everything that depends only on the kernel (backend entry, function handle,
 * parameter layout and type codes) lives in a KernelCore, built once.
 * Everything that depends only on the launch configuration lives in a
 * Launcher, built once and cached per configuration. Per call: one vectorcall,
 * one pass over the arguments writing into a parameter block on the C stack,
 * one call through the backend's cuLaunchKernel-shaped function pointer.
 * No Python object is allocated on that path.
 *
 * Messages for bad input name the kernel, the parameter and the fix; they
 * are built only once a call has already failed.
 *
 * One translation unit in parts, each using only the parts before it (the
 * order is listed in _launch_core.h): the shared structs, the Buffer type
 * and the slow readers of pointer arguments above; the Launcher and
 * KernelCore types, which call into the fast path, below it. */
#include "_launch_core.h"
#include "_launch_buffer.h"
#include "_launch_pointers.h" /* and, through it, _launch_interop.h */
#include "_launch_texture.h"  /* ql.Texture arguments */
#include "_launch_stub_tls.h" /* the host stubs' launch record */

#include "_launch_general.h"  /* pack_one: every kind, every input, every error */

/* ------------------------------------------------------------ the fast pass */

/* A NumPy array for a pointer parameter, decided in a few instructions: a
 * host-memory kernel's array of the exact type, with the flags `need` (a
 * constant at each use) and the dtype this parameter accepted last. */
static inline __attribute__((always_inline)) int fast_array(KernelCore *k, uint32_t i,
                                                            PyObject *o, int need, char *slot) {
    if (Py_TYPE(o) != k->host_array) return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    if ((PyArray_FLAGS(a) & need) != need || (PyObject *)PyArray_DESCR(a) != k->elem_ok[i])
        return 0;
    *(void **)slot = PyArray_DATA(a);
    return 1;
}

/* A ql buffer (quicklaunch.memory.Buffer, or the base type itself) for a
 * pointer parameter: of this kernel's device, writable if the parameter is
 * not const, untyped or of the dtype the parameter accepted last. */
static inline __attribute__((always_inline)) int fast_buffer(KernelCore *k, uint32_t i,
                                                             PyObject *o, int writable,
                                                             char *slot) {
    PyTypeObject *t = Py_TYPE(o);
    if (t->tp_base != &BufferBaseType && t != &BufferBaseType) return 0;
    BufferBase *b = (BufferBase *)o;
    if (b->device_id != k->device_id || (writable && b->readonly) ||
        (b->dtype && b->dtype != k->elem_ok[i]))
        return 0;
    *(void **)slot = (void *)b->ptr;
    return 1;
}

/* The fast pass over the arguments into the parameter block, from
 * parameter i on: the common cases are decided in a few instructions (a
 * C-contiguous NumPy array, a ql buffer, or a torch tensor like the one the
 * parameter accepted last, for a pointer; a Python float for a float or a
 * double; a small Python int for a 32- or 64-bit int, signed or not).
 * Returns the first parameter it could not pack (its ptrs entry set), or
 * nparams. It calls nothing, so its loop lives in scratch registers. */
static inline __attribute__((always_inline)) uint32_t pack_fast(KernelCore *k,
                                                                PyObject *const *args,
                                                                char *block, void **ptrs,
                                                                uint32_t i) {
    const uint32_t n = k->nparams;
    for (; i < n; ++i) {
        char *slot = block + k->offsets[i];
        PyObject *o = args[i];
        const uint8_t code = k->codes[i];
        ptrs[i] = slot;
        /* tests in the order of how often kernels have each kind; a chain
         * of compares, not a switch (GCC makes a jump table of that: five
         * instructions more per empty 4-parameter launch) */
        if (code <= QL_KIND_PTR_CONST) {
            if (code == QL_KIND_PTR
                    ? fast_array(k, i, o, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE, slot)
                    : fast_array(k, i, o, NPY_ARRAY_C_CONTIGUOUS, slot))
                continue;
            if (fast_buffer(k, i, o, code == QL_KIND_PTR, slot)) continue;
            if (Py_TYPE(o) == torch_abi.tensor) { /* a torch.Tensor like the last one */
                const char *impl = torch_impl(k, i, o);
                if (impl && torch_memo_hit(k, i, impl, (void **)slot)) continue;
            }
        } else if (code == QL_KIND_F32) {
            if (PyFloat_CheckExact(o)) {
                const double d = PyFloat_AS_DOUBLE(o);
                const float f = (float)d;
                /* finite, NaN, or infinity given as such */
                if (__builtin_expect(fabsf(f) <= FLT_MAX || d != d || isinf(d), 1)) {
                    memcpy(slot, &f, 4);
                    continue;
                }
            }
        } else if (code == QL_KIND_I32) {
            long v; /* one digit (30 bits) always fits an int32 */
            if (ql_small_int(o, &v)) {
                *(int32_t *)slot = (int32_t)v;
                continue;
            }
        } else if ((1u << code) & (1u << QL_KIND_I64 | 1u << QL_KIND_U32 | 1u << QL_KIND_U64)) {
            long v; /* fits each of them; non-negative if unsigned */
            if (ql_small_int(o, &v) && (code == QL_KIND_I64 || v >= 0)) {
                if (code == QL_KIND_U32) *(uint32_t *)slot = (uint32_t)v;
                else *(int64_t *)slot = (int64_t)v;
                continue;
            }
        } else if (code == QL_KIND_F64) {
            if (PyFloat_CheckExact(o)) {
                memcpy(slot, &((PyFloatObject *)o)->ob_fval, 8);
                continue;
            }
        }
        return i;
    }
    return n;
}

/* The general pass from parameter i on, where pack_fast stopped: what it
 * leaves (torch tensors unlike the last, other types, every error) goes to
 * pointer_from_torch or pack_one, and pack_fast takes over again after
 * each. */
static __attribute__((noinline)) int pack_from(KernelCore *k, PyObject *const *args,
                                               char *block, void **ptrs, pack_ctx *c,
                                               uint32_t i) {
    for (; i < k->nparams; i = pack_fast(k, args, block, ptrs, i + 1)) {
        PyObject *o = args[i];
        char *slot = block + k->offsets[i];
        if (k->codes[i] <= QL_KIND_PTR_CONST && Py_TYPE(o) == torch_abi.tensor &&
            pointer_from_torch(k, i, o, (void **)slot) == 0)
            continue; /* a torch.Tensor: its accessors, no Python call */
        if (pack_one(k, i, o, slot, c) < 0) return -1;
    }
    return 0;
}

/* One pass over the arguments into the parameter block (inlined into each
 * launch path: out of line, GCC's copy cost every direct launch a call and
 * a frame, 13 instructions). */
static inline __attribute__((always_inline)) int pack_args(KernelCore *k,
                                                           PyObject *const *args,
                                                           char *block, void **ptrs,
                                                           pack_ctx *c) {
    const uint32_t i = pack_fast(k, args, block, ptrs, 0);
    return __builtin_expect(i == k->nparams, 1) ? 0 : pack_from(k, args, block, ptrs, c, i);
}

/* ------------------------------------------------------------ the launch */

static int count_error(KernelCore *k, Py_ssize_t nargs) {
    if (k->defaults)
        PyErr_Format(LaunchTypeError, "kernel '%U' takes %u argument%s %R, got %zd (the "
                     "last %zd have defaults and may be left out)", k->name, k->nparams,
                     k->nparams == 1 ? "" : "s", k->param_names, nargs,
                     PyTuple_GET_SIZE(k->defaults));
    else
        PyErr_Format(LaunchTypeError, "kernel '%U' takes %u argument%s %R, got %zd",
                     k->name, k->nparams, k->nparams == 1 ? "" : "s", k->param_names, nargs);
    return -1;
}

/* A launch with fewer arguments than parameters: `full` gets the arguments
 * then the defaults of the missing trailing parameters (borrowed: the
 * kernel holds its defaults), or the count error. Cold: a launch with every
 * argument never comes here. */
static __attribute__((noinline, cold)) int fill_defaults(KernelCore *k, PyObject *const *args,
                                                        Py_ssize_t nargs, PyObject **full) {
    const Py_ssize_t nd = k->defaults ? PyTuple_GET_SIZE(k->defaults) : 0;
    const Py_ssize_t n = (Py_ssize_t)k->nparams;
    if (nargs > n || nargs < n - nd) return count_error(k, nargs);
    for (Py_ssize_t i = 0; i < nargs; ++i) full[i] = args[i];
    for (Py_ssize_t i = nargs; i < n; ++i) {
        PyObject *d = PyTuple_GET_ITEM(k->defaults, i - (n - nd));
        if (PyExceptionInstance_Check(d)) { /* a default that could not be evaluated */
            PyObject *text = PyObject_Str(d);
            if (text) {
                PyErr_SetObject((PyObject *)Py_TYPE(d), text);
                Py_DECREF(text);
            }
            return -1;
        }
        full[i] = d;
    }
    return 0;
}

/* do_launch's answer to a wrong argument count: its caller then calls
 * launch_with_defaults (out of line, so that the fast path keeps nothing
 * extra live for it). */
#define QL_WRONG_COUNT (-2)
static __attribute__((noinline, cold)) int wrong_count(KernelCore *k, Py_ssize_t nargs) {
    const Py_ssize_t nd = k->defaults ? PyTuple_GET_SIZE(k->defaults) : 0;
    if (nargs < (Py_ssize_t)k->nparams && nargs >= (Py_ssize_t)k->nparams - nd)
        return QL_WRONG_COUNT;
    return count_error(k, nargs);
}

/* A launch the backend refused: its error hook turns the status into the
 * exception to raise, or returns None to have the launch retried once (the
 * CUDA device does so after making its context current on a thread that
 * had none). Cold: the fast path pays one test of the status. */
static __attribute__((noinline, cold)) int launch_failed(
    KernelCore *k, const uint32_t *grid, const uint32_t *block, uint32_t shared, void *stream,
    void **ptrs, int status) {
    for (int attempt = 0;; ++attempt) {
        PyObject *exc = PyObject_CallFunction(k->error_hook, "Oi", (PyObject *)k, status);
        if (!exc) return -1;
        if (exc != Py_None) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
            return -1;
        }
        Py_DECREF(exc);
        if (attempt) {
            PyErr_Format(LaunchError, "kernel '%U': the launch failed again after a retry "
                         "(status %d)", k->name, status);
            return -1;
        }
        status = k->launch(k->func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                           shared, stream, ptrs, NULL);
        if (!status) return 0;
    }
}

#include "_launch_hooks.h" /* ql.trace and ql.graph: the slow path's hooks */

/* `planned` and `plan`: a Launcher's plan of this configuration (NULL: the
 * general entry). */
static inline __attribute__((always_inline)) int do_launch(KernelCore *k, const uint32_t *grid, const uint32_t *block,
                     uint32_t shared, void *stream, int release_gil,
                     PyObject *const *args, Py_ssize_t nargs,
                     ql_planned_fn planned, const void *plan) {
    /* Aligned by hand: an _Alignas(64) array would make the compiler
     * realign the whole frame on every call. */
    char raw[QL_MAX_PARAM_BYTES + 64];
    char *params = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    void *ptrs[QL_MAX_PARAMS];
    if ((uint32_t)nargs != k->nparams) return wrong_count(k, nargs);
    pack_ctx c;
    c.nviews = c.hold_gil = 0;
    if (pack_args(k, args, params, ptrs, &c) < 0) {
        release_views(&c);
        return -1;
    }
    int status;
    if (__builtin_expect(slow_hooks != NULL, 0)) {
        int captured = capture_hook ? capture_launch(k, grid, block, shared, stream, params,
                                                     args, nargs) : 0;
        if (captured) {
            release_views(&c);
            return captured < 0 ? -1 : 0;
        }
        status = traced_launch(k, grid, block, shared, stream, release_gil && !c.hold_gil,
                               ptrs, args, nargs);
    } else if (release_gil && !c.hold_gil) {
        Py_BEGIN_ALLOW_THREADS
        status = k->launch(k->func, grid[0], grid[1], grid[2], block[0], block[1],
                           block[2], shared, stream, ptrs, NULL);
        Py_END_ALLOW_THREADS
    } else if (planned) {
        status = planned(plan, ptrs);
    } else {
        status = k->launch(k->func, grid[0], grid[1], grid[2], block[0], block[1],
                           block[2], shared, stream, ptrs, NULL);
    }
    if (__builtin_expect(status != 0, 0))
        status = launch_failed(k, grid, block, shared, stream, ptrs, status);
    release_views(&c);
    return status ? -1 : 0;
}

/* Too few (or too many) arguments: the fast path's count test lands here. */
static __attribute__((noinline, cold)) int launch_with_defaults(
    KernelCore *k, const uint32_t *grid, const uint32_t *block, uint32_t shared, void *stream,
    int release_gil, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *full[QL_MAX_PARAMS];
    if (fill_defaults(k, args, nargs, full) < 0) return -1;
    return do_launch(k, grid, block, shared, stream, release_gil, full, (Py_ssize_t)k->nparams,
                     NULL, NULL);
}

static __attribute__((noinline, cold)) int launcher_wrong_count(
    Launcher *l, PyObject *const *args, Py_ssize_t nargs) {
    return launch_with_defaults(l->kernel, l->grid, l->block, l->shared, l->stream,
                                l->release_gil, args, nargs);
}

static inline __attribute__((always_inline)) PyObject *
launcher_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Launcher *l = (Launcher *)self;
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_Format(LaunchTypeError, "kernel '%U' takes its arguments by position, in the "
                     "order %R", l->kernel->name, l->kernel->param_names);
        return NULL;
    }
    int rc = do_launch(l->kernel, l->grid, l->block, l->shared, l->stream, l->release_gil,
                       args, PyVectorcall_NARGS(nargsf), l->planned, l->plan);
    if (__builtin_expect(rc < 0, 0) &&
        (rc != QL_WRONG_COUNT || launcher_wrong_count(l, args, PyVectorcall_NARGS(nargsf)) < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* The same launch as a METH_FASTCALL function bound to the Launcher: what
 * k.configure() and k[grid, block] return. CPython specialises calls to
 * such builtin methods, which a callable object does not get. */
static PyObject *launcher_fastcall(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames) {
    return launcher_vectorcall(self, args, (size_t)nargs, kwnames);
}

/* The general function, called from the planned one below: out of line, so
 * that the planned one's frame stays its own. */
static __attribute__((noinline, cold)) PyObject *launcher_general(
    PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return launcher_vectorcall(self, args, (size_t)nargs, kwnames);
}

/* A planned launch that pack_fast could not finish (from parameter i on):
 * the rest of the arguments by the general pass, then the launch, and the
 * views released. Out of line, so that the planned function below saves
 * nothing for it. */
static __attribute__((noinline)) PyObject *planned_rest(Launcher *l, PyObject *const *args,
                                                        uint32_t i, char *params, void **ptrs) {
    pack_ctx c;
    c.nviews = c.hold_gil = 0;
    int status = pack_from(l->kernel, args, params, ptrs, &c, i);
    if (status == 0) {
        status = l->planned(l->plan, ptrs);
        if (__builtin_expect(status != 0, 0))
            status = launch_failed(l->kernel, l->grid, l->block, l->shared, l->stream, ptrs,
                                   status);
    }
    release_views(&c);
    if (status != 0) return NULL;
    Py_RETURN_NONE;
}

/* A planned launch the backend refused: the error hook's exception, or
 * its retry (launch_failed). */
static __attribute__((noinline, cold)) PyObject *planned_refused(Launcher *l, void **ptrs,
                                                                 int status) {
    if (launch_failed(l->kernel, l->grid, l->block, l->shared, l->stream, ptrs, status))
        return NULL;
    Py_RETURN_NONE;
}

/* The launch function of a Launcher whose backend planned its configuration
 * (make_launcher binds it then): the general function's launch with what the
 * plan makes constant left out (grid, block, shared size, stream and the GIL
 * test are the plan's). Keywords, a wrong argument count and ql.trace or
 * ql.graph hooks take the general function, which raises or handles them;
 * an argument pack_fast leaves, and a refused launch, take planned_rest. */
static PyObject *launcher_planned_fastcall(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs, PyObject *kwnames) {
    Launcher *l = (Launcher *)self;
    KernelCore *k = l->kernel;
    if (__builtin_expect(kwnames != NULL || (uint32_t)nargs != k->nparams ||
                         slow_hooks != NULL, 0))
        return launcher_general(self, args, nargs, kwnames);
    char raw[QL_MAX_PARAM_BYTES + 64]; /* aligned by hand, as in do_launch */
    char *params = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    void *ptrs[QL_MAX_PARAMS];
    const uint32_t i = pack_fast(k, args, params, ptrs, 0);
    if (__builtin_expect(i != (uint32_t)nargs, 0))
        return planned_rest(l, args, i, params, ptrs);
    const int status = l->planned(l->plan, ptrs);
    if (__builtin_expect(status != 0, 0)) return planned_refused(l, ptrs, status);
    Py_RETURN_NONE;
}

/* A direct launch the backend refused (a fault, an assert): the arguments
 * packed after all, for the error hook's exception or its retry. */
static __attribute__((noinline, cold)) PyObject *direct_refused(Launcher *l,
                                                                PyObject *const *args,
                                                                int status) {
    char raw[QL_MAX_PARAM_BYTES + 64];
    char *params = (char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    void *ptrs[QL_MAX_PARAMS];
    pack_ctx c;
    c.nviews = c.hold_gil = 0;
    int rc = pack_args(l->kernel, args, params, ptrs, &c);
    if (rc == 0)
        rc = launch_failed(l->kernel, l->grid, l->block, l->shared, l->stream, ptrs, status);
    release_views(&c);
    if (rc != 0) return NULL;
    Py_RETURN_NONE;
}

/* A direct launch that did not happen (QL_NOT_DIRECT: nothing ran) or
 * failed (a backend status). Not run: the planned function launches it;
 * and if an argument is of a type the module never reads, the first such
 * is remembered, so that the launcher's next calls with it go there first.
 * A refusal of a value (a new dtype, a big int), of a thread's first
 * launch or of queued stream work leaves nothing. Out of line, so that
 * the direct function keeps only two registers across its call. */
static __attribute__((noinline)) PyObject *direct_not_done(Launcher *l, PyObject *const *args,
                                                           int status) {
    KernelCore *k = l->kernel;
    if (status != QL_NOT_DIRECT) return direct_refused(l, args, status);
    for (uint32_t i = 0; i < k->nparams; ++i) {
        PyTypeObject *t = Py_TYPE(args[i]);
        const void *const tp = t;
        if (tp != k->pyargs.array_type && tp != k->pyargs.float_type &&
            tp != k->pyargs.long_type) {
            Py_XSETREF(l->skip_type, (PyTypeObject *)Py_NewRef(t));
            l->skip_at = i;
            break;
        }
    }
    return launcher_planned_fastcall((PyObject *)l, args, (Py_ssize_t)k->nparams, NULL);
}

/* The direct launch itself, its frame out of line: the tests before it
 * in launcher_direct_fastcall, and its jump to the planned function, need
 * none. */
static __attribute__((noinline)) PyObject *direct_call(Launcher *l, PyObject *const *args) {
    const int status = l->direct(l->plan, args, &l->kernel->pyargs);
    if (__builtin_expect(status == 0, 1)) Py_RETURN_NONE;
    return direct_not_done(l, args, status);
}

/* The launch function of a Launcher whose plan has a direct launch
 * (make_launcher binds it then): the argument objects go straight to the
 * backend, whose kernel module reads them itself. Keywords, a wrong count,
 * the trace or graph hooks and an argument of the type the module last
 * refused (skip_type) take the planned function first, as the Launcher had
 * no direct launch; so does what the module does not read
 * (direct_not_done). */
static PyObject *launcher_direct_fastcall(PyObject *self, PyObject *const *args,
                                          Py_ssize_t nargs, PyObject *kwnames) {
    Launcher *l = (Launcher *)self;
    KernelCore *k = l->kernel;
    if (__builtin_expect(kwnames != NULL || (uint32_t)nargs != k->nparams ||
                         slow_hooks != NULL, 0) ||
        (__builtin_expect(l->skip_type != NULL, 0) && Py_TYPE(args[l->skip_at]) == l->skip_type))
        return launcher_planned_fastcall(self, args, nargs, kwnames);
    return direct_call(l, args);
}

/* The Launcher object itself, called: its tp_vectorcall. */
static PyObject *launcher_vectorcall_entry(PyObject *self, PyObject *const *args,
                                           size_t nargsf, PyObject *kwnames) {
    return launcher_vectorcall(self, args, nargsf, kwnames);
}

#include "_launch_launcher.h"
#include "_launch_config.h"
#include "_launch_types.h"

/* -------------------------------------------------------------- module */

static PyObject *register_errors(PyObject *m, PyObject *args) {
    PyObject *a, *b, *c, *d;
    if (!PyArg_ParseTuple(args, "OOOO", &a, &b, &c, &d)) return NULL;
    Py_XSETREF(LaunchError, Py_NewRef(a));
    Py_XSETREF(LaunchTypeError, Py_NewRef(b));
    Py_XSETREF(LaunchValueError, Py_NewRef(c));
    Py_XSETREF(LaunchOverflowError, Py_NewRef(d));
    Py_RETURN_NONE;
}

/* The data address of an ndarray: what the launcher passes for it (debug
 * validation uses it; arr.ctypes.data costs microseconds). */
static PyObject *array_address(PyObject *m, PyObject *a) {
    if (!PyArray_Check(a)) {
        PyErr_SetString(PyExc_TypeError, "expected a NumPy array");
        return NULL;
    }
    return PyLong_FromVoidPtr(PyArray_DATA((PyArrayObject *)a));
}

static PyMethodDef module_methods[] = {
    {"_array_address", array_address, METH_O, "The data address of a NumPy array."},
    {"_dlpack_capsule", dlpack_capsule, METH_VARARGS,
     "A 'dltensor' capsule: (ptr, shape, code, bits, device_type, device_id, owner)."},
    {"_register_torch", register_torch, METH_VARARGS,
     "Registers torch's C tensor accessors (quicklaunch.frameworks._torch_abi)."},
    {"_register_torch_layout", register_torch_layout, METH_VARARGS,
     "Registers where a TensorImpl keeps its fields (quicklaunch.frameworks._torch_abi)."},
    {"_torch_direct_keys", torch_direct_keys, METH_NOARGS,
     "The torch dispatch key sets whose tensors are read without a call."},
    {"_stub_tls_offset", stub_tls_offset, METH_NOARGS,
     "The host stubs' launch record: its offset from the thread pointer (0: none)."},
    {"_set_capture_hook", set_capture_hook, METH_O,
     "Installs the graph recorder (None removes it); returns the previous one."},
    {"_set_trace_hook", set_trace_hook, METH_O,
     "Set the launch trace hook (None: off); returns the previous one."},
    {"_register_errors", register_errors, METH_VARARGS,
     "Register quicklaunch.errors' launch exceptions with the launcher."},
    {NULL}};

static struct PyModuleDef launch_module = {
    PyModuleDef_HEAD_INIT, "quicklaunch._launch",
    "The fast launch path: KernelCore, Launcher and Buffer base types.", -1,
    module_methods};

PyMODINIT_FUNC PyInit__launch(void) {
    import_array();
    LaunchError = Py_NewRef(PyExc_RuntimeError);
    LaunchTypeError = Py_NewRef(PyExc_TypeError);
    LaunchValueError = Py_NewRef(PyExc_ValueError);
    LaunchOverflowError = Py_NewRef(PyExc_OverflowError);
    if (PyType_Ready(&KernelCoreType) < 0 || PyType_Ready(&LauncherType) < 0 ||
        PyType_Ready(&BufferBaseType) < 0 || PyType_Ready(&TextureBaseType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&launch_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "KernelCore", (PyObject *)&KernelCoreType) < 0 ||
        PyModule_AddObjectRef(m, "Launcher", (PyObject *)&LauncherType) < 0 ||
        PyModule_AddObjectRef(m, "Buffer", (PyObject *)&BufferBaseType) < 0 ||
        PyModule_AddObjectRef(m, "TextureBase", (PyObject *)&TextureBaseType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PARAMS", QL_MAX_PARAMS) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PARAM_BYTES", QL_MAX_PARAM_BYTES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

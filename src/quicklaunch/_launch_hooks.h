/* quicklaunch._launch: the hooks of the slow path. While ql.trace records
 * or ql.graph captures, the fast path's one test of slow_hooks sends a
 * launch here: traced (timed, then reported) or handed to the recorder.
 * Included once, by _launch.c, before the fast path (do_launch) that calls
 * it; the setters are module functions (_set_trace_hook, _set_capture_hook).
 * Nothing here runs while no hook is set. */

/* ql.trace: a callable while a trace is recording, else NULL. Tracing off
 * costs the launch one never-taken branch. */
static PyObject *trace_hook;

/* ql.graph: a callable while a graph is being recorded, else NULL. It gets
 * (kernel, grid, block, shared, stream, parameter block bytes, args) and
 * returns True when it recorded the launch (which then does not run). */
static PyObject *capture_hook;

/* trace_hook or capture_hook: the one flag the fast path tests. */
static PyObject *slow_hooks;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A launch while tracing: timed, then reported to the hook (whose errors
 * are reported as unraisable: tracing never breaks a launch). */
static __attribute__((noinline, cold)) int traced_launch(
    KernelCore *k, const uint32_t *grid, const uint32_t *block, uint32_t shared, void *stream,
    int release_gil, void **ptrs, PyObject *const *args, Py_ssize_t nargs) {
    int status;
    uint64_t t0 = now_ns();
    if (release_gil) {
        Py_BEGIN_ALLOW_THREADS
        status = k->launch(k->func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                           shared, stream, ptrs, NULL);
        Py_END_ALLOW_THREADS
    } else {
        status = k->launch(k->func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                           shared, stream, ptrs, NULL);
    }
    uint64_t t1 = now_ns();
    PyObject *hook = trace_hook;
    if (hook) {
        Py_INCREF(hook);
        PyObject *argt = PyTuple_New(nargs);
        for (Py_ssize_t i = 0; argt && i < nargs; ++i)
            PyTuple_SET_ITEM(argt, i, Py_NewRef(args[i]));
        PyObject *r = argt ? PyObject_CallFunction(
            hook, "O(III)(III)IKNKKi", (PyObject *)k, grid[0], grid[1], grid[2], block[0],
            block[1], block[2], shared, (unsigned long long)(uintptr_t)stream, argt,
            (unsigned long long)t0, (unsigned long long)(t1 - t0), status) : NULL;
        if (!r) PyErr_WriteUnraisable(hook);
        Py_XDECREF(r);
        Py_DECREF(hook);
    }
    return status;
}

/* While a graph records: hand the launch to the recorder. Returns 1 if it
 * took the launch, 0 if the launch should run, -1 on error. */
static __attribute__((noinline, cold)) int capture_launch(
    KernelCore *k, const uint32_t *grid, const uint32_t *block, uint32_t shared, void *stream,
    const char *params, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *hook = capture_hook;
    Py_INCREF(hook);
    PyObject *argt = PyTuple_New(nargs);
    for (Py_ssize_t i = 0; argt && i < nargs; ++i) PyTuple_SET_ITEM(argt, i, Py_NewRef(args[i]));
    PyObject *r = argt ? PyObject_CallFunction(
        hook, "O(III)(III)IKy#N", (PyObject *)k, grid[0], grid[1], grid[2], block[0], block[1],
        block[2], shared, (unsigned long long)(uintptr_t)stream, params,
        (Py_ssize_t)k->param_bytes, argt) : NULL;
    Py_DECREF(hook);
    if (!r) return -1;
    int took = PyObject_IsTrue(r);
    Py_DECREF(r);
    return took;
}

/* ------------------------------------------------------------ setters */

static void update_slow_hooks(void) {
    slow_hooks = trace_hook ? trace_hook : capture_hook;
}

static PyObject *set_capture_hook(PyObject *m, PyObject *hook) {
    PyObject *old = capture_hook;
    capture_hook = hook == Py_None ? NULL : Py_NewRef(hook);
    update_slow_hooks();
    if (old) return old; /* the previous hook, to restore when this capture ends */
    Py_RETURN_NONE;
}

static PyObject *set_trace_hook(PyObject *m, PyObject *hook) {
    PyObject *old = trace_hook;
    trace_hook = hook == Py_None ? NULL : Py_NewRef(hook);
    update_slow_hooks();
    if (old) return old; /* the previous hook, so traces can nest */
    Py_RETURN_NONE;
}

/* quicklaunch._launch: what every part of the launcher shares. The limits
 * of a parameter block, the three object structs (KernelCore, Launcher,
 * BufferBase), the launch exceptions and the messages built from them, and
 * the two helpers every reader of pointer arguments uses (pack_ctx, which
 * pins what a launch borrows, and address_from_int).
 *
 * The parts of the one translation unit, each using only those before it:
 *   _launch_core.h      this file
 *   _launch_buffer.h    the Buffer base type
 *   _launch_elements.h  element types of pointer arguments
 *   _launch_interop.h   GPU kernels' pointers from other libraries' arrays;
 *                       DLPack capsules of ql buffers
 *   _launch_pointers.h  pointers from every other source (ints, ctypes, the
 *                       buffer protocol, __array_interface__)
 *   _launch_general.h   the general pass over one argument (pack_one):
 *                       every kind, every input, every error
 *   _launch_hooks.h     ql.trace and ql.graph's hooks (the slow path)
 *   _launch.c           the fast path: packing, the launch; and, at its
 *                       end, the module
 *   _launch_launcher.h  the Launcher type (its call path is in _launch.c)
 *   _launch_config.h    launch configurations, make_launcher
 *   _launch_types.h     the KernelCore type
 * Included once, by _launch.c (and by the part headers, for their own
 * reading: the guard keeps it once). */
#ifndef QL_LAUNCH_CORE_H
#define QL_LAUNCH_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <float.h>
#include <time.h>

#include "_convert.h"
#include "kinds.h" /* the type codes: enum ql_kind */
/* struct ql_pyargs: what a CPU module's direct entry reads of the arguments */
#include "ql_pyargs.h"

#define QL_MAX_PARAMS 512
#define QL_MAX_PARAM_BYTES 4096
#define QL_CONFIG_CACHE_MAX 256

typedef int (*ql_launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                            void *stream, void **params, void **extra);

/* A backend's planned launch (optional): `plan` checks a configuration once
 * and fills a Launcher's plan bytes, returning the function that launches
 * it with only the parameters per call (NULL: the configuration takes the
 * general entry). The CPU device's ql_cpu_plan_launch is one. */
typedef int (*ql_planned_fn)(const void *plan, void **params);
typedef ql_planned_fn (*ql_plan_fn)(void *f, const unsigned dims[6], unsigned shared,
                                    void *stream, void *plan, unsigned cap);
#define QL_PLAN_BYTES 64

/* A backend's direct launch of a plan (optional; the CPU device's, for one
 * small block of a kernel whose module reads its own arguments): called
 * with the Python argument objects themselves and the kernel's ql_pyargs.
 * Returns 0 once launched, a backend status when the launch failed, or
 * QL_NOT_DIRECT (ql_pyargs.h), having run nothing, when the launch takes
 * the parameter block after all. `plan_direct` answers it for a plan and
 * its planned function, or NULL. */
typedef int (*ql_direct_fn)(const void *plan, PyObject *const *args, const ql_pyargs *py);
typedef ql_direct_fn (*ql_plan_direct_fn)(const void *plan, ql_planned_fn planned);

/* Exceptions, registered from quicklaunch.errors at import. */
static PyObject *LaunchError, *LaunchTypeError, *LaunchValueError, *LaunchOverflowError;

/* A typed pointer parameter's element (quicklaunch/elements.py): NumPy's
 * kind letter ('f', 'i', 'u', 'b') or 'B' (bfloat16), the scalar's bytes,
 * lanes > 1 for vector types. kind 0: any element (void *, char *, ...). */
typedef struct { char kind; uint8_t lanes; uint16_t size; } ql_elem;

/* A parameter's memo of the torch tensor it accepted last: st, 1 + its
 * ScalarType (0: none yet); word, its dtype, device and contiguity bytes as
 * the TensorImpl holds them, with the element size in the top byte (0:
 * none; _launch_torch.h's window). */
typedef struct {
    uint64_t word;
    signed char st;
} ql_torch_memo;

typedef struct {
    PyObject_HEAD
    ql_launch_fn launch;
    ql_plan_fn plan;          /* the backend's planner, or NULL */
    ql_plan_direct_fn plan_direct; /* its direct launches' planner, or NULL */
    void *func;
    uint32_t nparams, param_bytes;
    uint8_t codes[QL_MAX_PARAMS];
    uint16_t sizes[QL_MAX_PARAMS];
    uint16_t offsets[QL_MAX_PARAMS];
    int device_id;            /* the tag of this device's ql buffers (opaque) */
    int host_memory;          /* NumPy arrays and host buffers are device memory */
    PyTypeObject *host_array; /* &PyArray_Type when host_memory, else NULL: the fast
                                 path's one type compare for NumPy arrays */
    uint64_t inline_threads;  /* keep the GIL for launches this small */
    uint32_t max_block[3], max_grid[3], max_threads, max_shared;
    /* The device as DLPack names it (kDLCUDA 2, ordinal 0, ...): what other
     * libraries' arrays are checked against (_launch_interop.h). */
    int32_t dlpack_type, dlpack_ordinal;
    PyObject *name, *param_names, *device_name, *error_hook;
    PyObject *configs;        /* dict: subscript key -> Launcher */
    PyObject *last_key, *last_launcher;
    /* k.launch(grid, block, ...) remembers the last grid and block objects
     * it validated; the same objects again (constants, small ints) skip
     * parsing and validation. */
    PyObject *direct_grid, *direct_block;
    uint32_t direct_dims[6];
    /* The trailing parameters' default arguments (a tuple, or NULL): read
     * only when a launch passes too few arguments (fill_defaults). An
     * exception instance in it is a default that could not be evaluated. */
    PyObject *defaults;
    /* Pointer element types (_launch_elements.h): per parameter, what it
     * expects (NULL: any, for every parameter), the (expect text, NumPy
     * spelling) its messages use, and the NumPy dtype it accepted last
     * (a strong reference; the fast path's one compare). */
    ql_elem *elems;
    PyObject *elem_texts;
    PyObject **elem_ok;
    /* per parameter, what a torch tensor it accepted last looked like: a
     * repeat is then one compare too (_launch_torch.h) */
    ql_torch_memo *torch_ok;
    /* what a direct launch reads (its dtype_ok is elem_ok) */
    ql_pyargs pyargs;
} KernelCore;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    KernelCore *kernel;
    uint32_t grid[3], block[3], shared;
    void *stream;
    PyObject *stream_obj;
    int release_gil;
    ql_planned_fn planned;  /* the backend's plan of this configuration, or NULL */
    ql_direct_fn direct;    /* the plan's direct launch, or NULL */
    /* An argument type the direct launch never reads (not an exact ndarray,
     * float or int), met at parameter skip_at: while that parameter's
     * argument is of this type, calls go straight to the planned function
     * (a refusal costs the runtime's guard). A strong reference, or NULL. */
    PyTypeObject *skip_type;
    uint32_t skip_at;
    _Alignas(16) char plan[QL_PLAN_BYTES];
    PyMethodDef def;        /* the bound launch function's definition, named */
} Launcher;                 /* after the kernel (see make_launcher) */

typedef struct {
    PyObject_HEAD
    uintptr_t ptr;
    Py_ssize_t nbytes;
    int device_id;
    char readonly;          /* a char: exposed as T_BOOL */
    PyObject *owner;
    PyObject *dtype;        /* a NumPy dtype, or NULL: untyped memory */
} BufferBase;

/* ---------------------------------------------------------------- errors */
static int arg_error(KernelCore *k, uint32_t i, PyObject *exc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *detail = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (detail) {
        PyErr_Format(exc, "kernel '%U', parameter %u '%U': %U", k->name, i + 1,
                     PyTuple_GET_ITEM(k->param_names, i), detail);
        Py_DECREF(detail);
    }
    return -1;
}

/* A kind as messages show it: its C spelling where kinds.h gives one, else
 * its name; "?" for a code kinds.h does not have. */
static const char *kind_text(uint8_t code) {
#define QL_NAME_ROW(tag, code, name) [code] = name,
#define QL_SPELLING_ROW(tag, text) [QL_KIND_##tag] = text,
    static const char *const names[QL_KIND_COUNT] = {QL_KINDS(QL_NAME_ROW)};
    static const char *const spellings[QL_KIND_COUNT] = {QL_KIND_C_SPELLINGS(QL_SPELLING_ROW)};
#undef QL_NAME_ROW
#undef QL_SPELLING_ROW
    if (code >= QL_KIND_COUNT) return "?";
    return spellings[code] ? spellings[code] : names[code] ? names[code] : "?";
}

static int wrong_kind(KernelCore *k, uint32_t i, PyObject *o, const char *wanted) {
    return arg_error(k, i, LaunchTypeError, "expects %s (C type %s), got %.100s",
                     wanted, kind_text(k->codes[i]), Py_TYPE(o)->tp_name);
}

/* ------------------------------------------------------- pointer helpers */
/* What the slow path must keep until the launch returns: buffer views of
 * buffer-protocol arguments (a bytearray cannot be resized while exported),
 * or, when that is not enough, the GIL itself. */
#define QL_MAX_VIEWS 8
typedef struct {
    Py_buffer views[QL_MAX_VIEWS];
    int nviews;
    int hold_gil;
} pack_ctx;

static void release_views(pack_ctx *c) {
    while (c->nviews > 0) PyBuffer_Release(&c->views[--c->nviews]);
}

/* An address from a Python int (or __index__ object): 0 .. 2**64 - 1. */
static int address_from_int(PyObject *o, void **out) {
    PyObject *idx = PyNumber_Index(o);
    if (!idx) return -1;
    unsigned long long p = PyLong_AsUnsignedLongLong(idx);
    Py_DECREF(idx);
    if (p == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (void *)(uintptr_t)p;
    return 0;
}

#endif /* QL_LAUNCH_CORE_H */

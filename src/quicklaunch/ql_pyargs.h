/* What a CPU kernel module's direct entry reads of a launch's Python
 * arguments, and where (ql_cpu_abi.h's ql_cpu_direct_fn).
 *
 * A planned one-block CPU launch of a kernel whose parameters are all
 * pointers and 32- or 64-bit scalars hands the Python argument objects
 * straight to the kernel's module, which checks and reads each one inline,
 * as its own types, and runs the block: no parameter block, no pointer
 * array, no loop over type codes. Only what the launcher's fast pass
 * accepts is read there (a C-contiguous NumPy array of the dtype the
 * parameter accepted last, a Python float, a one-digit Python int); any
 * other argument makes the entry return before it runs anything, and the
 * launcher takes its usual path, with every check and message.
 *
 * Modules are built without Python's headers, so the layout is spelled out
 * here; _launch.c checks every offset against the headers it is built with
 * and enables the direct entry only where all of them hold.
 *
 * Plain C, included by the launcher (_launch_core.h) and by the CPU ABI
 * (backends/cpu/include/ql_cpu_abi.h, by its path relative to that file,
 * as kinds.h is). */
#ifndef QL_PYARGS_H
#define QL_PYARGS_H

#include <stdint.h>

/* Byte offsets from an object's address. */
#define QL_PY_TYPE_AT 8        /* PyObject.ob_type */
#define QL_PY_FLOAT_AT 16      /* PyFloatObject.ob_fval */
#define QL_PY_LONG_SIZE_AT 16  /* PyLongObject: ob_size (up to 3.11), lv_tag (3.12 on) */
#define QL_PY_LONG_DIGIT_AT 24 /* its first 30-bit digit */
#define QL_NP_DATA_AT 16       /* PyArrayObject_fields.data */
#define QL_NP_DESCR_AT 56      /* .descr */
#define QL_NP_FLAGS_AT 64      /* .flags (an int) */
#define QL_NP_C_CONTIGUOUS 0x0001
#define QL_NP_WRITEABLE 0x0400

/* How a Python int keeps its size and sign. */
enum ql_py_long_layout {
    QL_PY_LONG_OB_SIZE = 0, /* ob_size: digits, negative for a negative int (to 3.11) */
    QL_PY_LONG_LV_TAG = 1   /* lv_tag: digits << 3 | sign (0 +, 1 zero, 2 -) (3.12 on) */
};

/* What a direct launch answers, having run nothing, when the launch takes
 * the parameter block after all (an argument its module does not read, a
 * thread's first launch, queued stream work); otherwise 0 or a CUDA-style
 * status. Shared by the runtime, which answers it, and the launcher. */
#define QL_NOT_DIRECT (-1)

/* The launcher's part of a direct launch: the exact types it reads, and per
 * parameter the NumPy dtype that parameter accepted last (a pointer
 * parameter's argument must have it; the launcher's general pass checks a
 * new dtype against the parameter's element type and then remembers it). */
typedef struct ql_pyargs {
    const void *array_type;      /* &PyArray_Type */
    const void *float_type;      /* &PyFloat_Type */
    const void *long_type;       /* &PyLong_Type */
    uint32_t long_layout;        /* enum ql_py_long_layout */
    uint32_t reserved;
    const void *const *dtype_ok; /* [nparams]: PyArray_Descr *, or NULL */
} ql_pyargs;

#endif

/* The contract between a compiled CPU kernel module and the CPU runtime.
 *
 * A kernel module (a shared object built from the user's source, the CUDA
 * shim and ql_cpu_export.h) exports one table, `__ql_module`. The runtime
 * receives a `const ql_cpu_kernel *` as the `f` argument of its
 * cuLaunchKernel-shaped entry and calls `run` for ranges of blocks, from
 * several worker threads at once. Neither side links against the other.
 *
 * Plain C, included by C (the runtime) and C++ (kernel modules). */
#ifndef QL_CPU_ABI_H
#define QL_CPU_ABI_H

#include <stdint.h>

/* enum ql_kind, the parameter kinds: the package's one table (it sits
 * beside this package's _launch.c, three directories up). Found by its path
 * relative to this file, so no include directory a user passes can stand
 * in for it. */
#include "../../../kinds.h"
/* struct ql_pyargs, what a direct entry reads (below): the launcher's
 * header beside kinds.h, found the same way. */
#include "../../../ql_pyargs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QL_CPU_ABI_VERSION 6u

/* One parameter as the compiler reflects it; `kind` is an enum ql_kind. */
typedef struct ql_cpu_param {
    uint32_t size;
    uint32_t align;
    uint32_t kind;
} ql_cpu_param;

/* Status codes a kernel module reports (CUDA's numbering). */
enum ql_cpu_status {
    QL_CPU_OK = 0,
    QL_CPU_ERROR_ILLEGAL_ADDRESS = 700, /* SIGSEGV or SIGBUS in a kernel */
    QL_CPU_ERROR_ASSERT = 710,         /* a device-side assert failed */
    QL_CPU_ERROR_ILLEGAL_INSTRUCTION = 715, /* SIGILL in a kernel */
    QL_CPU_ERROR_MISALIGNED = 716,     /* SIGBUS for a misaligned access */
    QL_CPU_ERROR_LAUNCH_TIMEOUT = 702, /* ran past its timeout and was stopped */
    QL_CPU_ERROR_LAUNCH_FAILED = 719,  /* deadlock, bad warp mask, abort(), ... */
    QL_CPU_ERROR_INTERRUPTED = 9001,   /* stopped by SIGINT (Ctrl-C); no CUDA status */
    QL_CPU_ERROR_OUT_OF_MEMORY = 2
};

/* The first error of a launch, written by the kernel module (first writer
 * wins), read by the runtime once the launch is over. */
typedef struct ql_cpu_error {
    int code;                /* atomic: 0 until an error is claimed */
    int ready;               /* atomic: 1 once message is complete */
    char message[1024];
} ql_cpu_error;

/* The grid barrier of a cooperative launch (ql_cpu_launch_cooperative),
 * which runs every block at once, each on a thread of its own. A block whose
 * live threads have all reached grid.sync() calls `sync` from the thread
 * that runs it; it returns when every block of the grid has arrived
 * (QL_GRID_RELEASED), or QL_GRID_DEADLOCK when it never can (blocks have
 * exited without reaching it; `waiting` and `exited` say how many blocks are
 * in each state), or QL_GRID_FAILED when the launch has failed elsewhere
 * (the error is already recorded). The runtime owns `state`. */
enum { QL_GRID_RELEASED = 0, QL_GRID_DEADLOCK = 1, QL_GRID_FAILED = 2 };
typedef struct ql_cpu_grid {
    void *state;
    int (*sync)(const struct ql_cpu_grid *g, uint32_t *waiting, uint32_t *exited);
} ql_cpu_grid;

typedef struct ql_cpu_dims {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;   /* dynamic shared memory of the launch */
    uint32_t reserved;
    ql_cpu_error *error;     /* where the module reports a failure */
    const ql_cpu_grid *grid_sync; /* a cooperative launch's grid barrier, else 0 */
} ql_cpu_dims;

/* What the runtime's fault handler asks a module about a fault in one of
 * its kernels: the faulting CUDA thread's coordinates (the module's own
 * thread-local blockIdx and threadIdx), and whether the address lies in a
 * fiber stack's guard page. The module also drops the block it was running,
 * since the runtime resumes past it. Called from a signal handler. */
typedef struct ql_cpu_fault {
    uintptr_t address;        /* in: the address that faulted */
    uint32_t block[3];        /* out: blockIdx */
    uint32_t thread[3];       /* out: threadIdx (QL_CPU_UNKNOWN where not kept) */
    uint32_t fiber_overflow;  /* out: 1 if address is in a fiber stack's guard page */
    uint32_t fiber_stack;     /* out: bytes per fiber stack (tier 2), else 0 */
    uint32_t at_call;         /* in: 1 when the kernel stopped itself by a call
                                 (abort, exit): the coordinates are stored then */
} ql_cpu_fault;

/* A coordinate the module does not know (threadIdx.x in optimised tier-1
 * builds, see ql_cpu_export.h). */
#define QL_CPU_UNKNOWN 0xffffffffu

typedef void (*ql_cpu_fault_fn)(ql_cpu_fault *fault);

/* The runtime's private realtime signal, SIGRTMAX minus this: it stops
 * kernels (Ctrl-C, timeouts; see the runtime's interrupt.h), and a module
 * sends it to its own thread, queued with a ql_cpu_device_exit as the
 * value, when a kernel calls abort(), exit(), _Exit() or quick_exit()
 * (ql_launch_state.h): the runtime then fails the launch as for __trap(). */
#define QL_CPU_STOP_SIGNAL_FROM_MAX 3
#define QL_CPU_EXIT_MAGIC 0x51455854u
typedef struct ql_cpu_device_exit {
    uint32_t magic;           /* QL_CPU_EXIT_MAGIC */
    int status;               /* exit's status; -1 for abort() */
    const char *what;         /* "abort() called", "exit(3) called", ... */
} ql_cpu_device_exit;

/* Runs blocks [first, last) (linear block index, x fastest) of a launch. */
typedef void (*ql_cpu_run_fn)(void **params, const ql_cpu_dims *dims,
                              uint64_t first, uint64_t last);

/* Runs a whole launch of one block of fewer than 32 threads in one row
 * (grid 1x1x1, block bx x 1 x 1, bx < 32), which has not failed yet: what
 * `run(params, dims, 0, 1)` does for it, without the block loop and without
 * run's own frame. The runtime's planned launch calls it directly
 * (ql_cpu_plan_launch checks the shape once), with the plan's dims, whose
 * `error` is NULL: a small entry reads no error record (faults reach the
 * launch's through the runtime's guard). NULL where a launch needs
 * `run`: kernels in tiers 2 and 3, modules that can stop a thread (their run
 * marks where an assert returns to), debug and memcheck builds. */
typedef void (*ql_cpu_small_fn)(void **params, const ql_cpu_dims *dims);

/* The small entry's launch read from the Python argument objects themselves
 * (`args`, one per parameter; ql_pyargs.h): each is checked and read as its
 * parameter's type, inline, and the block runs as `small` runs it. Returns
 * 1 once it ran, or 0, having run nothing, when an argument is not one it
 * reads (the launcher then packs the arguments and calls `small` or `run`).
 * Called under the runtime's fault guard, as `small` is. NULL where `small`
 * is, and for kernels with a parameter of another kind (structs, bool,
 * 8- and 16-bit ints, half types): those always take the parameter block. */
typedef int (*ql_cpu_direct_fn)(void *const *args, const ql_pyargs *py,
                                const ql_cpu_dims *dims);

typedef struct ql_cpu_kernel {
    const char *expr;            /* the name or name expression it was built from */
    void *function;              /* the kernel function itself (for its symbol name) */
    ql_cpu_run_fn run;
    uint32_t nparams;
    uint32_t tier;               /* 1: a loop over threads; 2: needs fibers */
    const ql_cpu_param *params;
    ql_cpu_fault_fn fault;       /* see ql_cpu_fault */
    ql_cpu_small_fn small;       /* see ql_cpu_small_fn; may be NULL */
    ql_cpu_direct_fn direct;     /* see ql_cpu_direct_fn; may be NULL */
} ql_cpu_kernel;

typedef struct ql_cpu_module {
    uint32_t abi_version;
    uint32_t nkernels;
    const ql_cpu_kernel *kernels;
} ql_cpu_module;

#ifdef __cplusplus
}
#endif
#endif

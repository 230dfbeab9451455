/* Faults in kernels on the CPU device: a SIGSEGV, SIGBUS, SIGFPE or SIGILL
 * raised while a kernel runs becomes a launch error naming the kernel's
 * thread and the address, and the thread that ran the kernel carries on.
 *
 * Every call of a kernel module's run function runs under a recovery point:
 * ql_run_guarded marks one (__builtin_setjmp: three stores) and publishes it
 * in thread-local storage; a graph replay (work.c's run_graph) marks one for
 * a whole run of small launches. The handler (fault.c) finds it there, records
 * the error in the launch's error record and jumps back to it; a signal on a
 * thread that is not running a kernel goes to whatever handler was installed
 * before quicklaunch's, or kills the process as it would have. */
#ifndef QL_CPU_FAULT_H
#define QL_CPU_FAULT_H

#include <stdint.h>

#include "include/ql_cpu_abi.h"

typedef struct ql_guard {
    void *jump[5];                   /* __builtin_setjmp's buffer */
    const ql_cpu_kernel *kernel;
    ql_cpu_error *error;             /* the launch's error record */
} ql_guard;

/* Initial-exec TLS: a plain %fs-relative access, no __tls_get_addr call. A
 * dlopen'ed library gets it from the C library's small static TLS reserve,
 * so the runtime's thread-local state stays a few words (larger per-thread
 * data, such as the last error's message, is allocated). */
#define QL_TLS __attribute__((tls_model("initial-exec")))
extern __thread ql_guard *ql_active_guard QL_TLS;
extern __thread int ql_thread_ready QL_TLS;

/* Once per thread that runs kernels (workers and launching threads): an
 * alternate signal stack (a stack overflow's handler needs one), the
 * thread's stack bounds, and, the first time in the process, the handlers. */
void ql_fault_setup_thread(void);

/* kernel->run(params, dims, first, last), with faults recovered: a macro,
 * so that a caller on the hot path (runtime.c's planned launch) marks the
 * recovery point in its own frame (GCC does not inline a function that
 * calls __builtin_setjmp). */
#define QL_RUN_GUARDED(k, params, d, first, last)                      \
    QL_CALL_GUARDED(k, (d)->error, (k)->run((params), (d), (first), (last)))

/* `call`, a call of kernel k's code (its run or its small entry), with
 * faults recovered and reported in the error record `err`. */
#define QL_CALL_GUARDED(k, err, call)                                   \
    do {                                                                \
        ql_guard ql_g_;                                                 \
        ql_g_.kernel = (k);                                             \
        ql_g_.error = (err);                                            \
        if (__builtin_setjmp(ql_g_.jump) == 0) {                        \
            ql_active_guard = &ql_g_;                                   \
            call;                                                       \
        }                                                               \
        ql_active_guard = 0;                                            \
    } while (0)

static __attribute__((noinline, unused)) void ql_run_guarded(const ql_cpu_kernel *k,
                                                            void **params,
                                                            const ql_cpu_dims *d,
                                                            uint64_t first, uint64_t last) {
    QL_RUN_GUARDED(k, params, d, first, last);
}

#endif

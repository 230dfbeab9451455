/* The bottom of the CPU runtime: the worker pool and launches run now, on
 * the calling thread and, when large, on the pool (pool.c), and each
 * thread's last error. It calls nothing else in the runtime but the fault
 * handler (fault.h); streams, graphs and the launch entry call it.
 * Internal to the runtime library. */
#ifndef QL_CPU_POOL_H
#define QL_CPU_POOL_H

#include <stdint.h>

#include "fault.h"
#include "include/ql_cpu_abi.h"

#define QL_HIDDEN __attribute__((visibility("hidden")))
#define QL_EXPORT __attribute__((visibility("default")))

/* Statuses of the runtime's own (CUDA's numbering; a kernel's failures are
 * ql_cpu_abi.h's enum ql_cpu_status). */
enum {
    QL_CPU_SUCCESS = 0,
    QL_CPU_ERROR_INVALID_VALUE = 1,
    QL_CPU_ERROR_INVALID_HANDLE = 400,
    QL_CPU_ERROR_NOT_SUPPORTED = 801,
};

/* Launches with at most this many CUDA threads run on the caller. */
extern uint64_t ql_cpu_inline_threads;

/* Blocks [0, nblocks) of a launch spread over the pool, the caller taking
 * part (or all on the caller, when another launch holds the pool). */
QL_HIDDEN int ql_pool_run(const ql_cpu_kernel *k, void **params, const ql_cpu_dims *d,
                          uint64_t nblocks);

/* A launch whose error record `e` was claimed: waits for the message,
 * keeps it as the thread's last error and returns the status. */
QL_HIDDEN int ql_cpu_failed_launch(const ql_cpu_error *e);

/* The calling thread's last-error message (ql_cpu_last_error exports it). */
QL_HIDDEN void ql_cpu_set_last_error(const char *message);
QL_HIDDEN const char *ql_cpu_last_error_text(void);

/* Whether a launch of `nblocks` blocks of `per_block` threads runs on the
 * calling thread: a single block, or at most ql_cpu_inline_threads CUDA
 * threads. The product can exceed 2**64 (it saturates); no division here:
 * it would cost more than the rest of a small launch. */
static inline int ql_runs_inline(uint64_t nblocks, uint64_t per_block) {
    uint64_t threads;
    if (__builtin_mul_overflow(nblocks, per_block, &threads)) threads = UINT64_MAX;
    return nblocks == 1 || threads <= ql_cpu_inline_threads;
}

/* A launch, now, on the calling thread (and the pool when it is large).
 * Inline: it is the whole of a small launch through ql_cpu_launch. */
static inline int ql_cpu_launch_now(const ql_cpu_kernel *k, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                    unsigned shared_bytes, void **params) {
    if (!gx || !gy || !gz || !bx || !by || !bz) return QL_CPU_ERROR_INVALID_VALUE;
    if (__builtin_expect(!ql_thread_ready, 0)) ql_fault_setup_thread();
    ql_cpu_error err;
    err.code = err.ready = 0;
    ql_cpu_dims d = {{gx, gy, gz}, {bx, by, bz}, shared_bytes, 0, &err};
    const uint64_t nblocks = (uint64_t)gx * gy * gz;
    if (ql_runs_inline(nblocks, (uint64_t)bx * by * bz))
        ql_run_guarded(k, params, &d, 0, nblocks);
    else
        ql_pool_run(k, params, &d, nblocks);
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

/* The same, with the grid and block as one array (what streams keep). */
QL_HIDDEN int ql_cpu_launch_sync(const ql_cpu_kernel *k, const unsigned dims[6],
                                 unsigned shared, void **params);

#endif

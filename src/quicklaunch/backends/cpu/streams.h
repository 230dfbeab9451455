/* Streams, events and graphs of the CPU device (streams.c), and the parts of
 * runtime.c they use. Internal to the runtime library. */
#ifndef QL_CPU_STREAMS_H
#define QL_CPU_STREAMS_H

#include <stdatomic.h>
#include <stdint.h>

#include "include/ql_cpu_abi.h"

#define QL_HIDDEN __attribute__((visibility("hidden")))

/* Entries queued on any stream and not yet finished. A launch on the
 * default stream waits for it to reach zero first (CUDA's legacy default
 * stream); the fast path reads it once per launch. */
extern _Atomic uint64_t ql_async_pending QL_HIDDEN;

/* A launch run now on the calling thread and the pool (runtime.c). */
QL_HIDDEN int ql_cpu_launch_sync(const ql_cpu_kernel *k, const unsigned dims[6],
                                 unsigned shared, void **params);

/* Launches with at most this many CUDA threads run on the caller (runtime.c). */
extern uint64_t ql_cpu_inline_threads;

/* The calling thread's last-error message (runtime.c). */
QL_HIDDEN void ql_cpu_set_last_error(const char *message);
QL_HIDDEN const char *ql_cpu_last_error_text(void);

/* The slow half of ql_cpu_launch: a launch on a stream, or on the default
 * stream while streams have work queued. */
QL_HIDDEN int ql_cpu_launch_queued(const ql_cpu_kernel *k, const unsigned dims[6],
                                   unsigned shared, void *stream, void **params);

#endif

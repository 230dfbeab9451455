/* The CPU device's launch entry, with the shape of cuLaunchKernel: what the
 * C launcher calls for every CPU kernel launch.
 *
 * The runtime library is plain C with no Python dependency: the extension
 * loads it with ctypes and hands `ql_cpu_launch`'s address to the C
 * launcher, and the benchmark's C baseline dlopens the very same file.
 *
 * Calls go one way, from this entry down:
 *   runtime.c  ->  streams.c  ->  work.c  ->  pool.c  ->  fault.c
 *   (events.c and graphs.c, the rest of the stream API, sit beside
 *   streams.c and call it, work.c and pool.c.)
 * A launch on the default stream with nothing queued anywhere runs now
 * (pool.h, inline here); any other goes to the streams.
 *
 * A configured launcher (k[grid, block]) asks once for a plan of its
 * configuration (ql_cpu_plan_launch) and then launches it through the
 * function that returns (launch_planned): the checks and sizes that depend
 * only on the configuration are done once, not per call. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "pool.h"
#include "streams.h"

/* The backend entry, with cuLaunchKernel's shape. `stream` is 0 for the
 * default stream or a handle from ql_cpu_stream_create. */
QL_EXPORT int ql_cpu_launch(void *f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz,
                            unsigned shared_bytes, void *stream, void **params,
                            void **extra) {
    const ql_cpu_kernel *k = (const ql_cpu_kernel *)f;
    if (!k || !k->run) return QL_CPU_ERROR_INVALID_HANDLE;
    if (extra) return QL_CPU_ERROR_NOT_SUPPORTED;
    if (__builtin_expect(stream != NULL ||
                             atomic_load_explicit(&ql_async_pending, memory_order_relaxed),
                         0)) {
        const unsigned dims[6] = {gx, gy, gz, bx, by, bz};
        if (!gx || !gy || !gz || !bx || !by || !bz) return QL_CPU_ERROR_INVALID_VALUE;
        return ql_cpu_launch_queued(k, dims, shared_bytes, stream, params);
    }
    return ql_cpu_launch_now(k, gx, gy, gz, bx, by, bz, shared_bytes, params);
}

/* ------------------------------------------------------------ planned */
/* A configuration checked once: small enough to run on the caller, on the
 * default stream. What a launcher keeps in its plan bytes (opaque there). */
typedef struct ql_cpu_plan {
    const ql_cpu_kernel *kernel;
    uint64_t nblocks;
    ql_cpu_dims dims;        /* error: filled in per launch (a small one has none) */
} ql_cpu_plan;

typedef int (*ql_cpu_planned_fn)(const void *plan, void **params);

/* Launches a plan: the same launch as ql_cpu_launch with the plan's
 * configuration, whose checks and sizes were done by ql_cpu_plan_launch. */
static int launch_planned(const void *plan, void **params) {
    const ql_cpu_plan *p = (const ql_cpu_plan *)plan;
    if (__builtin_expect(atomic_load_explicit(&ql_async_pending, memory_order_relaxed), 0)) {
        const ql_cpu_dims *d = &p->dims; /* streams have work queued: keep the order */
        return ql_cpu_launch((void *)p->kernel, d->grid[0], d->grid[1], d->grid[2],
                             d->block[0], d->block[1], d->block[2], d->shared_bytes, NULL,
                             params, NULL);
    }
    if (__builtin_expect(!ql_thread_ready, 0)) ql_fault_setup_thread();
    ql_cpu_error err;
    err.code = err.ready = 0;
    ql_cpu_dims d = p->dims;
    d.error = &err;
    QL_RUN_GUARDED(p->kernel, params, &d, 0, p->nblocks); /* in this frame: no call */
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

/* A plan of one block of a few threads, of a kernel with a small entry:
 * launch_planned, calling that entry instead of `run`. */
static int launch_planned_small(const void *plan, void **params) {
    const ql_cpu_plan *p = (const ql_cpu_plan *)plan;
    /* streams with work queued, or a thread's first launch: launch_planned
     * handles both (one test here) */
    if (__builtin_expect(atomic_load_explicit(&ql_async_pending, memory_order_relaxed) != 0, 0) ||
        __builtin_expect(!ql_thread_ready, 0))
        return launch_planned(plan, params);
    ql_cpu_error err;
    err.code = err.ready = 0;
    /* the plan's own dims (no error record: a small entry reads none; the
     * guard holds this launch's) */
    QL_CALL_GUARDED(p->kernel, &err, p->kernel->small(params, &p->dims));
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

/* A plan of launch_planned_small's shape whose kernel has a direct entry:
 * the same launch, its arguments read by the module from the Python objects
 * (ql_cpu_direct_fn). Returns QL_NOT_DIRECT (ql_pyargs.h), having run
 * nothing, when the module does not read one of them, when streams have
 * work queued, or on a thread's first launch: the launcher then takes
 * launch_planned_small with a parameter block, which handles each. */
static int launch_planned_direct(const void *plan, void *const *args, const ql_pyargs *py) {
    const ql_cpu_plan *p = (const ql_cpu_plan *)plan;
    if (__builtin_expect(atomic_load_explicit(&ql_async_pending, memory_order_relaxed) != 0, 0) ||
        __builtin_expect(!ql_thread_ready, 0))
        return QL_NOT_DIRECT;
    ql_cpu_error err;
    err.code = err.ready = 0;
    int ran = 0; /* read only when nothing faulted (no longjmp came back) */
    QL_CALL_GUARDED(p->kernel, &err, ran = p->kernel->direct(args, py, &p->dims));
    if (__builtin_expect(err.code != 0, 0)) return ql_cpu_failed_launch(&err);
    return ran ? QL_CPU_SUCCESS : QL_NOT_DIRECT;
}

typedef int (*ql_cpu_direct_planned_fn)(const void *plan, void *const *args,
                                        const ql_pyargs *py);

/* The direct launch of a plan from ql_cpu_plan_launch (`planned`, what it
 * returned), or NULL when its launches take the parameter block: a plan
 * that is not of one small block, or a kernel without a direct entry. */
QL_EXPORT ql_cpu_direct_planned_fn ql_cpu_plan_direct(const void *plan,
                                                      ql_cpu_planned_fn planned) {
    const ql_cpu_plan *p = (const ql_cpu_plan *)plan;
    if (!p || planned != launch_planned_small || !p->kernel->direct) return NULL;
    return launch_planned_direct;
}

/* Plans a launch of `f` with dims (grid x, y, z, block x, y, z): fills
 * `plan` (`cap` bytes) and returns the function that launches it, or NULL
 * when this configuration takes ql_cpu_launch (a stream, a launch for the
 * pool, or a configuration ql_cpu_launch would refuse). */
QL_EXPORT ql_cpu_planned_fn ql_cpu_plan_launch(void *f, const unsigned dims[6],
                                               unsigned shared_bytes, void *stream,
                                               void *plan, unsigned cap) {
    const ql_cpu_kernel *k = (const ql_cpu_kernel *)f;
    if (!k || !k->run || stream || cap < sizeof(ql_cpu_plan) ||
        ((uintptr_t)plan & (_Alignof(ql_cpu_plan) - 1)))
        return NULL;
    for (int i = 0; i < 6; ++i)
        if (!dims[i]) return NULL;
    const uint64_t nblocks = (uint64_t)dims[0] * dims[1] * dims[2];
    if (!ql_runs_inline(nblocks, (uint64_t)dims[3] * dims[4] * dims[5]))
        return NULL; /* the pool's */
    ql_cpu_plan *p = (ql_cpu_plan *)plan;
    memset(p, 0, sizeof *p);
    p->kernel = k;
    p->nblocks = nblocks;
    for (int i = 0; i < 3; ++i) {
        p->dims.grid[i] = dims[i];
        p->dims.block[i] = dims[3 + i];
    }
    p->dims.shared_bytes = shared_bytes;
    if (k->small && nblocks == 1 && dims[3] < 32 && dims[4] == 1 && dims[5] == 1)
        return launch_planned_small;
    return launch_planned;
}

/* The C baseline of every launch benchmark, built by the host C compiler at
 * bench time and loaded into the benchmarking process, so C and Python are
 * measured side by side in one run.
 *
 * Each loop calls a device's cuLaunchKernel-shaped launch entry (the very
 * function quicklaunch's launcher calls: the backend's launch_entry, passed
 * in as an address) with a kernel handle quicklaunch loaded and a parameter
 * block (void *params[]) prepared once in Python: what a C program pays per
 * launch. Asynchronous devices also give a synchronise function, found with
 * ql_bench_symbol in the library their backend launches through (the same
 * loaded instance, so handles and contexts are shared); the CPU needs none
 * (pass NULL). Nothing here includes a device's headers or prints.
 *
 * Every timing returns ns per launch, or -status when the device refused a
 * call (its statuses are positive):
 *
 *   ql_bench_launch_ns     host cost of a launch: batches of `batch` launches
 *                          (one batch when batch <= 0), only the launches
 *                          timed, `sync` after each batch outside the timing
 *                          (so a queue never fills and device time never
 *                          enters the figure)
 *   ql_bench_inflight_ns   `n` launches back to back, then one `sync`, all timed
 *   ql_bench_roundtrip_ns  one launch then `sync`, each time
 *   ql_bench_sync_ns       `sync` with nothing queued
 *   ql_bench_saxpy_ns      a plain single-threaded saxpy pass (the CPU's
 *                          bandwidth baseline) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shared, void *stream,
                         void **params, void **extra);
typedef int (*sync_fn)(void);

static char error_text[512];

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The address of `symbol` in `library` (opened, or found already open), or
 * NULL; ql_bench_error() then says why. */
void *ql_bench_symbol(const char *library, const char *symbol) {
    error_text[0] = '\0';
    void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(error_text, sizeof error_text, "dlopen(%s) failed: %s", library,
                 why ? why : "unknown error");
        return NULL;
    }
    void *fn = dlsym(lib, symbol);
    if (!fn) snprintf(error_text, sizeof error_text, "%s has no %s", library, symbol);
    return fn;
}

const char *ql_bench_error(void) { return error_text; }

/* n launches of one kernel, grid x 1 x 1 by block x 1 x 1, no shared memory,
 * the default stream: 0, or the first failing status. */
static int launches(void *entry, void *func, void **params, unsigned grid, unsigned block,
                    long n) {
    launch_fn launch = (launch_fn)entry;
    for (long i = 0; i < n; ++i) {
        int status = launch(func, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
        if (status) return status;
    }
    return 0;
}

static int sync_now(void *sync) { return sync ? ((sync_fn)sync)() : 0; }

int ql_bench_launch_once(void *entry, void *func, void **params, unsigned grid,
                         unsigned block) {
    return launches(entry, func, params, grid, block, 1);
}

double ql_bench_launch_ns(void *entry, void *sync, void *func, void **params, unsigned grid,
                          unsigned block, long iters, long batch) {
    if (iters <= 0) return -1.0;
    if (batch <= 0) batch = iters;
    int status = sync_now(sync);
    if (status) return -(double)status;
    double total = 0.0;
    for (long done = 0; done < iters;) {
        long n = iters - done < batch ? iters - done : batch;
        double t0 = now_ns();
        status = launches(entry, func, params, grid, block, n);
        total += now_ns() - t0;
        if (status || (status = sync_now(sync))) return -(double)status;
        done += n;
    }
    return total / (double)iters;
}

double ql_bench_inflight_ns(void *entry, void *sync, void *func, void **params, unsigned grid,
                            unsigned block, long n) {
    if (n <= 0) return -1.0;
    int status = sync_now(sync);
    if (status) return -(double)status;
    double t0 = now_ns();
    if ((status = launches(entry, func, params, grid, block, n)) || (status = sync_now(sync)))
        return -(double)status;
    return (now_ns() - t0) / (double)n;
}

double ql_bench_roundtrip_ns(void *entry, void *sync, void *func, void **params, unsigned grid,
                             unsigned block, long iters) {
    if (iters <= 0) return -1.0;
    int status = sync_now(sync);
    if (status) return -(double)status;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        if ((status = launches(entry, func, params, grid, block, 1)) ||
            (status = sync_now(sync)))
            return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

double ql_bench_sync_ns(void *sync, long iters) {
    if (!sync || iters <= 0) return -1.0;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        int status = sync_now(sync);
        if (status) return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

/* ns per saxpy pass over n elements. */
double ql_bench_saxpy_ns(float a, const float *restrict x, float *restrict y, long n,
                         long reps) {
    double t0 = now_ns();
    for (long r = 0; r < reps; ++r) {
        for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
        __asm__ __volatile__("" ::: "memory");
    }
    return (now_ns() - t0) / (double)reps;
}

/* ns per launch of `iters` calls to a cuLaunchKernelEx-shaped entry, with a
 * launch configuration (CUlaunchConfig) and parameter block built once: the
 * C loop the null driver's benchmark subtracts from rows that launch through
 * cuLaunchKernelEx (cuda.core). */
typedef int (*launch_ex_fn)(const void *config, void *f, void **params, void **extra);

double ql_bench_launch_ex_ns(void *entry, const void *config, void *func, void **params,
                             long iters) {
    if (iters <= 0) return -1.0;
    launch_ex_fn launch = (launch_ex_fn)entry;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        int status = launch(config, func, params, NULL);
        if (status) return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

/* The C baseline of the CUDA launch benchmark (benchmarks/gpu_launch.py),
 * built with the host C compiler at bench time and loaded into the
 * benchmarking process, so C and Python are measured side by side in one run.
 *
 * It opens the CUDA driver itself (dlopen, no CUDA headers: the few types and
 * entry points it needs are declared below), resolves cuLaunchKernel the way
 * quicklaunch does (cuGetProcAddress at the same driver API version, falling
 * back to dlsym), and launches a kernel that quicklaunch loaded (its CUfunction
 * handle, Kernel._handle) with a parameter block (void *params[]) prepared
 * once in Python. The calling thread must have the kernel's context current;
 * quicklaunch makes its device's primary context current on the thread that
 * opens the device, and the benchmark synchronises through quicklaunch first.
 *
 * Every function returns ns per launch, or -status when the driver refused a
 * call (a CUresult is positive); nothing here prints.
 *
 *   qlcb_launch_ns     host cost of a launch: launches in batches of `batch`,
 *                      only the launches timed, cuCtxSynchronize after each
 *                      batch outside the timing (so the driver's queue never
 *                      fills and GPU time never enters the figure)
 *   qlcb_inflight_ns   throughput with many kernels in flight: `n` launches
 *                      back to back, then one cuCtxSynchronize, all timed
 *   qlcb_roundtrip_ns  one launch then cuCtxSynchronize, each time
 *   qlcb_sync_ns       cuCtxSynchronize with nothing queued
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef void *CUfunction;
typedef void *CUstream;

typedef CUresult (*launch_kernel_t)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream stream, void **params, void **extra);
typedef CUresult (*ctx_synchronize_t)(void);
/* CUDA 12+: cuGetProcAddress_v2 reports why a symbol is missing in its last
 * argument (a CUdriverProcAddressQueryResult, an int-sized enum). */
typedef CUresult (*get_proc_v2_t)(const char *symbol, void **pfn, int cuda_version,
                                  uint64_t flags, int *status);
typedef CUresult (*get_proc_v1_t)(const char *symbol, void **pfn, int cuda_version,
                                  uint64_t flags);

static void *library;
static launch_kernel_t launch_kernel;
static ctx_synchronize_t ctx_synchronize;
static char error_text[512];

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* An entry point as cuGetProcAddress gives it at `version` (the address
 * quicklaunch's launcher calls), else as the library exports it. */
static void *entry(const char *name, int version) {
    void *fn = NULL;
    get_proc_v2_t v2 = (get_proc_v2_t)dlsym(library, "cuGetProcAddress_v2");
    if (v2) {
        int status = 0;
        if (v2(name, &fn, version, 0, &status) == 0 && fn) return fn;
    } else {
        get_proc_v1_t v1 = (get_proc_v1_t)dlsym(library, "cuGetProcAddress");
        if (v1 && v1(name, &fn, version, 0) == 0 && fn) return fn;
    }
    return dlsym(library, name);
}

/* Opens the driver at `path` (the same file quicklaunch opened, so the same
 * loaded instance: handles and contexts are shared). Returns 0, or -1 when
 * the library does not open, -2 when an entry point is missing; qlcb_error()
 * says why. */
int qlcb_open(const char *path, int api_version) {
    error_text[0] = '\0';
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(error_text, sizeof error_text, "dlopen(%s) failed: %s", path,
                 why ? why : "unknown error");
        return -1;
    }
    launch_kernel = (launch_kernel_t)entry("cuLaunchKernel", api_version);
    ctx_synchronize = (ctx_synchronize_t)entry("cuCtxSynchronize", api_version);
    if (!launch_kernel || !ctx_synchronize) {
        snprintf(error_text, sizeof error_text, "%s has no %s", path,
                 launch_kernel ? "cuCtxSynchronize" : "cuLaunchKernel");
        launch_kernel = NULL;
        ctx_synchronize = NULL;
        return -2;
    }
    return 0;
}

const char *qlcb_error(void) { return error_text; }

/* The cuLaunchKernel this library calls, to compare with quicklaunch's. */
void *qlcb_launch_entry(void) { return (void *)launch_kernel; }

int qlcb_launch_once(void *func, void **params, unsigned grid, unsigned block) {
    if (!launch_kernel) return -1;
    return launch_kernel(func, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}

int qlcb_synchronize(void) { return ctx_synchronize ? ctx_synchronize() : -1; }

double qlcb_launch_ns(void *func, void **params, unsigned grid, unsigned block, long iters,
                      long batch) {
    if (!launch_kernel || iters <= 0) return -1.0;
    if (batch <= 0) batch = iters;
    CUresult status = ctx_synchronize();
    if (status) return -(double)status;
    double total = 0.0;
    for (long done = 0; done < iters;) {
        long n = iters - done < batch ? iters - done : batch;
        double t0 = now_ns();
        for (long i = 0; i < n; ++i) {
            status = launch_kernel(func, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
            if (status) return -(double)status;
        }
        total += now_ns() - t0;
        status = ctx_synchronize();
        if (status) return -(double)status;
        done += n;
    }
    return total / (double)iters;
}

double qlcb_inflight_ns(void *func, void **params, unsigned grid, unsigned block, long n) {
    if (!launch_kernel || n <= 0) return -1.0;
    CUresult status = ctx_synchronize();
    if (status) return -(double)status;
    double t0 = now_ns();
    for (long i = 0; i < n; ++i) {
        status = launch_kernel(func, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
        if (status) return -(double)status;
    }
    status = ctx_synchronize();
    if (status) return -(double)status;
    return (now_ns() - t0) / (double)n;
}

double qlcb_roundtrip_ns(void *func, void **params, unsigned grid, unsigned block, long iters) {
    if (!launch_kernel || iters <= 0) return -1.0;
    CUresult status = ctx_synchronize();
    if (status) return -(double)status;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        status = launch_kernel(func, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
        if (status) return -(double)status;
        status = ctx_synchronize();
        if (status) return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

double qlcb_sync_ns(long iters) {
    if (!ctx_synchronize || iters <= 0) return -1.0;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        CUresult status = ctx_synchronize();
        if (status) return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

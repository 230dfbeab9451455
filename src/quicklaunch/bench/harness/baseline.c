/* C baselines for the benchmarks, built by the host compiler at bench time
 * and loaded into the benchmarking process, so C and Python are measured side
 * by side in one run.
 *
 * ql_bench_launch_ns: calls a backend's cuLaunchKernel-shaped entry (the very
 * function the Python launcher calls) in a loop with a prebuilt parameter
 * block: what a C program pays per launch.
 * ql_bench_saxpy_ns: a plain single-threaded saxpy loop. */
#include <stdint.h>
#include <time.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned shared, void *stream,
                         void **params, void **extra);

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Returns ns per launch, or -status if a launch failed. */
double ql_bench_launch_ns(void *entry, void *func, void **params, unsigned grid,
                          unsigned block, long iters) {
    launch_fn launch = (launch_fn)entry;
    double t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        int status = launch(func, grid, 1, 1, block, 1, 1, 0, 0, params, 0);
        if (status) return -(double)status;
    }
    return (now_ns() - t0) / (double)iters;
}

/* Returns ns per saxpy pass over n elements. */
double ql_bench_saxpy_ns(float a, const float *restrict x, float *restrict y, long n,
                         long reps) {
    double t0 = now_ns();
    for (long r = 0; r < reps; ++r) {
        for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
        __asm__ __volatile__("" ::: "memory");
    }
    return (now_ns() - t0) / (double)reps;
}

/* The CPU device's all-cores reference: saxpy as an OpenMP loop in C.
 *
 *     omp_saxpy N INNER REPEATS     (threads: OMP_NUM_THREADS)
 *
 * Prints the median over REPEATS of ns per pass, each sample INNER passes of
 * y = 1.5 * x + y over N floats under `#pragma omp parallel for
 * schedule(static)`, built -O3 -march=native -fopenmp (the CPU device's own
 * flags, plus OpenMP). Its own process: libgomp's threads spin after each
 * parallel region, and beside the CPU device's pool they would steal its
 * cores. The arrays are first touched in parallel, as OpenMP codes do. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s N INNER REPEATS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int inner = atoi(argv[2]), repeats = atoi(argv[3]);
    if (n < 1 || inner < 1 || repeats < 1 || repeats > 1000) return 2;
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    float *y = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    double *samples = malloc(sizeof(double) * repeats);
    if (!x || !y || !samples) return 3;
    const float a = 1.5f;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        x[i] = (float)(i % 7) * 0.25f;
        y[i] = (float)(i % 5);
    }
    for (int r = 0; r < repeats; ++r) {
        double t = now_ns();
        for (int k = 0; k < inner; ++k) {
#pragma omp parallel for schedule(static)
            for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
        }
        samples[r] = (now_ns() - t) / inner;
    }
    qsort(samples, repeats, sizeof(double), by_value);
    /* y is printed to stderr so the loop is not dead */
    fprintf(stderr, "y[n/2] = %g\n", y[n / 2]);
    printf("%.1f\n", samples[repeats / 2]);
    return 0;
}

/* The C baseline of benchmarks/hip_launch.py: the cost of hipModuleLaunchKernel
 * itself, called from C with the kernel handle and parameters prepared once.
 *
 *     hip_baseline LIBAMDHIP64 CODE_OBJECT KERNEL_SYMBOL BATCHES BATCH DEVICE
 *
 * Launches the 4-parameter kernel (float, float *, float *, int) BATCHES times
 * BATCH launches on the null stream, synchronising between batches (outside
 * the timed part, so the queue never fills), and prints the median and the
 * minimum nanoseconds per launch over the batches. The runtime is opened with
 * dlopen: nothing links against ROCm. Never run on hardware yet. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*init_t)(unsigned);
typedef int (*set_t)(int);
typedef int (*load_t)(void **, const void *);
typedef int (*getfn_t)(void **, void *, const char *);
typedef int (*malloc_t)(void **, size_t);
typedef int (*sync_t)(void);
typedef int (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **);

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define CHECK(call) do { int s_ = (call); if (s_) { \
    fprintf(stderr, "%s failed: %d\n", #call, s_); return 1; } } while (0)

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s LIB CODE_OBJECT SYMBOL BATCHES BATCH DEVICE\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    init_t hipInit = (init_t)dlsym(lib, "hipInit");
    set_t hipSetDevice = (set_t)dlsym(lib, "hipSetDevice");
    load_t hipModuleLoadData = (load_t)dlsym(lib, "hipModuleLoadData");
    getfn_t hipModuleGetFunction = (getfn_t)dlsym(lib, "hipModuleGetFunction");
    malloc_t hipMalloc = (malloc_t)dlsym(lib, "hipMalloc");
    sync_t hipDeviceSynchronize = (sync_t)dlsym(lib, "hipDeviceSynchronize");
    launch_t launch = (launch_t)dlsym(lib, "hipModuleLaunchKernel");
    if (!hipInit || !hipSetDevice || !hipModuleLoadData || !hipModuleGetFunction ||
        !hipMalloc || !hipDeviceSynchronize || !launch) {
        fprintf(stderr, "%s lacks a HIP entry point\n", argv[1]);
        return 1;
    }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *image = malloc((size_t)size);
    if (!image || fread(image, 1, (size_t)size, f) != (size_t)size) { fclose(f); return 1; }
    fclose(f);
    const int batches = atoi(argv[4]), batch = atoi(argv[5]);
    CHECK(hipInit(0));
    CHECK(hipSetDevice(atoi(argv[6])));
    void *module, *fn, *x, *y;
    CHECK(hipModuleLoadData(&module, image));
    CHECK(hipModuleGetFunction(&fn, module, argv[3]));
    CHECK(hipMalloc(&x, 4096));
    CHECK(hipMalloc(&y, 4096));
    float a = 2.0f;
    int n = 0;   /* nothing to do: the kernel's cost is not what is measured */
    void *params[4] = {&a, &x, &y, &n};
    for (int i = 0; i < batch; ++i)   /* warm up */
        CHECK(launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CHECK(hipDeviceSynchronize());
    double *per = malloc(sizeof(double) * (size_t)batches);
    for (int b = 0; b < batches; ++b) {
        const double t0 = now_ns();
        for (int i = 0; i < batch; ++i)
            launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
        per[b] = (now_ns() - t0) / batch;
        CHECK(hipDeviceSynchronize());
    }
    qsort(per, (size_t)batches, sizeof(double), cmp);
    printf("%.1f %.1f\n", per[batches / 2], per[0]);
    return 0;
}

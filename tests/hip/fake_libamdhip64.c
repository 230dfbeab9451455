/* A fake HIP runtime (libamdhip64.so) for tests/hip/test_fake_runtime.py:
 * enough of the API for quicklaunch's HIP device to open, load code objects,
 * allocate (host memory stands in for device memory), copy, and launch.
 * hipModuleLaunchKernel records the launch: the kernel's symbol, the
 * configuration, and the bytes of each parameter, whose sizes the test sets
 * with fake_expect() (the real runtime reads them from the code object).
 *
 * Environment: FAKE_HIP_DEVICES (default 1), FAKE_HIP_ARCH (default
 * "gfx90a:sramecc+:xnack-"), FAKE_HIP_WAVE (default 64), FAKE_HIP_INIT
 * (a hipInit status to return, default 0). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
typedef int hipError_t;

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* ------------------------------------------------------------ recording */
#define MAX_PARAMS 64
typedef struct {
    char name[256];
    unsigned grid[3], block[3], shared;
    uintptr_t stream;
    int nparams;
    unsigned char bytes[1024];   /* the parameters, packed one after another */
} fake_launch;

EXPORT fake_launch fake_last;
EXPORT int fake_launches;
static size_t expect_sizes[MAX_PARAMS];
static int expect_n, fail_next, current_device;

EXPORT void fake_expect(int n, const size_t *sizes) {
    expect_n = n < MAX_PARAMS ? n : MAX_PARAMS;
    memcpy(expect_sizes, sizes, sizeof(size_t) * (size_t)expect_n);
}
EXPORT void fake_fail_next(int status) { fail_next = status; }

/* ------------------------------------------------------------ errors, init */
EXPORT const char *hipGetErrorName(hipError_t e) {
    switch (e) {
    case 0: return "hipSuccess";
    case 1: return "hipErrorInvalidValue";
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 500: return "hipErrorNotFound";
    case 700: return "hipErrorIllegalAddress";
    default: return "hipErrorUnknown";
    }
}
EXPORT const char *hipGetErrorString(hipError_t e) { return e ? "fake failure" : "no error"; }
EXPORT hipError_t hipInit(unsigned flags) { (void)flags; return env_int("FAKE_HIP_INIT", 0); }
EXPORT hipError_t hipDriverGetVersion(int *v) { *v = 50221153; return 0; }
EXPORT hipError_t hipRuntimeGetVersion(int *v) { *v = 50221153; return 0; }
EXPORT hipError_t hipGetDeviceCount(int *n) {
    *n = env_int("FAKE_HIP_DEVICES", 1);
    return *n ? 0 : 100;
}
EXPORT hipError_t hipSetDevice(int d) {
    if (d < 0 || d >= env_int("FAKE_HIP_DEVICES", 1)) return 101;
    current_device = d;
    return 0;
}
EXPORT hipError_t hipGetDevice(int *d) { *d = current_device; return 0; }
EXPORT hipError_t hipDeviceGetName(char *name, int len, int d) {
    snprintf(name, (size_t)len, "Fake AMD GPU %d", d);
    return 0;
}
EXPORT hipError_t hipDeviceGetAttribute(int *out, int attr, int d) {
    (void)d;
    switch (attr) {
    case 23: *out = 9; return 0;                       /* major */
    case 26: case 27: *out = 1024; return 0;           /* block x, y */
    case 28: *out = 1024; return 0;
    case 29: *out = 2147483647; return 0;
    case 30: case 31: *out = 65536; return 0;
    case 56: *out = 1024; return 0;                    /* threads per block */
    case 61: *out = 0; return 0;
    case 63: *out = 104; return 0;                     /* compute units */
    case 74: *out = 65536; return 0;                   /* shared per block */
    case 87: *out = env_int("FAKE_HIP_WAVE", 64); return 0;
    default: return 1;
    }
}
EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, int d) { (void)d; *bytes = 64ull << 30; return 0; }
static hipError_t properties(void *props, int d) {
    const char *arch = getenv("FAKE_HIP_ARCH");
    memset(props, 0, 1472);
    snprintf((char *)props, 256, "Fake AMD GPU %d", d);
    /* gcnArchName lives after name[256] and some fields; where exactly
     * differs between ROCm versions, which is why quicklaunch searches */
    snprintf((char *)props + 396, 256, "%s", arch && *arch ? arch : "gfx90a:sramecc+:xnack-");
    return 0;
}
EXPORT hipError_t hipGetDeviceProperties(void *p, int d) { return properties(p, d); }
EXPORT hipError_t hipGetDevicePropertiesR0600(void *p, int d) { return properties(p, d); }
EXPORT hipError_t hipDeviceSynchronize(void) { return 0; }

/* ------------------------------------------------------------ memory */
EXPORT hipError_t hipMalloc(void **p, size_t n) {
    *p = aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? 0 : 2;
}
EXPORT hipError_t hipFree(void *p) { free(p); return 0; }
EXPORT hipError_t hipMemcpyHtoD(void *d, void *s, size_t n) { memcpy(d, s, n); return 0; }
EXPORT hipError_t hipMemcpyDtoH(void *d, void *s, size_t n) { memcpy(d, s, n); return 0; }
EXPORT hipError_t hipMemcpyDtoD(void *d, void *s, size_t n) { memmove(d, s, n); return 0; }
EXPORT hipError_t hipMemsetD8(void *d, unsigned char v, size_t n) { memset(d, v, n); return 0; }
EXPORT hipError_t hipPointerGetAttributes(void *attrs, void *p) {
    memset(attrs, 0, 32);
    ((int *)attrs)[1] = 0;
    ((void **)attrs)[1] = p;
    return p ? 0 : 1;
}

/* ------------------------------------------------------------ modules */
typedef struct { unsigned char *image; size_t size; } fake_module;
typedef struct { char name[256]; } fake_function;

/* The size of symbol `name` in an ELF64 image, or -1. */
static long symbol_size(const unsigned char *img, size_t n, const char *name) {
    uint64_t shoff; uint16_t shentsize, shnum;
    if (n < 64 || memcmp(img, "\x7f" "ELF", 4)) return -1;
    memcpy(&shoff, img + 40, 8); memcpy(&shentsize, img + 58, 2); memcpy(&shnum, img + 60, 2);
    for (unsigned i = 0; i < shnum; ++i) {
        const unsigned char *sh = img + shoff + (size_t)i * shentsize;
        uint32_t type; uint64_t off, size, entsize; uint32_t link;
        memcpy(&type, sh + 4, 4); memcpy(&off, sh + 24, 8); memcpy(&size, sh + 32, 8);
        memcpy(&link, sh + 40, 4); memcpy(&entsize, sh + 56, 8);
        if (type != 2 || entsize < 24) continue;
        const unsigned char *str = img + shoff + (size_t)link * shentsize;
        uint64_t stroff; memcpy(&stroff, str + 24, 8);
        for (uint64_t s = 1; s < size / entsize; ++s) {
            uint32_t nm; uint64_t ssize;
            memcpy(&nm, img + off + s * entsize, 4); memcpy(&ssize, img + off + s * entsize + 16, 8);
            if (!strcmp((const char *)img + stroff + nm, name)) return (long)ssize;
        }
    }
    return -1;
}

EXPORT hipError_t hipModuleLoadData(void **module, const void *image) {
    const unsigned char *img = image;
    uint64_t shoff; uint16_t shentsize, shnum;
    if (memcmp(img, "\x7f" "ELF", 4)) return 200;
    memcpy(&shoff, img + 40, 8); memcpy(&shentsize, img + 58, 2); memcpy(&shnum, img + 60, 2);
    fake_module *m = malloc(sizeof *m);
    m->size = shoff + (size_t)shentsize * shnum;
    m->image = malloc(m->size);
    memcpy(m->image, img, m->size);
    *module = m;
    return 0;
}
EXPORT hipError_t hipModuleUnload(void *module) {
    fake_module *m = module;
    free(m->image); free(m);
    return 0;
}
EXPORT hipError_t hipModuleGetFunction(void **f, void *module, const char *name) {
    fake_module *m = module;
    if (symbol_size(m->image, m->size, name) < 0) return 500;
    fake_function *fn = calloc(1, sizeof *fn);
    snprintf(fn->name, sizeof fn->name, "%s", name);
    *f = fn;
    return 0;
}
EXPORT hipError_t hipModuleGetGlobal(void **p, size_t *bytes, void *module, const char *name) {
    fake_module *m = module;
    long size = symbol_size(m->image, m->size, name);
    if (size < 0) return 500;
    *p = calloc(1, (size_t)size + 1);
    *bytes = (size_t)size;
    return 0;
}
/* Function attributes: max threads 1024, 24 registers, PTX/binary version 0,
 * 64 KiB of dynamic shared memory, 0 for the rest (no static segments). */
EXPORT hipError_t hipFuncGetAttribute(int *v, int attr, void *f) {
    if (!v || !f || attr < 0 || attr > 15) return 1;
    *v = attr == 0 ? 1024 : attr == 4 ? 24 : attr == 8 ? 65536 : 0;
    return 0;
}
/* Occupancy: 2048 threads a CU over the block size, at most 32; 0 above 64 KiB. */
EXPORT hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int threads,
                                                                     size_t shared) {
    if (!n || !f || threads <= 0) return 1;
    *n = shared > 65536 ? 0 : 2048 / threads > 32 ? 32 : 2048 / threads;
    return 0;
}

EXPORT hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        void *stream, void **params, void **extra) {
    (void)extra;
    if (fail_next) { int s = fail_next; fail_next = 0; return s; }
    fake_function *fn = f;
    memset(&fake_last, 0, sizeof fake_last);
    snprintf(fake_last.name, sizeof fake_last.name, "%s", fn->name);
    fake_last.grid[0] = gx; fake_last.grid[1] = gy; fake_last.grid[2] = gz;
    fake_last.block[0] = bx; fake_last.block[1] = by; fake_last.block[2] = bz;
    fake_last.shared = shared;
    fake_last.stream = (uintptr_t)stream;
    size_t at = 0;
    for (int i = 0; i < expect_n && params; ++i) {
        if (at + expect_sizes[i] > sizeof fake_last.bytes) break;
        memcpy(fake_last.bytes + at, params[i], expect_sizes[i]);
        at += expect_sizes[i];
    }
    fake_last.nparams = expect_n;
    ++fake_launches;
    return 0;
}

/* ------------------------------------------------------------ streams, events */
static uintptr_t next_handle = 0x1000;
EXPORT hipError_t hipStreamCreateWithFlags(void **s, unsigned flags) {
    (void)flags; *s = (void *)(next_handle += 16); return 0;
}
EXPORT hipError_t hipStreamDestroy(void *s) { (void)s; return 0; }
EXPORT hipError_t hipStreamSynchronize(void *s) { (void)s; return 0; }
EXPORT hipError_t hipStreamQuery(void *s) { (void)s; return 0; }
EXPORT hipError_t hipStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
EXPORT hipError_t hipEventCreateWithFlags(void **e, unsigned flags) {
    (void)flags; *e = (void *)(next_handle += 16); return 0;
}
EXPORT hipError_t hipEventDestroy(void *e) { (void)e; return 0; }
EXPORT hipError_t hipEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
EXPORT hipError_t hipEventSynchronize(void *e) { (void)e; return 0; }
EXPORT hipError_t hipEventQuery(void *e) { (void)e; return 0; }
EXPORT hipError_t hipEventElapsedTime(float *ms, void *a, void *b) {
    (void)a; (void)b; *ms = 1.5f; return 0;
}

/* ------------------------------------------------------------ textures */
/* hipTexObjectCreate with the driver-style descriptors (HIP_RESOURCE_DESC,
 * HIP_TEXTURE_DESC: CUDA's layout). Linear and pitch2D resources only, as
 * quicklaunch makes them; each is recorded for fake_hip_texture(). With
 * FAKE_HIP_NO_TEXTURES set the entry fails as hipErrorNotSupported (801). */
typedef struct {
    int resType;
    union {
        struct { uint64_t devPtr; int format; unsigned numChannels; size_t sizeInBytes; } linear;
        struct { uint64_t devPtr; int format; unsigned numChannels; size_t width, height, pitch; } pitch2D;
        int reserved[32];
    } res;
    unsigned flags;
} fake_res_desc;
typedef struct {
    int address[3], filter;
    unsigned flags, aniso;
    int mip_filter;
    float bias, min_clamp, max_clamp, border[4];
    int reserved[12];
} fake_tex_desc;
#define MAX_TEX 64
static struct { int live; fake_res_desc r; fake_tex_desc t; } textures[MAX_TEX];

EXPORT hipError_t hipTexObjectCreate(void **out, const fake_res_desc *r, const fake_tex_desc *t,
                                     const void *view) {
    if (env_int("FAKE_HIP_NO_TEXTURES", 0)) return 801;
    if (!out || !r || !t || view || (r->resType != 2 && r->resType != 3)) return 1;
    const uint64_t p = r->resType == 2 ? r->res.linear.devPtr : r->res.pitch2D.devPtr;
    if (p % 256 || (r->resType == 3 && r->res.pitch2D.pitch % 256)) return 1;
    for (int i = 0; i < MAX_TEX; i++)
        if (!textures[i].live) {
            textures[i].live = 1, textures[i].r = *r, textures[i].t = *t;
            *out = (void *)(uintptr_t)(0x7e000 + i + 1);
            return 0;
        }
    return 2;
}
EXPORT hipError_t hipTexObjectDestroy(void *h) {
    uintptr_t i = (uintptr_t)h - 0x7e000 - 1;
    if (i >= MAX_TEX || !textures[i].live) return 1;
    textures[i].live = 0;
    return 0;
}
/* [resource type, format, channels, width (texels), height, pitch, address
 * x, y, filter, flags, device pointer] of a live texture; -1 if none. */
EXPORT int fake_hip_texture(void *h, long long out[11]) {
    uintptr_t i = (uintptr_t)h - 0x7e000 - 1;
    if (i >= MAX_TEX || !textures[i].live) return -1;
    const fake_res_desc *r = &textures[i].r;
    const fake_tex_desc *t = &textures[i].t;
    const int lin = r->resType == 2;
    const long long v[11] = {r->resType, lin ? r->res.linear.format : r->res.pitch2D.format,
                             lin ? r->res.linear.numChannels : r->res.pitch2D.numChannels,
                             lin ? (long long)r->res.linear.sizeInBytes : (long long)r->res.pitch2D.width,
                             lin ? 1 : (long long)r->res.pitch2D.height,
                             lin ? (long long)r->res.linear.sizeInBytes : (long long)r->res.pitch2D.pitch,
                             t->address[0], t->address[1], t->filter, t->flags,
                             (long long)(lin ? r->res.linear.devPtr : r->res.pitch2D.devPtr)};
    memcpy(out, v, sizeof v);
    return 0;
}
EXPORT int fake_hip_texture_count(void) {
    int n = 0;
    for (int i = 0; i < MAX_TEX; i++) n += textures[i].live;
    return n;
}

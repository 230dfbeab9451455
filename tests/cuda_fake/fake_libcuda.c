/* fake_libcuda.c: a fake CUDA driver (libcuda.so.1) for quicklaunch's tests.
 *
 * It exports the driver API entry points quicklaunch uses, with the real
 * signatures and CUresult numbering, and runs nothing: "device" memory is
 * host memory (a CUdeviceptr is a real host address, 256-byte aligned),
 * copies are memcpy, and cuLaunchKernel validates its arguments the way the
 * driver does and then records the launch (kernel name, grid, block, dynamic
 * shared bytes, stream, and the parameter bytes laid out at the kernel's own
 * parameter offsets) in a ring of the last 64 launches.
 *
 * Devices: sm_90 (H100-like) unless FAKE_CUDA_CC says otherwise; each has its
 * own primary context. The current context is per thread, as in the driver:
 * a fresh thread has none, and calls that need one return 201.
 *
 * Module images: PTX text (NUL-terminated, containing ".entry" or ".version"),
 * an ELF64 cubin, or a fatbin holding them. Kernel parameter lists come from the PTX .entry
 * declarations or from the cubin's .nv.info.<kernel> sections (EIATTR
 * KPARAM_INFO records, attribute 0x17, and KPARAM_INFO_V2, 0x45, which NVRTC
 * uses once a kernel has more than 4 KiB of parameters). Module globals
 * (PTX .global/.const, cubin OBJECT symbols) get zeroed fake device memory at
 * load, with the image's initialisers (address initialisers are left 0).
 * A cubin loads only on its own major arch with minor <= the device's (209). A fatbin loads the
 * entry the driver would pick among its uncompressed ones (load_fatbin).
 *
 * Environment, read when it matters (so tests can change it between calls):
 *   FAKE_CUDA_DEVICES=N        device count, read by cuInit (default 1, max 8)
 *   FAKE_CUDA_INIT_ERROR=code  cuInit fails with that code (and so do later calls)
 *   FAKE_CUDA_CC=M.m           compute capability, read by cuInit (default 9.0)
 *   FAKE_CUDA_DRIVER_VERSION=v cuDriverGetVersion (default 12080)
 *   FAKE_CUDA_PTX_ISA_MAX=M.m  PTX with a newer .version fails with 222
 *   FAKE_CUDA_MEM_LIMIT=bytes  per-device limit on cuMemAlloc'd bytes (-> 2)
 *   FAKE_CUDA_FAIL_LAUNCH=code a launch (cuLaunchKernel or cuGraphLaunch) that
 *                              passed validation returns code (and is not recorded)
 *   FAKE_CUDA_OCCUPANCY=n      cuOccupancyMaxActiveBlocksPerMultiprocessor's answer
 *                              (default: 2048 threads an SM over the block size, at most 32)
 *   FAKE_CUDA_NO_COOPERATIVE=1 CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH (95) reads 0
 *   FAKE_CUDA_STATIC_SMEM=n    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (1) of every function
 *                              (default 0)
 *
 * Cooperative launches: cuLaunchCooperativeKernel validates as cuLaunchKernel
 * does, refuses a grid larger than the occupancy times the 132 SMs with 720
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), and records the launch in the
 * same ring, marked cooperative (fake_cuda_launch_cooperative).
 *
 * Streams, events and graphs (and their environment variables and test
 * hooks) are in fake_streams.c, which the end of this file includes: the
 * driver is one translation unit, so compiling this file alone builds all of
 * it. What the two files share is declared in fake_cuda.h.
 * cuGetProcAddress maps base names to the entry current at the asked API
 * version, as the driver does (cuGraphAddKernelNode is the _v2 entry, which
 * takes CUDA_KERNEL_NODE_PARAMS_v2, from 12000 on).
 *
 * Test-only exports (see the end of the file): fake_cuda_launch_count,
 * fake_cuda_last_launch, fake_cuda_get_launch, fake_cuda_reset,
 * fake_cuda_param_layout, fake_cuda_param_offsets, fake_cuda_alloc_count,
 * fake_cuda_module_count, fake_cuda_launch_cooperative.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef struct { uintptr_t base; size_t size; int device, user; } Alloc;  /* user: from cuMemAlloc */
typedef struct { char *name; unsigned dims[6], shared; void *stream; unsigned char *bytes; int nbytes, nparams, cooperative; } Launch;

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
_Thread_local Ctx *current;
int init_status = E_NOINIT, ndev;
Ctx ctxs[MAX_DEV];
double fake_now_ms;
static int cc_major = 9, cc_minor = 0;
static Module *modules;
static Alloc *allocs;
static int nallocs, cap_allocs;
static Launch ring[RING];
static int nlaunches;

long long env_ll(const char *name, long long dflt) {
    const char *s = getenv(name);
    return (s && *s) ? strtoll(s, NULL, 0) : dflt;
}

/* ---- errors, version, init, devices ---- */
static const struct { int code; const char *name, *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"}, {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}, {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"}, {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
static CUresult error_lookup(CUresult e, const char **out, int text) {
    if (!out) return E_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == e) { *out = text ? errors[i].text : errors[i].name; return OK; }
    *out = NULL;
    return E_VALUE;
}
EXPORT CUresult cuGetErrorName(CUresult e, const char **s) { return error_lookup(e, s, 0); }
EXPORT CUresult cuGetErrorString(CUresult e, const char **s) { return error_lookup(e, s, 1); }
EXPORT CUresult cuDriverGetVersion(int *v) { OUT(v, (int)env_ll("FAKE_CUDA_DRIVER_VERSION", 12080)); }

static CUresult do_init(unsigned flags) {
    if (flags) return E_VALUE;
    int err = (int)env_ll("FAKE_CUDA_INIT_ERROR", 0);
    if (err) return init_status = err;
    long long n = env_ll("FAKE_CUDA_DEVICES", 1);
    ndev = n < 0 ? 0 : n > MAX_DEV ? MAX_DEV : (int)n;
    const char *cc = getenv("FAKE_CUDA_CC");
    if (!cc || sscanf(cc, "%d.%d", &cc_major, &cc_minor) != 2) cc_major = 9, cc_minor = 0;
    for (int i = 0; i < MAX_DEV; i++) ctxs[i].device = i;
    return init_status = OK;
}
EXPORT CUresult cuInit(unsigned flags) { LOCKED(do_init(flags)); }
EXPORT CUresult cuDeviceGetCount(int *n) { NEED_INIT(); OUT(n, ndev); }
EXPORT CUresult cuDeviceGet(int *dev, int ordinal) { NEED_DEV(ordinal); OUT(dev, ordinal); }
EXPORT CUresult cuDeviceGetName(char *name, int len, int dev) {
    NEED_DEV(dev);
    if (!name || len <= 0) return E_VALUE;
    snprintf(name, (size_t)len, "Fake NVIDIA H100 (quicklaunch test driver) #%d", dev);
    return OK;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int attrib, int dev) {
    static const int attrs[][2] = {{1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535},
                                   {7, 65535}, {8, DEFAULT_SMEM}, {10, 32}, {14, 512}, {16, 132}, {51, 32},
                                   {97, OPTIN_SMEM}};  /* 14, 51: texture and texture pitch alignment */
    NEED_DEV(dev);
    if (!v || attrib < 1 || attrib > 150) return E_VALUE;
    *v = attrib == 75 ? cc_major : attrib == 76 ? cc_minor
         : attrib == 95 ? !env_ll("FAKE_CUDA_NO_COOPERATIVE", 0) : 0;
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) if (attrs[i][0] == attrib) *v = attrs[i][1];
    return OK;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
    NEED_DEV(dev);
    OUT(bytes, (size_t)env_ll("FAKE_CUDA_MEM_LIMIT", 80LL << 30));
}

/* ---- contexts (primary only; the current one is thread-local) ---- */
static CUresult retain(void **pctx, int dev) {
    NEED_DEV(dev);
    if (pctx) ctxs[dev].refs++;
    OUT(pctx, (void *)&ctxs[dev]);
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **pctx, int dev) { LOCKED(retain(pctx, dev)); }
static CUresult release(int dev) {  /* at zero references the context is gone: using it gives 201 */
    NEED_DEV(dev);
    return ctxs[dev].refs > 0 ? (ctxs[dev].refs--, OK) : E_CONTEXT;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int dev) { LOCKED(release(dev)); }
static CUresult set_current(Ctx *c) {
    NEED_INIT();
    return c && (c < ctxs || c >= ctxs + ndev || c->refs <= 0) ? E_CONTEXT : (current = c, OK);
}
EXPORT CUresult cuCtxSetCurrent(void *ctx) { LOCKED(set_current(ctx)); }
EXPORT CUresult cuCtxGetCurrent(void **pctx) { NEED_INIT(); OUT(pctx, (void *)current); }
EXPORT CUresult cuCtxGetDevice(int *dev) { NEED_CTX(); OUT(dev, current->device); }
/* cuCtxSynchronize is in fake_streams.c */

/* ---- memory: an allocation table over host memory ---- */
static Alloc *find_alloc(uintptr_t p, size_t n) {  /* the allocation holding [p, p+n) */
    for (int i = 0; i < nallocs; i++)
        if (p >= allocs[i].base && p - allocs[i].base < allocs[i].size && n <= allocs[i].size - (p - allocs[i].base))
            return &allocs[i];
    return NULL;
}
static void *new_alloc(size_t size, int device, int user) {  /* zeroed; NULL when out of memory */
    if (nallocs == cap_allocs) {
        Alloc *a = realloc(allocs, (size_t)(cap_allocs + 64) * sizeof *a);
        if (!a) return NULL;
        allocs = a, cap_allocs += 64;
    }
    size_t rounded = (size + 255) & ~(size_t)255;
    void *p = rounded < size ? NULL : aligned_alloc(256, rounded ? rounded : 256);
    if (!p) return NULL;
    memset(p, 0, rounded ? rounded : 256);
    allocs[nallocs++] = (Alloc){(uintptr_t)p, size, device, user};
    return p;
}
static void drop_alloc(Alloc *a) { free(P(a->base)); *a = allocs[--nallocs]; }
static CUresult mem_alloc(CUdeviceptr *dptr, size_t size) {
    NEED_CTX();
    if (!dptr || !size) return E_VALUE;
    if (capture_forbids()) return E_CAPTURE_UNSUPPORTED;
    long long limit = env_ll("FAKE_CUDA_MEM_LIMIT", -1);
    size_t used = 0;
    for (int i = 0; i < nallocs; i++) used += allocs[i].user && allocs[i].device == current->device ? allocs[i].size : 0;
    if (limit >= 0 && (size > (size_t)limit || used > (size_t)limit - size)) return E_OOM;
    void *p = new_alloc(size, current->device, 1);
    return p ? (*dptr = (CUdeviceptr)(uintptr_t)p, OK) : E_OOM;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) { LOCKED(mem_alloc(dptr, size)); }
static CUresult mem_free(CUdeviceptr p) {
    NEED_CTX();
    if (!p) return OK;
    Alloc *a = find_alloc((uintptr_t)p, 0);
    if (!a || a->base != (uintptr_t)p || !a->user) return E_VALUE;  /* unknown, interior, double, a global */
    return drop_alloc(a), OK;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { LOCKED(mem_free(p)); }

static CUresult copy(void *dst, const void *src, size_t n, int dst_dev, int src_dev, int set, int value) {
    NEED_CTX();
    if (!n) return OK;
    if ((dst_dev && !find_alloc((uintptr_t)dst, n)) || (src_dev && !find_alloc((uintptr_t)src, n)) ||
        !dst || (!set && !src)) return E_VALUE;
    if (set) memset(dst, value, n); else memmove(dst, src, n);
    return OK;
}
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { LOCKED(copy(P(d), h, n, 1, 0, 0, 0)); }
EXPORT CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { LOCKED(copy(h, P(d), n, 0, 1, 0, 0)); }
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { LOCKED(copy(P(d), P(s), n, 1, 1, 0, 0)); }
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { LOCKED(copy(P(d), NULL, n, 1, 0, 1, v)); }

static CUresult pointer_attr(void *data, int attr, CUdeviceptr ptr) {
    NEED_INIT();
    Alloc *a = find_alloc((uintptr_t)ptr, 0);
    if (!data || !a) return E_VALUE;
    switch (attr) {
    case 1: *(void **)data = &ctxs[a->device]; break;              /* CONTEXT */
    case 2: *(unsigned *)data = 2; break;                          /* MEMORY_TYPE: CU_MEMORYTYPE_DEVICE */
    case 3: *(CUdeviceptr *)data = ptr; break;                     /* DEVICE_POINTER */
    case 9: *(int *)data = a->device; break;                       /* DEVICE_ORDINAL */
    case 11: *(CUdeviceptr *)data = (CUdeviceptr)a->base; break;   /* RANGE_START_ADDR */
    case 12: *(size_t *)data = a->size; break;                     /* RANGE_SIZE */
    default: return E_VALUE;
    }
    return OK;
}
EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) { LOCKED(pointer_attr(data, attr, p)); }

/* ---- PTX ---- */
static int ptx_type_size(const char *t, size_t n) {  /* ".u32" -> 4, ".f16x2" -> 4, ".pred" -> 1, else 0 */
    if (n == 5 && !strncmp(t, ".pred", 5)) return 1;
    size_t i = 1;
    while (i < n && isalpha((unsigned char)t[i])) i++;
    if (i == 1 || i == n || !strchr("busf", t[1])) return 0;
    int bits = atoi(t + i);
    if (bits % 8 || bits <= 0) return 0;
    return (n > i + 2 && !strncmp(t + n - 2, "x2", 2)) ? bits / 4 : bits / 8;
}
static const char *skip_ws(const char *p) {  /* whitespace and comments */
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (p[0] == '/' && p[1] == '/') { while (*p && *p != '\n') p++; }
        else if (p[0] == '/' && p[1] == '*') { const char *e = strstr(p + 2, "*/"); p = e ? e + 2 : p + strlen(p); }
        else return p;
    }
}
static const char *token(const char *p, size_t *n) {  /* a word ([.$%_A-Za-z0-9]+) or one punctuator */
    p = skip_ws(p);
    const char *q = p;
    while (*q && (isalnum((unsigned char)*q) || strchr("._$%", *q))) q++;
    *n = (q == p && *p) ? 1 : (size_t)(q - p);
    return p;
}
#define TOKIS(t, n, s) ((n) == strlen(s) && !strncmp((t), (s), (n)))
#define IS_NAME(c) (isalpha((unsigned char)(c)) || ((c) && strchr("_$%", (c))))
#define IS_VEC(t, n) (TOKIS(t, n, ".v2") || TOKIS(t, n, ".v4") || TOKIS(t, n, ".v8"))

/* Stores one initialiser element ("5", "-1", "0x1f", "0f3F800000", "0d3FF8000000000000",
 * "1.5"); anything else (generic(sym), ...) stays 0. */
static void ptx_store(unsigned char *dst, int elem, const char *p, int is_float) {
    uint64_t bits = 0;
    if (p[0] == '0' && strchr("fFdD", p[1]) && isxdigit((unsigned char)p[2])) bits = strtoull(p + 2, NULL, 16);
    else if (is_float && elem == 4) { float f = strtof(p, NULL); memcpy(&bits, &f, 4); }
    else if (is_float && elem == 8) { double d = strtod(p, NULL); memcpy(&bits, &d, 8); }
    else if (isdigit((unsigned char)p[0]) || p[0] == '-') bits = (uint64_t)strtoll(p, NULL, 0);
    memcpy(dst, &bits, elem > 8 ? 8 : (size_t)elem);
}

/* One module-scope ".global"/".const" declaration, from after the state
 * space; returns the position after its ';'. */
static const char *ptx_global(Module *m, const char *p, int dev) {
    int elem = 0, is_float = 0, vec = 1;
    size_t n, count = 1, name_len = 0;
    const char *t, *name = NULL;
    for (t = token(p, &n); *t && *t != ';' && *t != '='; t = token(t + n, &n)) {
        if (*t == '[') {
            t = token(t + 1, &n);
            count = *t == ']' ? 0 : count * strtoull(t, NULL, 0);
            if (*t != ']') t = token(t + n, &n);
        } else if (TOKIS(t, n, ".align")) t = token(t + n, &n);
        else if (IS_VEC(t, n)) vec = t[2] - '0';
        else if (*t == '.' && ptx_type_size(t, n)) elem = ptx_type_size(t, n), is_float = t[1] == 'f';
        else if (IS_NAME(*t)) name = t, name_len = n;
    }
    Global *g = name && elem ? realloc(m->globals, (size_t)(m->nglobals + 1) * sizeof *g) : NULL;
    if (g) {
        m->globals = g, g = &g[m->nglobals++];
        g->name = strndup(name, name_len), g->size = (size_t)elem * (size_t)vec * count;
        g->mem = new_alloc(g->size ? g->size : 1, dev, 0);
        if (*t == '=' && g->mem) {  /* a value or a (nested) brace list of them */
            const char *q = t + 1;
            for (size_t i = 0; *(q = skip_ws(q)) && *q != ';';) {
                if (strchr("{},", *q)) { q++; continue; }
                if (++i * (size_t)elem <= g->size) ptx_store((unsigned char *)g->mem + (i - 1) * (size_t)elem, elem, q, is_float);
                for (int paren = 0; *q && (paren || !strchr(",};", *q)); q++) paren += (*q == '(') - (*q == ')');
            }
            t = q, n = 0;
        }
    }
    while (*t && *t != ';') t = token(t + n, &n);
    return *t ? t + 1 : t;
}

/* ".entry name ( .param ..., ... )", from after ".entry"; sets *err on a malformed list. */
static const char *ptx_entry(Module *m, const char *p, CUresult *err) {
    size_t n;
    const char *t = token(p, &n);
    Func f = {m, NULL, 0, 0, NULL, DEFAULT_SMEM, -1};
    if (!n || !IS_NAME(*t)) { *err = E_PTX; return t; }
    f.name = strndup(t, n);
    t = token(t + n, &n);
    if (*t == '(') {
        for (t = token(t + 1, &n); *t != ')';) {
            int align = 0, size = 0, vec = 1, count = 1;
            if (!TOKIS(t, n, ".param")) goto bad;
            for (t = token(t + n, &n); *t && *t != ',' && *t != ')'; t = token(t + n, &n)) {
                if (TOKIS(t, n, ".align")) {
                    t = token(t + n, &n);
                    if (!size) align = atoi(t);  /* after the type (.ptr .align N) it is the pointee's */
                } else if (*t == '[') {
                    count = atoi(t = token(t + 1, &n));
                    if (*(t = token(t + n, &n)) != ']') goto bad;
                } else if (IS_VEC(t, n)) vec = t[2] - '0';
                else if (!size && *t == '.' && ptx_type_size(t, n)) size = ptx_type_size(t, n) * vec;
            }
            if (!size || !*t) goto bad;
            if (!align) align = size;
            Param *ps = realloc(f.params, (size_t)(f.nparams + 1) * sizeof *ps);
            if (!ps) goto bad;
            f.params = ps;
            int off = (f.total + align - 1) / align * align;
            ps[f.nparams++] = (Param){size * count, align, off};
            f.total = off + size * count;
            if (*t == ',') t = token(t + 1, &n);
        }
        t = token(t + 1, &n);
    }
    Func *fs = realloc(m->funcs, (size_t)(m->nfuncs + 1) * sizeof *fs);
    if (!fs) goto bad;
    m->funcs = fs, fs[m->nfuncs++] = f;
    return t;
bad:
    free(f.name), free(f.params);
    *err = E_PTX;
    return t;
}

static CUresult load_ptx(Module *m, const char *src, int dev) {
    const char *v = strstr(src, ".version"), *lim = getenv("FAKE_CUDA_PTX_ISA_MAX"), *tg = strstr(src, ".target");
    int a, b, la, lb, sm;
    if (v && lim && sscanf(v + 8, " %d.%d", &a, &b) == 2 && sscanf(lim, "%d.%d", &la, &lb) == 2 &&
        (a > la || (a == la && b > lb))) return E_PTXVER;
    if (tg && sscanf(tg + 7, " sm_%d", &sm) == 1 && sm > cc_major * 10 + cc_minor) return E_PTX;
    CUresult err = OK;
    int depth = 0;
    size_t n;
    for (const char *t = token(src, &n); *t && !err; t = token(t + n, &n)) {
        depth += (*t == '{') - (*t == '}');
        if (depth) continue;
        if (TOKIS(t, n, ".entry")) t = ptx_entry(m, t + n, &err), n = 0;
        else if (TOKIS(t, n, ".extern")) while (*t && *t != ';') t = token(t + n, &n);
        else if (TOKIS(t, n, ".global") || TOKIS(t, n, ".const")) t = ptx_global(m, t + n, dev), n = 0;
    }
    return err;
}

/* ---- cubins: ELF64, e_machine EM_CUDA (190); structures declared here to need no <elf.h> ---- */
typedef struct { unsigned char ident[16]; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
                 uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; } Ehdr;
typedef struct { uint32_t name, type; uint64_t flags, addr, offset, size; uint32_t link, info; uint64_t align, entsize; } Shdr;
typedef struct { uint32_t name; unsigned char info, other; uint16_t shndx; uint64_t value, size; } Sym;

static int by_ordinal(const void *a, const void *b) { return ((const Param *)a)->align - ((const Param *)b)->align; }

/* A kernel's parameters from its .nv.info.<name> section: EIATTR records are a
 * format byte, an attribute byte and a u16 (format 4: the length of the value
 * that follows). KPARAM_INFO (0x17) and _V2 (0x45) values are three u32:
 * index (0); ordinal | offset << 16; then V1: size << 18 | flags, V2: size. */
static CUresult cubin_params(Func *f, const unsigned char *img, const Ehdr *eh, const Shdr *sh, const char *shstr) {
    for (int j = 0; j < eh->shnum; j++) {
        const char *jn = shstr + sh[j].name;
        if (strncmp(jn, ".nv.info.", 9) || strcmp(jn + 9, f->name)) continue;
        for (const unsigned char *a = img + sh[j].offset, *end = a + sh[j].size; a + 4 <= end;) {
            unsigned fmt = a[0], attr = a[1], len = fmt == 4 ? (unsigned)(a[2] | a[3] << 8) : 0;
            if (fmt == 4 && (attr == 0x17 || attr == 0x45) && len >= 12) {
                uint32_t w[3];
                memcpy(w, a + 4, 12);
                Param *ps = realloc(f->params, (size_t)(f->nparams + 1) * sizeof *ps);
                if (!ps) return E_OOM;
                f->params = ps;
                int size = attr == 0x17 ? (int)(w[2] >> 18) : (int)w[2], off = (int)(w[1] >> 16);
                ps[f->nparams++] = (Param){size, (int)(w[1] & 0xffff), off};  /* align holds the ordinal for now */
                if (off + size > f->total) f->total = off + size;
            }
            a += 4 + len;
        }
    }
    if (f->nparams) qsort(f->params, (size_t)f->nparams, sizeof(Param), by_ordinal);
    for (int q = 0; q < f->nparams; q++) {  /* not recorded: the largest power of two <= 16 dividing size and offset */
        int al = 16;
        while (al > 1 && (f->params[q].size % al || f->params[q].offset % al)) al /= 2;
        f->params[q].align = al;
    }
    return OK;
}

static CUresult parse_cubin(Module *m, const unsigned char *img, const Ehdr *eh, const Shdr *sh, int dev) {
    const char *shstr = (const char *)img + sh[eh->shstrndx].offset;
    for (int i = 0; i < eh->shnum; i++) {
        if (sh[i].type != 2 || sh[i].entsize != sizeof(Sym) || sh[i].link >= eh->shnum) continue;  /* SHT_SYMTAB */
        const char *str = (const char *)img + sh[sh[i].link].offset;
        for (size_t k = 0; k < sh[i].size / sizeof(Sym); k++) {
            Sym s;
            memcpy(&s, img + sh[i].offset + k * sizeof s, sizeof s);  /* NVRTC's tables are unaligned */
            if (!s.shndx || s.shndx >= eh->shnum) continue;  /* undefined */
            const Shdr *in = &sh[s.shndx];
            if ((s.info & 15) == 1 && strncmp(shstr + in->name, ".nv.shared", 10)) {  /* STT_OBJECT */
                Global *g = realloc(m->globals, (size_t)(m->nglobals + 1) * sizeof *g);
                if (!g) return E_OOM;
                m->globals = g, g = &g[m->nglobals++];
                g->name = strdup(str + s.name), g->size = s.size;
                g->mem = new_alloc(s.size ? s.size : 1, dev, 0);
                if (g->mem && in->type == 1 && s.value + s.size <= in->size)  /* PROGBITS: initialised */
                    memcpy(g->mem, img + in->offset + s.value, s.size);
            } else if ((s.info & 15) == 2 && (s.other & 0x10)) {  /* STT_FUNC with STO_CUDA_ENTRY: a kernel */
                Func *fs = realloc(m->funcs, (size_t)(m->nfuncs + 1) * sizeof *fs);
                if (!fs) return E_OOM;
                m->funcs = fs, fs = &fs[m->nfuncs++];
                *fs = (Func){m, strdup(str + s.name), 0, 0, NULL, DEFAULT_SMEM, -1};
                if (cubin_params(fs, img, eh, sh, shstr)) return E_OOM;
            }
        }
    }
    return OK;
}

static CUresult load_cubin(Module *m, const unsigned char *img, int dev) {
    Ehdr eh;
    memcpy(&eh, img, sizeof eh);
    if (img[4] != 2 || img[5] != 1 || eh.machine != 190 || eh.shentsize != sizeof(Shdr) ||
        eh.shoff == 0 || eh.shoff > (1u << 30) || eh.shstrndx >= eh.shnum) return E_IMAGE;
    int sm = eh.ident[8] >= 8 ? (eh.flags >> 8) & 0xff : eh.flags & 0xff;  /* EI_ABIVERSION 8 moved the arch */
    if (sm / 10 != cc_major || sm % 10 > cc_minor) return E_NOBINARY;  /* SASS runs within a major only */
    Shdr *sh = malloc(eh.shnum * sizeof *sh);
    if (!sh) return E_OOM;
    memcpy(sh, img + eh.shoff, eh.shnum * sizeof *sh);
    CUresult r = parse_cubin(m, img, &eh, sh, dev);
    free(sh);
    return r;
}

/* A fatbin (u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries): the
 * entry the driver would pick among those stored as is: the newest cubin this device runs (its
 * own major, minor <= the device's), else the PTX of the newest arch <= the device's. Entry
 * header: u16 kind (1 PTX, 2 cubin), u32 header size at 4, u64 padded payload size at 8, u32
 * arch at 28, u64 flags at 40. Compressed entries (flags 0x2000 LZ4, 0x8000 zstd) are not
 * decompressed here: a fatbin with nothing else this device runs fails with 209. */
static CUresult load_fatbin(Module *m, const unsigned char *img, int dev) {
    uint16_t hsize;
    uint64_t total;
    memcpy(&hsize, img + 6, 2), memcpy(&total, img + 8, 8);
    if (hsize < 16 || total == 0 || total > (1ull << 30)) return E_IMAGE;
    const unsigned char *best = NULL;
    int best_kind = 0, best_rank = -1, have = cc_major * 10 + cc_minor;
    for (uint64_t pos = hsize; pos + 48 <= hsize + total;) {
        uint16_t kind;
        uint32_t ehead, sm;
        uint64_t padded, flags;
        memcpy(&kind, img + pos, 2), memcpy(&ehead, img + pos + 4, 4), memcpy(&padded, img + pos + 8, 8);
        memcpy(&sm, img + pos + 28, 4), memcpy(&flags, img + pos + 40, 8);
        if (ehead < 48 || pos + ehead + padded > hsize + total) return E_IMAGE;
        int runs = !(flags & 0xA000) && (kind == 2 ? (int)sm / 10 == cc_major && (int)sm % 10 <= cc_minor
                                                   : kind == 1 && (int)sm <= have);
        int rank = kind == 2 ? 1000 + (int)sm : (int)sm;
        if (runs && rank > best_rank) best = img + pos + ehead, best_kind = kind, best_rank = rank;
        pos += ehead + padded;
    }
    if (!best) return E_NOBINARY;
    return best_kind == 2 ? load_cubin(m, best, dev) : load_ptx(m, (const char *)best, dev);
}

/* ---- modules ---- */
static void free_module(Module *m) {
    for (int i = 0; i < m->nfuncs; i++) free(m->funcs[i].name), free(m->funcs[i].params);
    for (int i = 0; i < m->nglobals; i++) {
        Alloc *a = find_alloc((uintptr_t)m->globals[i].mem, 0);
        if (a) drop_alloc(a);
        free(m->globals[i].name);
    }
    free(m->funcs), free(m->globals), free(m);
}
static CUresult module_load(void **pm, const void *image) {
    NEED_CTX();
    if (!pm || !image) return E_VALUE;
    if (capture_forbids()) return E_CAPTURE_UNSUPPORTED;
    Module *m = calloc(1, sizeof *m);
    if (!m) return E_OOM;
    m->ctx = current;
    CUresult r = !memcmp(image, "\x7f" "ELF", 4) ? load_cubin(m, image, current->device)
               : !memcmp(image, "\x50\xed\x55\xba", 4) ? load_fatbin(m, image, current->device)
               : strstr(image, ".entry") || strstr(image, ".version") ? load_ptx(m, image, current->device)
               : E_IMAGE;
    if (r) return free_module(m), r;
    m->next = modules, modules = m;
    return *pm = m, OK;
}
EXPORT CUresult cuModuleLoadData(void **pm, const void *image) { LOCKED(module_load(pm, image)); }
EXPORT CUresult cuModuleLoadDataEx(void **pm, const void *image, unsigned nopt, int *opts, void **vals) {
    if (nopt && (!opts || !vals)) return E_VALUE;  /* the JIT options are accepted and ignored */
    LOCKED(module_load(pm, image));
}
static Module *find_module(void *h) {
    Module *m = modules;
    while (m && m != h) m = m->next;
    return m;
}
static CUresult module_unload(void *h) {
    NEED_INIT();
    for (Module **pp = &modules; *pp; pp = &(*pp)->next)
        if (*pp == h) { Module *m = *pp; *pp = m->next; free_module(m); return OK; }
    return E_HANDLE;
}
EXPORT CUresult cuModuleUnload(void *h) { LOCKED(module_unload(h)); }
static CUresult get_function(void **pf, void *h, const char *name) {
    NEED_INIT();
    Module *m = find_module(h);
    if (!pf || !name) return E_VALUE;
    if (!m) return E_HANDLE;
    for (int i = 0; i < m->nfuncs; i++) if (!strcmp(m->funcs[i].name, name)) OUT(pf, (void *)&m->funcs[i]);
    return E_NOTFOUND;
}
EXPORT CUresult cuModuleGetFunction(void **pf, void *h, const char *name) { LOCKED(get_function(pf, h, name)); }
static CUresult get_global(CUdeviceptr *dp, size_t *bytes, void *h, const char *name) {
    NEED_INIT();
    Module *m = find_module(h);
    if (!name) return E_VALUE;
    if (!m) return E_HANDLE;
    for (int i = 0; i < m->nglobals; i++)
        if (!strcmp(m->globals[i].name, name)) {  /* either output may be NULL */
            if (dp) *dp = (CUdeviceptr)(uintptr_t)m->globals[i].mem;
            if (bytes) *bytes = m->globals[i].size;
            return OK;
        }
    return E_NOTFOUND;
}
EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dp, size_t *bytes, void *h, const char *name) {
    LOCKED(get_global(dp, bytes, h, name));
}

/* ---- functions and launches ---- */
Func *find_func(void *h) {
    for (Module *m = modules; m; m = m->next)
        if ((char *)h >= (char *)m->funcs && (char *)h < (char *)(m->funcs + m->nfuncs) &&
            ((char *)h - (char *)m->funcs) % sizeof(Func) == 0) return h;
    return NULL;
}
static CUresult func_set(void *h, int attr, int v) {
    NEED_INIT();
    Func *f = find_func(h);
    if (!f) return E_HANDLE;
    if (attr == 8 && v >= 0 && v <= OPTIN_SMEM) f->max_dyn_smem = v;  /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    else if (attr == 9 && v >= -1 && v <= 100) f->carveout = v;      /* PREFERRED_SHARED_MEMORY_CARVEOUT */
    else return E_VALUE;
    return OK;
}
EXPORT CUresult cuFuncSetAttribute(void *h, int attr, int v) { LOCKED(func_set(h, attr, v)); }
static CUresult func_get(int *v, int attr, void *h) {
    NEED_INIT();
    Func *f = find_func(h);
    if (!v || attr < 0 || attr > 15) return E_VALUE;
    if (!f) return E_HANDLE;
    *v = attr == 0 ? 1024 : attr == 4 ? 32 : attr == 5 || attr == 6 ? cc_major * 10 + cc_minor
       : attr == 1 ? (int)env_ll("FAKE_CUDA_STATIC_SMEM", 0)
       : attr == 8 ? f->max_dyn_smem : attr == 9 ? f->carveout : 0;  /* max threads, regs, PTX/binary version */
    return OK;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int attr, void *h) { LOCKED(func_get(v, attr, h)); }

CUresult check_launch(Func *f, const unsigned d[6], unsigned shared, void **params, void **extra) {
    static const unsigned lim[6] = {2147483647u, 65535, 65535, 1024, 1024, 64};
    if (!f || f->mod->ctx != current) return E_HANDLE;
    for (int i = 0; i < 6; i++) if (!d[i] || d[i] > lim[i]) return E_VALUE;
    if ((unsigned long long)d[3] * d[4] * d[5] > 1024 || shared > (unsigned)f->max_dyn_smem) return E_VALUE;
    if (extra || (f->nparams && !params)) return E_VALUE;  /* the fake takes kernelParams only */
    for (int i = 0; i < f->nparams; i++) if (!params[i]) return E_VALUE;
    return OK;
}
unsigned char *pack_params(Func *f, void **params) {
    unsigned char *bytes = calloc(1, (size_t)f->total + 1);
    for (int i = 0; bytes && i < f->nparams; i++)
        memcpy(bytes + f->params[i].offset, params[i], (size_t)f->params[i].size);
    return bytes;
}
CUresult record_launch(Func *f, const unsigned d[6], unsigned shared, void *stream, const unsigned char *bytes) {
    unsigned char *copy = malloc((size_t)f->total + 1);
    char *name = strdup(f->name);
    if (!copy || !name) { free(copy), free(name); return E_OOM; }
    memcpy(copy, bytes, (size_t)f->total + 1);
    Launch *l = &ring[nlaunches++ % RING];
    free(l->name), free(l->bytes);
    *l = (Launch){name, {d[0], d[1], d[2], d[3], d[4], d[5]}, shared, stream, copy, f->total, f->nparams};
    fake_now_ms += 0.01;  /* every launch takes 10 us of fake time */
    return OK;
}
static CUresult launch(void *h, const unsigned d[6], unsigned shared, void *stream, void **params, void **extra) {
    NEED_CTX();
    Func *f = find_func(h);
    CUresult r = check_launch(f, d, shared, params, extra);
    if (r || (r = stream_check(stream)) || (r = (CUresult)env_ll("FAKE_CUDA_FAIL_LAUNCH", 0))) return r;
    int captured;
    r = capture_launch(h, d, shared, stream, params, &captured);
    if (r || captured) return r;
    unsigned char *bytes = pack_params(f, params);
    if (!bytes) return E_OOM;
    r = record_launch(f, d, shared, stream, bytes);
    free(bytes);
    return r;
}
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    const unsigned d[6] = {gx, gy, gz, bx, by, bz};
    LOCKED(launch(f, d, shared, stream, params, extra));
}

/* ---- occupancy and cooperative launches ---- */
static int occupancy(int block_threads) {
    long long n = env_ll("FAKE_CUDA_OCCUPANCY", -1);
    if (n >= 0) return (int)n;
    if (block_threads <= 0) return 0;
    n = 2048 / block_threads;
    return n > 32 ? 32 : (int)n;
}
static CUresult occupancy_query(int *n, void *h, int block_threads, size_t smem) {
    NEED_CTX();
    if (!n || !find_func(h) || block_threads <= 0) return E_VALUE;
    *n = smem > OPTIN_SMEM ? 0 : occupancy(block_threads);
    return OK;
}
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *f, int block_threads, size_t smem) {
    LOCKED(occupancy_query(n, f, block_threads, smem));
}
static CUresult cooperative(void *h, const unsigned d[6], unsigned shared, void *stream, void **params) {
    NEED_CTX();
    if (env_ll("FAKE_CUDA_NO_COOPERATIVE", 0)) return 801;  /* CUDA_ERROR_NOT_SUPPORTED */
    Func *f = find_func(h);
    CUresult r = check_launch(f, d, shared, params, NULL);
    if (r || (r = stream_check(stream))) return r;
    const unsigned long long blocks = (unsigned long long)d[0] * d[1] * d[2];
    if (blocks > (unsigned long long)occupancy((int)(d[3] * d[4] * d[5])) * 132) return 720;
    if ((r = (CUresult)env_ll("FAKE_CUDA_FAIL_LAUNCH", 0))) return r;
    unsigned char *bytes = pack_params(f, params);
    if (!bytes) return E_OOM;
    r = record_launch(f, d, shared, stream, bytes);
    free(bytes);
    if (!r) ring[(nlaunches - 1) % RING].cooperative = 1;
    return r;
}
EXPORT CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                          unsigned by, unsigned bz, unsigned shared, void *stream,
                                          void **params) {
    const unsigned d[6] = {gx, gy, gz, bx, by, bz};
    LOCKED(cooperative(f, d, shared, stream, params));
}

/* ---- texture objects, CUDA arrays and 3D copies ---- */
#include "fake_textures.c"

/* ---- cuGetProcAddress: base names ("cuMemAlloc") to the version current at the
 * asked API version, as the real driver maps them (VENTRY: that entry from
 * version `since` on; ENTRY: the only one, from any version) ---- */
#define VENTRY(base, since, fn) {base, since, (void *)fn}
#define ENTRY(base, fn) VENTRY(base, 0, fn)
static const struct { const char *name; int since; void *fn; } procs[] = {
    ENTRY("cuInit", cuInit), ENTRY("cuDriverGetVersion", cuDriverGetVersion),
    ENTRY("cuGetErrorName", cuGetErrorName), ENTRY("cuGetErrorString", cuGetErrorString),
    ENTRY("cuDeviceGetCount", cuDeviceGetCount), ENTRY("cuDeviceGet", cuDeviceGet),
    ENTRY("cuDeviceGetName", cuDeviceGetName), ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute),
    ENTRY("cuDeviceTotalMem", cuDeviceTotalMem_v2), ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2), ENTRY("cuCtxSetCurrent", cuCtxSetCurrent),
    ENTRY("cuCtxGetCurrent", cuCtxGetCurrent), ENTRY("cuCtxGetDevice", cuCtxGetDevice),
    ENTRY("cuCtxSynchronize", cuCtxSynchronize), ENTRY("cuModuleLoadData", cuModuleLoadData),
    ENTRY("cuModuleLoadDataEx", cuModuleLoadDataEx), ENTRY("cuModuleUnload", cuModuleUnload),
    ENTRY("cuModuleGetFunction", cuModuleGetFunction), ENTRY("cuModuleGetGlobal", cuModuleGetGlobal_v2),
    ENTRY("cuFuncSetAttribute", cuFuncSetAttribute), ENTRY("cuFuncGetAttribute", cuFuncGetAttribute),
    ENTRY("cuLaunchKernel", cuLaunchKernel), ENTRY("cuMemAlloc", cuMemAlloc_v2), ENTRY("cuMemFree", cuMemFree_v2),
    VENTRY("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
    ENTRY("cuOccupancyMaxActiveBlocksPerMultiprocessor", cuOccupancyMaxActiveBlocksPerMultiprocessor),
    ENTRY("cuMemcpyHtoD", cuMemcpyHtoD_v2), ENTRY("cuMemcpyDtoH", cuMemcpyDtoH_v2),
    ENTRY("cuMemcpyDtoD", cuMemcpyDtoD_v2), ENTRY("cuMemsetD8", cuMemsetD8_v2),
    ENTRY("cuPointerGetAttribute", cuPointerGetAttribute),
    /* fake_textures.c */
    VENTRY("cuArray3DCreate", 3020, cuArray3DCreate_v2), ENTRY("cuArrayDestroy", cuArrayDestroy),
    VENTRY("cuMemcpy3D", 3020, cuMemcpy3D_v2), VENTRY("cuTexObjectCreate", 5000, cuTexObjectCreate),
    VENTRY("cuTexObjectDestroy", 5000, cuTexObjectDestroy),
    /* fake_streams.c */
    VENTRY("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    ENTRY("cuStreamEndCapture", cuStreamEndCapture), ENTRY("cuStreamIsCapturing", cuStreamIsCapturing),
    ENTRY("cuStreamCreate", cuStreamCreate), ENTRY("cuStreamDestroy", cuStreamDestroy_v2),
    ENTRY("cuStreamSynchronize", cuStreamSynchronize), ENTRY("cuStreamQuery", cuStreamQuery),
    VENTRY("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    ENTRY("cuEventCreate", cuEventCreate), ENTRY("cuEventDestroy", cuEventDestroy_v2),
    ENTRY("cuEventRecord", cuEventRecord), ENTRY("cuEventSynchronize", cuEventSynchronize),
    ENTRY("cuEventQuery", cuEventQuery), ENTRY("cuEventElapsedTime", cuEventElapsedTime),
    VENTRY("cuGraphCreate", 10000, cuGraphCreate), VENTRY("cuGraphDestroy", 10000, cuGraphDestroy),
    VENTRY("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),          /* CUDA_KERNEL_NODE_PARAMS (v1) */
    VENTRY("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),       /* CUDA_KERNEL_NODE_PARAMS_v2 */
    VENTRY("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams),
    VENTRY("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2),
    VENTRY("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams),
    VENTRY("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
    VENTRY("cuGraphAddEventWaitNode", 11010, cuGraphAddEventWaitNode),
    VENTRY("cuGraphInstantiate", 10000, cuGraphInstantiate),              /* (exec*, graph, errNode*, log, size) */
    VENTRY("cuGraphInstantiate", 11000, cuGraphInstantiate_v2),
    VENTRY("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),     /* (exec*, graph, flags) */
    VENTRY("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    VENTRY("cuGraphLaunch", 10000, cuGraphLaunch), VENTRY("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
};
/* symbolStatus: 0 CU_GET_PROC_ADDRESS_SUCCESS, 1 SYMBOL_NOT_FOUND, 2 VERSION_NOT_SUFFICIENT (the entry
 * exists from a later version on). A version above the driver's -> 1 (invalid value). */
EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, int *status) {
    if (status) *status = 1;
    if (!sym || !pfn || flags > 2 || version > env_ll("FAKE_CUDA_DRIVER_VERSION", 12080)) return E_VALUE;
    *pfn = NULL;
    int best = -1, later = 0;
    if (!strcmp(sym, "cuGetProcAddress")) *pfn = (void *)cuGetProcAddress_v2;
    for (size_t i = 0; i < sizeof procs / sizeof *procs && !*pfn; i++) {
        if (strcmp(procs[i].name, sym)) continue;
        if (procs[i].since > version) later = 1;
        else if (best < 0 || procs[i].since > procs[best].since) best = (int)i;
    }
    if (best >= 0) *pfn = procs[best].fn;
    if (status) *status = *pfn ? 0 : later ? 2 : 1;
    return *pfn ? OK : E_NOTFOUND;
}
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(sym, pfn, version, flags, NULL);
}

/* ---- test-only exports ---- */
static int count(int what) {  /* 0: launches since load or reset, 1: live cuMemAlloc blocks, 2: modules */
    pthread_mutex_lock(&lock);
    int n = what == 0 ? nlaunches : 0;
    for (int i = 0; what == 1 && i < nallocs; i++) n += allocs[i].user;
    for (Module *m = modules; what == 2 && m; m = m->next) n++;
    pthread_mutex_unlock(&lock);
    return n;
}
EXPORT int fake_cuda_launch_count(void) { return count(0); }
EXPORT int fake_cuda_alloc_count(void) { return count(1); }  /* module globals are not counted */
EXPORT int fake_cuda_module_count(void) { return count(2); }
/* The launch `back` launches before the latest (0 = latest). Every output may
 * be NULL; dims gets grid x,y,z then block x,y,z; min(cap, nbytes) parameter
 * bytes are copied and *nbytes gets the full size. Returns 0, or -1 when that
 * launch is not (or no longer) in the ring. */
EXPORT int fake_cuda_get_launch(int back, char *name, int name_len, unsigned dims[6], unsigned *shared,
                                void **stream, unsigned char *param_bytes, int cap, int *nbytes, int *nparams) {
    pthread_mutex_lock(&lock);
    Launch *l = back >= 0 && back < RING && back < nlaunches ? &ring[(nlaunches - 1 - back) % RING] : NULL;
    if (l) {
        if (name && name_len > 0) snprintf(name, (size_t)name_len, "%s", l->name);
        if (dims) memcpy(dims, l->dims, sizeof l->dims);
        if (shared) *shared = l->shared;
        if (stream) *stream = l->stream;
        if (param_bytes && cap > 0) memcpy(param_bytes, l->bytes, (size_t)(cap < l->nbytes ? cap : l->nbytes));
        if (nbytes) *nbytes = l->nbytes;
        if (nparams) *nparams = l->nparams;
    }
    pthread_mutex_unlock(&lock);
    return l ? 0 : -1;
}
EXPORT int fake_cuda_last_launch(char *name, int name_len, unsigned dims[6], unsigned *shared, void **stream,
                                 unsigned char *param_bytes, int cap, int *nbytes, int *nparams) {
    return fake_cuda_get_launch(0, name, name_len, dims, shared, stream, param_bytes, cap, nbytes, nparams);
}
/* 1 if the launch `back` launches before the latest was cooperative, 0 if not,
 * -1 when that launch is not (or no longer) in the ring. */
EXPORT int fake_cuda_launch_cooperative(int back) {
    pthread_mutex_lock(&lock);
    int r = back >= 0 && back < RING && back < nlaunches ? ring[(nlaunches - 1 - back) % RING].cooperative : -1;
    pthread_mutex_unlock(&lock);
    return r;
}
EXPORT void fake_cuda_reset(void) {  /* forgets the launches; modules, memory and contexts stay */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < RING; i++) free(ring[i].name), free(ring[i].bytes), ring[i] = (Launch){0};
    nlaunches = 0;
    pthread_mutex_unlock(&lock);
}
static int layout(void *h, int *a, int *b, int cap, int offsets) {
    pthread_mutex_lock(&lock);
    Func *f = find_func(h);
    int n = f ? f->nparams : -1;
    for (int i = 0; i < n && i < cap; i++) {
        if (a) a[i] = offsets ? f->params[i].offset : f->params[i].size;
        if (b) b[i] = f->params[i].align;
    }
    pthread_mutex_unlock(&lock);
    return n;
}
/* A CUfunction's parameter count (-1 if it is not one), filling up to cap
 * sizes and alignments (a cubin's alignments are inferred: see cubin_params). */
EXPORT int fake_cuda_param_layout(void *function, int *sizes, int *aligns, int cap) {
    return layout(function, sizes, aligns, cap, 0);
}
EXPORT int fake_cuda_param_offsets(void *function, int *offsets, int cap) {
    return layout(function, offsets, NULL, cap, 1);
}

/* ---- streams, events, graphs: one translation unit with this file ---- */
#include "fake_streams.c"

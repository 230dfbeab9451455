/* null_driver.c: a null CUDA driver (libcuda.so.1) for measuring what each
 * Python launcher adds above the driver's launch entry, on any machine.
 *
 * Built at bench time by the host C compiler (quicklaunch.bench.cuda.
 * null_overhead.build) into a private temporary folder, and found only by
 * the benchmark's own child processes (QUICKLAUNCH_LIBCUDA, LD_LIBRARY_PATH
 * and NUMBA_CUDA_DRIVER are set in their environment alone).
 *
 * The entries have the driver's signatures (cuda.h, CUDA 12/13; built with
 * -DQL_NULL_WITH_CUDA_H where cuda.h is at hand, the compiler checks every
 * definition against the real prototype) and CUresult numbering. One device
 * (sm_90-like), one primary context, current per thread. "Device" memory is
 * host memory (copies are memcpy), modules keep their image so
 * cuModuleGetFunction / cuLibraryGetKernel refuse a name the image lacks.
 *
 * cuLaunchKernel / cuLaunchKernelEx validate their arguments as the driver
 * does (a current context; a function handle from this driver; grid and
 * block dimensions nonzero and within the device's limits; dynamic shared
 * memory within the function's limit; kernelParams and extra not both
 * given, extra well formed) and return. Nothing is recorded per launch: the
 * one exception is the check switch, ql_null_capture_arm(sizes, n), which
 * makes the next launch copy its function, grid, block, shared bytes,
 * stream and parameter bytes (n parameters of the given sizes, laid out at
 * their natural alignment as the kernel ABI does) once; ql_null_capture_get
 * reads it back. cuGraphAddKernelNode captures its node the same way.
 *
 * cuGetExportTable returns CUDA_ERROR_NOT_FOUND: NVRTC asks for it when it
 * finds a driver (and copes), while the CUDA runtime (libcudart: CuPy,
 * torch) needs the private tables and cannot run on this driver.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef QL_NULL_WITH_CUDA_H
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUlinkState_st *CUlinkState;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUpointer_attribute;
typedef int CUjit_option;
typedef int CUjitInputType;
typedef int CUlibraryOption;
typedef int CUdriverProcAddressQueryResult;
typedef struct CUuuid_st { char bytes[16]; } CUuuid;
typedef struct CUipcMemHandle_st { char reserved[64]; } CUipcMemHandle;
typedef struct CUlaunchAttribute_st { int id; char pad[4]; char value[64]; } CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUkernel kern;
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;
#endif

#define EXPORT __attribute__((visibility("default")))
#define OK 0
#define E_VALUE 1
#define E_MEMORY 2
#define E_NOINIT 3
#define E_NODEV 100
#define E_DEVICE 101
#define E_IMAGE 200
#define E_CONTEXT 201
#define E_HANDLE 400
#define E_NOTFOUND 500
#define E_NOTREADY 600
#define E_NOTSUPPORTED 801

#define MAGIC_FUNC 0x716c4e46u   /* "qlNF" */
#define MAGIC_CTX 0x716c4e43u
#define MAX_BLOCK_THREADS 1024u
#define DEFAULT_DYN_SHARED 49152
#define MAX_DYN_SHARED_OPTIN 232448

/* ------------------------------------------------------------ objects */
struct CUctx_st { unsigned magic; int device; };
struct CUfunc_st {                      /* also what a CUkernel points to */
    unsigned magic;
    int max_dyn_shared;
    char name[];               /* as long as the kernel's (mangled) name */
};
struct CUmod_st { unsigned char *image; size_t size; };
struct CUlib_st { struct CUmod_st mod; };
struct CUstream_st { int priority; unsigned flags; };
struct CUevent_st { unsigned flags; };
struct CUgraph_st { int nodes; };
struct CUgraphExec_st { int nodes; };
struct CUlinkState_st { unsigned char *data; size_t size; };

static int initialised;
static struct CUctx_st primary = {MAGIC_CTX, 0};
static __thread CUcontext current;
static __thread CUcontext stack[16];
static __thread int depth;

/* ------------------------------------------------------------ the check switch */
struct ql_null_capture {
    char name[256];
    void *func;
    unsigned grid[3], block[3], shared;
    void *stream;
    unsigned nbytes;
    int entry;                 /* 1 cuLaunchKernel, 2 cuLaunchKernelEx, 3 graph node */
    unsigned char bytes[4096];
};
static volatile int armed;
static unsigned arm_sizes[256];
static unsigned arm_n;
static int captured;
static struct ql_null_capture capture;

EXPORT int ql_null_capture_arm(const unsigned *sizes, unsigned n) {
    if (n > 256) return E_VALUE;
    unsigned total = 0;
    for (unsigned i = 0; i < n; ++i) {
        if (sizes[i] == 0 || sizes[i] > 4096) return E_VALUE;
        total += sizes[i] + 8;
    }
    if (total > sizeof capture.bytes) return E_VALUE;
    memcpy(arm_sizes, sizes, n * sizeof *sizes);
    arm_n = n;
    captured = 0;
    memset(&capture, 0, sizeof capture);
    armed = 1;
    return OK;
}

EXPORT void ql_null_capture_disarm(void) { armed = 0; }

EXPORT int ql_null_capture_get(struct ql_null_capture *out) {
    if (!captured) return 0;
    *out = capture;
    return 1;
}

EXPORT unsigned ql_null_capture_size(void) { return sizeof(struct ql_null_capture); }

static void take(int entry, struct CUfunc_st *f, const unsigned d[6], unsigned shared,
                 void *stream, void **params, void **extra) {
    armed = 0;
    strncpy(capture.name, f->name, sizeof capture.name - 1);   /* capture is zeroed */
    capture.func = f;
    memcpy(capture.grid, d, 3 * sizeof *d);
    memcpy(capture.block, d + 3, 3 * sizeof *d);
    capture.shared = shared;
    capture.stream = stream;
    capture.entry = entry;
    unsigned off = 0;
    if (params) {
        for (unsigned i = 0; i < arm_n; ++i) {
            unsigned size = arm_sizes[i], align = size >= 8 ? 8 : size;
            while (align & (align - 1)) align &= align - 1;   /* a power of two */
            off = (off + align - 1) / align * align;
            memcpy(capture.bytes + off, params[i], size);
            off += size;
        }
    } else if (extra) {
        void *buf = NULL;
        size_t size = 0;
        for (int i = 0; extra[i]; i += 2) {
            if (extra[i] == (void *)1) buf = extra[i + 1];
            if (extra[i] == (void *)2) size = *(size_t *)extra[i + 1];
        }
        if (size > sizeof capture.bytes) size = sizeof capture.bytes;
        if (buf) memcpy(capture.bytes, buf, size);
        off = (unsigned)size;
    }
    capture.nbytes = off;
    captured = 1;
}

/* ------------------------------------------------------------ launch validation */
static CUresult check_launch(CUfunction fn, const unsigned d[6], unsigned shared,
                             void **params, void **extra) {
    if (!initialised) return E_NOINIT;
    if (!current) return E_CONTEXT;
    struct CUfunc_st *f = (struct CUfunc_st *)fn;
    if (!f || f->magic != MAGIC_FUNC) return E_HANDLE;
    if (!d[0] || !d[1] || !d[2] || !d[3] || !d[4] || !d[5]) return E_VALUE;
    if (d[0] > 0x7fffffffu || d[1] > 65535u || d[2] > 65535u) return E_VALUE;
    if (d[3] > 1024u || d[4] > 1024u || d[5] > 64u) return E_VALUE;
    if ((unsigned long long)d[3] * d[4] * d[5] > MAX_BLOCK_THREADS) return E_VALUE;
    if ((int)shared > f->max_dyn_shared || shared > MAX_DYN_SHARED_OPTIN) return E_VALUE;
    if (params && extra) return E_VALUE;
    if (extra) {
        int have_buf = 0, have_size = 0, i = 0;
        for (; extra[i]; i += 2) {
            if (extra[i] == (void *)1) have_buf = 1;
            else if (extra[i] == (void *)2) have_size = 1;
            else return E_VALUE;
            if (!extra[i + 1]) return E_VALUE;
        }
        if (!have_buf || !have_size) return E_VALUE;
    }
    return OK;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                               unsigned int gridDimZ, unsigned int blockDimX,
                               unsigned int blockDimY, unsigned int blockDimZ,
                               unsigned int sharedMemBytes, CUstream hStream,
                               void **kernelParams, void **extra) {
    const unsigned d[6] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ};
    CUresult st = check_launch(f, d, sharedMemBytes, kernelParams, extra);
    if (st == OK && armed)
        take(1, (struct CUfunc_st *)f, d, sharedMemBytes, hStream, kernelParams, extra);
    return st;
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                 void **kernelParams, void **extra) {
    if (!config) return E_VALUE;
    if (config->numAttrs && !config->attrs) return E_VALUE;
    const unsigned d[6] = {config->gridDimX, config->gridDimY, config->gridDimZ,
                           config->blockDimX, config->blockDimY, config->blockDimZ};
    CUresult st = check_launch(f, d, config->sharedMemBytes, kernelParams, extra);
    if (st == OK && armed)
        take(2, (struct CUfunc_st *)f, d, config->sharedMemBytes, config->hStream,
             kernelParams, extra);
    return st;
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void **kernelParams) {
    return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                          sharedMemBytes, hStream, kernelParams, NULL);
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                            int blockSize,
                                                            size_t dynamicSMemSize) {
    (void)dynamicSMemSize;
    if (!numBlocks || !func || blockSize <= 0) return E_VALUE;
    int n = 2048 / blockSize;
    *numBlocks = n > 32 ? 32 : (n < 1 ? 1 : n);
    return OK;
}

/* ------------------------------------------------------------ init, errors */
EXPORT CUresult cuInit(unsigned int Flags) {
    if (Flags) return E_VALUE;
    initialised = 1;
    return OK;
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion) {
    if (!driverVersion) return E_VALUE;
    *driverVersion = 13000;
    return OK;
}

static const struct { int code; const char *name, *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

static CUresult error_lookup(CUresult e, const char **out, int text) {
    if (!out) return E_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof *errors; ++i)
        if (errors[i].code == (int)e) {
            *out = text ? errors[i].text : errors[i].name;
            return OK;
        }
    *out = NULL;
    return E_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
    return error_lookup(error, pStr, 0);
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
    return error_lookup(error, pStr, 1);
}

EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
    (void)pExportTableId;
    if (ppExportTable) *ppExportTable = NULL;
    return E_NOTFOUND;
}

/* ------------------------------------------------------------ devices */
EXPORT CUresult cuDeviceGetCount(int *count) {
    if (!initialised) return E_NOINIT;
    if (!count) return E_VALUE;
    *count = 1;
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!initialised) return E_NOINIT;
    if (!device) return E_VALUE;
    if (ordinal != 0) return E_DEVICE;
    *device = 0;
    return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (!initialised) return E_NOINIT;
    if (dev != 0) return E_DEVICE;
    if (!name || len <= 0) return E_VALUE;
    strncpy(name, "quicklaunch null CUDA driver (sm_90)", (size_t)len - 1);
    name[len - 1] = '\0';
    return OK;
}

static int attribute(int attrib) {
    switch (attrib) {
    case 1: return 1024;            /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: return 1024;    /* MAX_BLOCK_DIM_X, _Y */
    case 4: return 64;              /* MAX_BLOCK_DIM_Z */
    case 5: return 0x7fffffff;      /* MAX_GRID_DIM_X */
    case 6: case 7: return 65535;   /* MAX_GRID_DIM_Y, _Z */
    case 8: return 49152;           /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 9: return 65536;           /* TOTAL_CONSTANT_MEMORY */
    case 10: return 32;             /* WARP_SIZE */
    case 11: return 2147483647;     /* MAX_PITCH */
    case 12: return 65536;          /* MAX_REGISTERS_PER_BLOCK */
    case 13: return 1980000;        /* CLOCK_RATE */
    case 14: return 512;            /* TEXTURE_ALIGNMENT */
    case 15: return 1;              /* GPU_OVERLAP */
    case 16: return 132;            /* MULTIPROCESSOR_COUNT */
    case 17: return 0;              /* KERNEL_EXEC_TIMEOUT */
    case 18: return 0;              /* INTEGRATED */
    case 19: return 1;              /* CAN_MAP_HOST_MEMORY */
    case 20: return 0;              /* COMPUTE_MODE default */
    case 31: return 1;              /* CONCURRENT_KERNELS */
    case 36: return 2619000;        /* MEMORY_CLOCK_RATE */
    case 37: return 5120;           /* GLOBAL_MEMORY_BUS_WIDTH */
    case 38: return 52428800;       /* L2_CACHE_SIZE */
    case 39: return 2048;           /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 40: return 2;              /* ASYNC_ENGINE_COUNT */
    case 41: return 1;              /* UNIFIED_ADDRESSING */
    case 75: return 9;              /* COMPUTE_CAPABILITY_MAJOR */
    case 76: return 0;              /* COMPUTE_CAPABILITY_MINOR */
    case 81: return 233472;         /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    case 82: return 65536;          /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 95: return 1;              /* COOPERATIVE_LAUNCH */
    case 97: return MAX_DYN_SHARED_OPTIN;  /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    case 106: return 32;            /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    default: return 0;              /* everything else (memory pools, IPC, ...) off */
    }
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    if (!initialised) return E_NOINIT;
    if (!pi) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    *pi = attribute((int)attrib);
    return OK;
}

EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
    if (!major || !minor) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    *major = 9;
    *minor = 0;
    return OK;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (!bytes) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    *bytes = (size_t)80 << 30;
    return OK;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    if (!uuid) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    memset(uuid, 0, sizeof *uuid);
    memcpy(uuid, "ql-null-driver\0", 15);
    return OK;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    if (!pciBusId || len <= 0) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    strncpy(pciBusId, "0000:00:00.0", (size_t)len - 1);
    pciBusId[len - 1] = '\0';
    return OK;
}

/* ------------------------------------------------------------ contexts */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    if (!initialised) return E_NOINIT;
    if (!pctx) return E_VALUE;
    if (dev != 0) return E_DEVICE;
    *pctx = &primary;
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return dev ? E_DEVICE : OK; }

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    if (dev != 0) return E_DEVICE;
    if (!flags || !active) return E_VALUE;
    *flags = 0;
    *active = 1;
    return OK;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (!initialised) return E_NOINIT;
    if (ctx && ctx->magic != MAGIC_CTX) return E_CONTEXT;
    current = ctx;
    return OK;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
    if (!initialised) return E_NOINIT;
    if (!pctx) return E_VALUE;
    *pctx = current;
    return OK;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    if (!ctx || ctx->magic != MAGIC_CTX) return E_CONTEXT;
    if (depth >= 16) return E_MEMORY;
    stack[depth++] = current;
    current = ctx;
    return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    if (!current) return E_CONTEXT;
    if (pctx) *pctx = current;
    current = depth ? stack[--depth] : NULL;
    return OK;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
    if (!device) return E_VALUE;
    if (!current) return E_CONTEXT;
    *device = 0;
    return OK;
}

EXPORT CUresult cuCtxSynchronize(void) { return current ? OK : E_CONTEXT; }

EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return OK;
}

EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
    (void)ctx;
    if (!version) return E_VALUE;
    *version = 12000;
    return OK;
}

EXPORT CUresult cuCtxGetFlags(unsigned int *flags) {
    if (!flags) return E_VALUE;
    *flags = 0;
    return OK;
}

EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
    if (!ctxId) return E_VALUE;
    if (!ctx && !(ctx = current)) return E_CONTEXT;
    *ctxId = 1;
    return OK;
}

/* ------------------------------------------------------------ memory (host memory) */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    if (!current) return E_CONTEXT;
    if (!dptr || !bytesize) return E_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 256, bytesize)) return E_MEMORY;
    memset(p, 0, bytesize);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return OK;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    free((void *)(uintptr_t)dptr);
    return OK;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    if (!free_bytes || !total) return E_VALUE;
    *total = (size_t)80 << 30;
    *free_bytes = (size_t)79 << 30;
    return OK;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    if (ByteCount) memcpy((void *)(uintptr_t)dstDevice, srcHost, ByteCount);
    return OK;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    if (ByteCount) memcpy(dstHost, (const void *)(uintptr_t)srcDevice, ByteCount);
    return OK;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    if (ByteCount) memmove((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice,
                           ByteCount);
    return OK;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                     size_t ByteCount, CUstream hStream) {
    (void)hStream;
    return cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                     CUstream hStream) {
    (void)hStream;
    return cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
    if (N) memset((void *)(uintptr_t)dstDevice, uc, N);
    return OK;
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute_,
                                      CUdeviceptr ptr) {
    if (!data) return E_VALUE;
    switch ((int)attribute_) {
    case 1: *(CUcontext *)data = &primary; return OK;          /* CONTEXT */
    case 2: *(unsigned *)data = 2; return OK;                  /* MEMORY_TYPE: DEVICE */
    case 3: *(CUdeviceptr *)data = ptr; return OK;             /* DEVICE_POINTER */
    case 9: *(int *)data = 0; return OK;                       /* DEVICE_ORDINAL */
    default: return E_VALUE;
    }
}

/* IPC: not supported (numba-cuda's ctypes binding looks the entry up at init) */
EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                      unsigned int Flags) {
    (void)pdptr; (void)handle; (void)Flags;
    return E_NOTSUPPORTED;
}

/* ------------------------------------------------------------ modules, libraries */
static size_t image_size(const void *image) {
    const unsigned char *p = image;
    if (!memcmp(p, "\x7f" "ELF", 4) && p[4] == 2) {      /* ELF64 cubin */
        uint64_t shoff, phoff;
        uint16_t shentsize, shnum, phentsize, phnum;
        memcpy(&phoff, p + 0x20, 8);
        memcpy(&shoff, p + 0x28, 8);
        memcpy(&phentsize, p + 0x36, 2);
        memcpy(&phnum, p + 0x38, 2);
        memcpy(&shentsize, p + 0x3a, 2);
        memcpy(&shnum, p + 0x3c, 2);
        size_t a = shoff + (size_t)shentsize * shnum, b = phoff + (size_t)phentsize * phnum;
        return a > b ? a : b;
    }
    uint32_t magic;
    memcpy(&magic, p, 4);
    if (magic == 0xBA55ED50u) {                           /* fatbin: no names to check */
        return 0;
    }
    return strlen((const char *)p) + 1;                    /* PTX text */
}

static CUresult load_image(struct CUmod_st *m, const void *image) {
    if (!image) return E_VALUE;
    size_t size = image_size(image);
    m->size = size;
    m->image = NULL;
    if (size) {
        if (!(m->image = malloc(size))) return E_MEMORY;
        memcpy(m->image, image, size);
    }
    return OK;
}

static CUresult find_function(struct CUmod_st *m, const char *name, CUfunction *out) {
    if (!out || !name) return E_VALUE;
    size_t len = strlen(name);
    if (!len) return E_VALUE;
    if (m->image && !memmem(m->image, m->size, name, len)) return E_NOTFOUND;
    struct CUfunc_st *f = calloc(1, sizeof *f + len + 1);
    if (!f) return E_MEMORY;
    f->magic = MAGIC_FUNC;
    f->max_dyn_shared = DEFAULT_DYN_SHARED;
    memcpy(f->name, name, len + 1);
    *out = f;
    return OK;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    if (!current) return E_CONTEXT;
    if (!module) return E_VALUE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m) return E_MEMORY;
    CUresult st = load_image(m, image);
    if (st) { free(m); return st; }
    *module = m;
    return OK;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                   CUjit_option *options, void **optionValues) {
    (void)numOptions; (void)options; (void)optionValues;
    return cuModuleLoadData(module, image);
}

EXPORT CUresult cuModuleUnload(CUmodule hmod) {
    if (!hmod) return E_HANDLE;
    free(hmod->image);
    free(hmod);
    return OK;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    if (!hmod) return E_HANDLE;
    return find_function(hmod, name, hfunc);
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                     const char *name) {
    if (!hmod || !name) return E_VALUE;
    static unsigned char globals[1 << 16];
    if (hmod->image && !memmem(hmod->image, hmod->size, name, strlen(name))) return E_NOTFOUND;
    if (dptr) *dptr = (CUdeviceptr)(uintptr_t)globals;
    if (bytes) *bytes = 8;
    return OK;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                  void **jitOptionsValues, unsigned int numJitOptions,
                                  CUlibraryOption *libraryOptions,
                                  void **libraryOptionValues, unsigned int numLibraryOptions) {
    (void)jitOptions; (void)jitOptionsValues; (void)numJitOptions;
    (void)libraryOptions; (void)libraryOptionValues; (void)numLibraryOptions;
    if (!initialised) return E_NOINIT;
    if (!library) return E_VALUE;
    struct CUlib_st *lib = calloc(1, sizeof *lib);
    if (!lib) return E_MEMORY;
    CUresult st = load_image(&lib->mod, code);
    if (st) { free(lib); return st; }
    *library = lib;
    return OK;
}

EXPORT CUresult cuLibraryUnload(CUlibrary library) {
    if (!library) return E_HANDLE;
    free(library->mod.image);
    free(library);
    return OK;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    if (!library) return E_HANDLE;
    return find_function(&library->mod, name, (CUfunction *)(void *)pKernel);
}

EXPORT CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library) {
    if (!pMod || !library) return E_VALUE;
    *pMod = &library->mod;
    return OK;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    if (!pFunc || !kernel) return E_VALUE;
    *pFunc = (CUfunction)(void *)kernel;
    return OK;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc) {
    if (!name || !hfunc) return E_VALUE;
    *name = ((struct CUfunc_st *)(void *)hfunc)->name;
    return OK;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc) {
    if (!name || !hfunc) return E_VALUE;
    *name = hfunc->name;
    return OK;
}

static int func_attribute(struct CUfunc_st *f, int attrib) {
    switch (attrib) {
    case 0: return 1024;                                   /* MAX_THREADS_PER_BLOCK */
    case 4: return 16;                                     /* NUM_REGS */
    case 5: return 90;                                     /* PTX_VERSION */
    case 6: return 90;                                     /* BINARY_VERSION */
    case 8: return f->max_dyn_shared;                      /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
    default: return 0;
    }
}

EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    if (!pi) return E_VALUE;
    if (!hfunc || hfunc->magic != MAGIC_FUNC) return E_HANDLE;
    *pi = func_attribute(hfunc, (int)attrib);
    return OK;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    if (!hfunc || hfunc->magic != MAGIC_FUNC) return E_HANDLE;
    if ((int)attrib == 8) {
        if (value < 0 || value > MAX_DYN_SHARED_OPTIN) return E_VALUE;
        hfunc->max_dyn_shared = value;
    }
    return OK;
}

EXPORT CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                     CUdevice dev) {
    if (dev != 0) return E_DEVICE;
    return cuFuncGetAttribute(pi, attrib, (CUfunction)(void *)kernel);
}

EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                     CUdevice dev) {
    if (dev != 0) return E_DEVICE;
    return cuFuncSetAttribute((CUfunction)(void *)kernel, attrib, val);
}

/* linking (numba-cuda may link PTX through the driver): the linked "cubin" is
 * the inputs concatenated, so their kernel names are still found */
EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                                void **optionValues, CUlinkState *stateOut) {
    (void)numOptions; (void)options; (void)optionValues;
    if (!stateOut) return E_VALUE;
    *stateOut = calloc(1, sizeof(struct CUlinkState_st));
    return *stateOut ? OK : E_MEMORY;
}

EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
                                 size_t size, const char *name, unsigned int numOptions,
                                 CUjit_option *options, void **optionValues) {
    (void)type; (void)name; (void)numOptions; (void)options; (void)optionValues;
    if (!state || !data) return E_VALUE;
    unsigned char *p = realloc(state->data, state->size + size + 1);
    if (!p) return E_MEMORY;
    memcpy(p + state->size, data, size);
    state->size += size;
    for (size_t i = 0; i < state->size; ++i) if (!p[i]) p[i] = ' ';   /* one text */
    p[state->size] = '\0';
    state->data = p;
    return OK;
}

EXPORT CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
    if (!state || !cubinOut) return E_VALUE;
    *cubinOut = state->data;
    if (sizeOut) *sizeOut = state->size + 1;
    return OK;
}

EXPORT CUresult cuLinkDestroy(CUlinkState state) {
    if (!state) return E_HANDLE;
    free(state->data);
    free(state);
    return OK;
}

/* ------------------------------------------------------------ streams, events */
EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    if (!current) return E_CONTEXT;
    if (!phStream) return E_VALUE;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) return E_MEMORY;
    s->flags = Flags;
    *phStream = s;
    return OK;
}

EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
    CUresult st = cuStreamCreate(phStream, flags);
    if (st == OK) (*phStream)->priority = priority;
    return st;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
    if (!hStream || (uintptr_t)hStream <= 2) return E_HANDLE;
    free(hStream);
    return OK;
}

EXPORT CUresult cuStreamQuery(CUstream hStream) { (void)hStream; return OK; }
EXPORT CUresult cuStreamSynchronize(CUstream hStream) { (void)hStream; return OK; }

EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    (void)hStream; (void)Flags;
    return hEvent ? OK : E_HANDLE;
}

EXPORT CUresult cuStreamGetPriority(CUstream hStream, int *priority) {
    if (!priority) return E_VALUE;
    *priority = (uintptr_t)hStream > 2 ? hStream->priority : 0;
    return OK;
}

EXPORT CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags) {
    if (!flags) return E_VALUE;
    *flags = (uintptr_t)hStream > 2 ? hStream->flags : 0;
    return OK;
}

EXPORT CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
    (void)hStream;
    if (!pctx) return E_VALUE;
    *pctx = &primary;
    return OK;
}

EXPORT CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId) {
    if (!streamId) return E_VALUE;
    *streamId = (unsigned long long)(uintptr_t)hStream;
    return OK;
}

EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    if (!current) return E_CONTEXT;
    if (!phEvent) return E_VALUE;
    struct CUevent_st *e = calloc(1, sizeof *e);
    if (!e) return E_MEMORY;
    e->flags = Flags;
    *phEvent = e;
    return OK;
}

EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
    if (!hEvent) return E_HANDLE;
    free(hEvent);
    return OK;
}

EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    (void)hStream;
    return hEvent ? OK : E_HANDLE;
}

EXPORT CUresult cuEventSynchronize(CUevent hEvent) { return hEvent ? OK : E_HANDLE; }
EXPORT CUresult cuEventQuery(CUevent hEvent) { return hEvent ? OK : E_HANDLE; }

EXPORT CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    if (!pMilliseconds) return E_VALUE;
    if (!hStart || !hEnd) return E_HANDLE;
    *pMilliseconds = 0.0f;
    return OK;
}

EXPORT CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return cuEventElapsedTime(pMilliseconds, hStart, hEnd);
}

/* ------------------------------------------------------------ graphs */
EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
    if (!phGraph || flags) return E_VALUE;
    *phGraph = calloc(1, sizeof(struct CUgraph_st));
    return *phGraph ? OK : E_MEMORY;
}

EXPORT CUresult cuGraphDestroy(CUgraph hGraph) {
    if (!hGraph) return E_VALUE;
    free(hGraph);
    return OK;
}

static struct CUgraphNode_st { int unused; } node_handle;

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies,
                                        size_t numDependencies,
                                        const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    if (!phGraphNode || !hGraph || !nodeParams) return E_VALUE;
    if (numDependencies && !dependencies) return E_VALUE;
    const unsigned d[6] = {nodeParams->gridDimX, nodeParams->gridDimY, nodeParams->gridDimZ,
                           nodeParams->blockDimX, nodeParams->blockDimY, nodeParams->blockDimZ};
    CUfunction f = nodeParams->func ? nodeParams->func : (CUfunction)(void *)nodeParams->kern;
    CUresult st = check_launch(f, d, nodeParams->sharedMemBytes, nodeParams->kernelParams,
                               nodeParams->extra);
    if (st) return st;
    if (armed)
        take(3, (struct CUfunc_st *)f, d, nodeParams->sharedMemBytes, NULL,
             nodeParams->kernelParams, nodeParams->extra);
    hGraph->nodes++;
    *phGraphNode = &node_handle;
    return OK;
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
                                              const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    return hNode && nodeParams ? OK : E_VALUE;
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    return hGraphExec && hNode && nodeParams ? OK : E_VALUE;
}

EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        CUevent event) {
    (void)dependencies; (void)numDependencies;
    if (!phGraphNode || !hGraph || !event) return E_VALUE;
    *phGraphNode = &node_handle;
    return OK;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                            unsigned long long flags) {
    (void)flags;
    if (!phGraphExec || !hGraph) return E_VALUE;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e) return E_MEMORY;
    e->nodes = hGraph->nodes;
    *phGraphExec = e;
    return OK;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    (void)hStream;
    if (!current) return E_CONTEXT;
    return hGraphExec ? OK : E_HANDLE;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
    if (!hGraphExec) return E_HANDLE;
    free(hGraphExec);
    return OK;
}

/* ------------------------------------------------------------ cuGetProcAddress */
#define E(base, fn) {base, (void *)fn}
static const struct { const char *name; void *fn; } entries[] = {
    E("cuInit", cuInit), E("cuDriverGetVersion", cuDriverGetVersion),
    E("cuGetErrorName", cuGetErrorName), E("cuGetErrorString", cuGetErrorString),
    E("cuGetExportTable", cuGetExportTable),
    E("cuDeviceGetCount", cuDeviceGetCount), E("cuDeviceGet", cuDeviceGet),
    E("cuDeviceGetName", cuDeviceGetName), E("cuDeviceGetAttribute", cuDeviceGetAttribute),
    E("cuDeviceComputeCapability", cuDeviceComputeCapability),
    E("cuDeviceTotalMem", cuDeviceTotalMem_v2), E("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    E("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId),
    E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
    E("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState),
    E("cuCtxSetCurrent", cuCtxSetCurrent), E("cuCtxGetCurrent", cuCtxGetCurrent),
    E("cuCtxPushCurrent", cuCtxPushCurrent_v2), E("cuCtxPopCurrent", cuCtxPopCurrent_v2),
    E("cuCtxGetDevice", cuCtxGetDevice), E("cuCtxSynchronize", cuCtxSynchronize),
    E("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange),
    E("cuCtxGetApiVersion", cuCtxGetApiVersion), E("cuCtxGetFlags", cuCtxGetFlags),
    E("cuCtxGetId", cuCtxGetId),
    E("cuMemAlloc", cuMemAlloc_v2), E("cuMemFree", cuMemFree_v2),
    E("cuMemGetInfo", cuMemGetInfo_v2), E("cuMemcpyHtoD", cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", cuMemcpyDtoH_v2), E("cuMemcpyDtoD", cuMemcpyDtoD_v2),
    E("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2), E("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2),
    E("cuMemsetD8", cuMemsetD8_v2), E("cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2), E("cuPointerGetAttribute", cuPointerGetAttribute),
    E("cuModuleLoadData", cuModuleLoadData), E("cuModuleLoadDataEx", cuModuleLoadDataEx),
    E("cuModuleUnload", cuModuleUnload), E("cuModuleGetFunction", cuModuleGetFunction),
    E("cuModuleGetGlobal", cuModuleGetGlobal_v2),
    E("cuLibraryLoadData", cuLibraryLoadData), E("cuLibraryUnload", cuLibraryUnload),
    E("cuLibraryGetKernel", cuLibraryGetKernel), E("cuLibraryGetModule", cuLibraryGetModule),
    E("cuKernelGetFunction", cuKernelGetFunction), E("cuKernelGetName", cuKernelGetName),
    E("cuKernelGetAttribute", cuKernelGetAttribute),
    E("cuKernelSetAttribute", cuKernelSetAttribute), E("cuFuncGetName", cuFuncGetName),
    E("cuFuncGetAttribute", cuFuncGetAttribute), E("cuFuncSetAttribute", cuFuncSetAttribute),
    E("cuLinkCreate", cuLinkCreate_v2), E("cuLinkAddData", cuLinkAddData_v2),
    E("cuLinkComplete", cuLinkComplete), E("cuLinkDestroy", cuLinkDestroy),
    E("cuStreamCreate", cuStreamCreate),
    E("cuStreamCreateWithPriority", cuStreamCreateWithPriority),
    E("cuStreamDestroy", cuStreamDestroy_v2), E("cuStreamQuery", cuStreamQuery),
    E("cuStreamSynchronize", cuStreamSynchronize), E("cuStreamWaitEvent", cuStreamWaitEvent),
    E("cuStreamGetPriority", cuStreamGetPriority), E("cuStreamGetFlags", cuStreamGetFlags),
    E("cuStreamGetCtx", cuStreamGetCtx), E("cuStreamGetId", cuStreamGetId),
    E("cuEventCreate", cuEventCreate), E("cuEventDestroy", cuEventDestroy_v2),
    E("cuEventRecord", cuEventRecord), E("cuEventSynchronize", cuEventSynchronize),
    E("cuEventQuery", cuEventQuery), E("cuEventElapsedTime", cuEventElapsedTime),
    E("cuGraphCreate", cuGraphCreate), E("cuGraphDestroy", cuGraphDestroy),
    E("cuGraphAddKernelNode", cuGraphAddKernelNode_v2),
    E("cuGraphKernelNodeSetParams", cuGraphKernelNodeSetParams_v2),
    E("cuGraphExecKernelNodeSetParams", cuGraphExecKernelNodeSetParams_v2),
    E("cuGraphAddEventWaitNode", cuGraphAddEventWaitNode),
    E("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    E("cuGraphInstantiate", cuGraphInstantiateWithFlags),
    E("cuGraphLaunch", cuGraphLaunch), E("cuGraphExecDestroy", cuGraphExecDestroy),
    E("cuLaunchKernel", cuLaunchKernel), E("cuLaunchKernelEx", cuLaunchKernelEx),
    E("cuLaunchCooperativeKernel", cuLaunchCooperativeKernel),
    E("cuOccupancyMaxActiveBlocksPerMultiprocessor",
      cuOccupancyMaxActiveBlocksPerMultiprocessor),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    uint64_t flags, CUdriverProcAddressQueryResult *symbolStatus);

static void *self_entry(const char *symbol) {
    if (!strcmp(symbol, "cuGetProcAddress")) return (void *)cuGetProcAddress_v2;
    for (size_t i = 0; i < sizeof entries / sizeof *entries; ++i)
        if (!strcmp(entries[i].name, symbol)) return entries[i].fn;
    return NULL;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    uint64_t flags, CUdriverProcAddressQueryResult *symbolStatus) {
    (void)cudaVersion; (void)flags;
    if (!symbol || !pfn) return E_VALUE;
    void *fn = self_entry(symbol);
    *pfn = fn;
    if (symbolStatus) *symbolStatus = fn ? 0 : 1;  /* SUCCESS / SYMBOL_NOT_FOUND */
    return fn ? OK : E_NOTFOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                 uint64_t flags) {
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

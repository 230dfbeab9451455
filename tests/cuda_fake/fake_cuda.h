/* fake_cuda.h: what the fake CUDA driver's two sources share.
 *
 * fake_libcuda.c: errors, init, devices, contexts, memory, modules (PTX and
 * cubin parsing), functions, cuLaunchKernel, cuGetProcAddress and the launch
 * record; fake_streams.c (included at the end of fake_libcuda.c): streams,
 * events, graphs and synchronisation. Everything declared here but the
 * EXPORTed entry points stays out of the library's symbol table.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define EXPORT __attribute__((visibility("default")))
#define INTERNAL __attribute__((visibility("hidden")))

enum { OK = 0, E_VALUE = 1, E_OOM = 2, E_NOINIT = 3, E_DEVICE = 101, E_IMAGE = 200, E_CONTEXT = 201,
       E_NOBINARY = 209, E_PTX = 218, E_PTXVER = 222, E_HANDLE = 400, E_NOTFOUND = 500, E_NOT_READY = 600,
       E_CAPTURE_UNSUPPORTED = 900, E_CAPTURE_INVALIDATED = 901, E_CAPTURE_UNMATCHED = 903,
       E_CAPTURE_IMPLICIT = 906, E_ILLEGAL_STATE = 401 };
enum { MAX_DEV = 8, RING = 64, DEFAULT_SMEM = 49152, OPTIN_SMEM = 232448 };

typedef struct { int device, refs; } Ctx;
typedef struct { int size, align, offset; } Param;
typedef struct Module Module;
typedef struct { Module *mod; char *name; int nparams, total; Param *params; int max_dyn_smem, carveout; } Func;
typedef struct { char *name; void *mem; size_t size; } Global;
struct Module { Module *next; Ctx *ctx; int nfuncs, nglobals; Func *funcs; Global *globals; };

/* one lock over all driver state; the current context is per thread */
INTERNAL extern pthread_mutex_t lock;
INTERNAL extern _Thread_local Ctx *current;
INTERNAL extern int init_status, ndev;
INTERNAL extern Ctx ctxs[MAX_DEV];
INTERNAL extern double fake_now_ms;  /* the fake clock events read; launches and records advance it */

#define LOCKED(expr) do { pthread_mutex_lock(&lock); CUresult r_ = (expr); pthread_mutex_unlock(&lock); return r_; } while (0)
#define NEED_INIT() do { if (init_status) return init_status; } while (0)
#define NEED_CTX() do { NEED_INIT(); if (!current || current->refs <= 0) return E_CONTEXT; } while (0)
#define NEED_DEV(d) do { NEED_INIT(); if ((d) < 0 || (d) >= ndev) return E_DEVICE; } while (0)
#define OUT(p, v) do { if (!(p)) return E_VALUE; *(p) = (v); return OK; } while (0)
#define P(x) ((void *)(uintptr_t)(x))

/* fake_libcuda.c (called with the lock held) */
INTERNAL long long env_ll(const char *name, long long dflt);
INTERNAL Func *find_func(void *h);
/* cuLaunchKernel's checks of a function (of the current context), its
 * dimensions (grid, then block), dynamic shared bytes and parameters */
INTERNAL CUresult check_launch(Func *f, const unsigned d[6], unsigned shared, void **params, void **extra);
/* the parameter block of f laid out from kernelParams (f->total + 1 bytes,
 * calloc'd), NULL when out of memory */
INTERNAL unsigned char *pack_params(Func *f, void **params);
/* records a launch in the ring (copies name and bytes) */
INTERNAL CUresult record_launch(Func *f, const unsigned d[6], unsigned shared, void *stream, const unsigned char *bytes);

/* fake_streams.c (called with the lock held) */
INTERNAL CUresult stream_check(void *h);
/* stream capture: a launch on a capturing stream becomes a node of its graph
 * (*captured = 1); a launch on the legacy stream while a blocking stream is
 * capturing (not relaxed) invalidates that capture and fails (906) */
INTERNAL CUresult capture_launch(void *h, const unsigned d[6], unsigned shared, void *stream,
                                 void **params, int *captured);
/* an API that is unsafe during a capture (alloc, module load): 900 if any
 * capture that is not relaxed is running */
INTERNAL CUresult capture_forbids(void);  /* NULL, legacy, per-thread or a stream of the current context */

/* fake_streams.c's entry points, for cuGetProcAddress */
EXPORT CUresult cuCtxSynchronize(void);
EXPORT CUresult cuStreamCreate(void **ps, unsigned flags);
EXPORT CUresult cuStreamDestroy_v2(void *s);
EXPORT CUresult cuStreamSynchronize(void *s);
EXPORT CUresult cuStreamBeginCapture_v2(void *s, int mode);
EXPORT CUresult cuStreamEndCapture(void *s, void **pg);
EXPORT CUresult cuStreamIsCapturing(void *s, int *status);
EXPORT CUresult cuStreamQuery(void *s);
EXPORT CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags);
EXPORT CUresult cuEventCreate(void **pe, unsigned flags);
EXPORT CUresult cuEventDestroy_v2(void *e);
EXPORT CUresult cuEventRecord(void *e, void *s);
EXPORT CUresult cuEventSynchronize(void *e);
EXPORT CUresult cuEventQuery(void *e);
EXPORT CUresult cuEventElapsedTime(float *ms, void *start, void *end);
EXPORT CUresult cuGraphCreate(void **pg, unsigned flags);
EXPORT CUresult cuGraphDestroy(void *g);
EXPORT CUresult cuGraphAddKernelNode(void **pn, void *g, void *const *deps, size_t ndeps, const void *params);
EXPORT CUresult cuGraphAddKernelNode_v2(void **pn, void *g, void *const *deps, size_t ndeps, const void *params);
EXPORT CUresult cuGraphKernelNodeSetParams(void *n, const void *params);
EXPORT CUresult cuGraphKernelNodeSetParams_v2(void *n, const void *params);
EXPORT CUresult cuGraphAddEventWaitNode(void **pn, void *g, void *const *deps, size_t ndeps, void *e);
EXPORT CUresult cuGraphInstantiate(void **pexec, void *g, void **err_node, char *log, size_t log_size);
EXPORT CUresult cuGraphInstantiate_v2(void **pexec, void *g, void **err_node, char *log, size_t log_size);
EXPORT CUresult cuGraphInstantiateWithFlags(void **pexec, void *g, unsigned long long flags);
EXPORT CUresult cuGraphExecKernelNodeSetParams(void *x, void *n, const void *params);
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(void *x, void *n, const void *params);
EXPORT CUresult cuGraphLaunch(void *x, void *s);
EXPORT CUresult cuGraphExecDestroy(void *x);

#endif

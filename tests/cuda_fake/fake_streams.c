/* fake_streams.c: streams, events, graphs and synchronisation of the fake
 * CUDA driver. fake_libcuda.c includes this file at its end (the driver is
 * one translation unit); the conventions are fake_libcuda.c's, and what the
 * two share is declared in fake_cuda.h.
 *
 * Streams are in-order queues that the fake runs at once: a launch is
 * recorded, with the stream it went to, when it is made, so every stream is
 * always idle and a query never says NOT_READY (unless FAKE_CUDA_NOT_READY
 * asks for it). Stream 0 (legacy), CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * are accepted wherever a stream is. A stream, event, graph or executable
 * graph belongs to the context current at its creation.
 *
 * Events read a fake clock in milliseconds that each record (1 us) and each
 * launch (10 us) advances, so a later record is always a positive time after
 * an earlier one. cuEventElapsedTime: 400 when either event was never
 * recorded or was created with CU_EVENT_DISABLE_TIMING, as the driver says.
 *
 * Graphs hold kernel and event-wait nodes and their dependencies (which must
 * be nodes of the same graph, each at most once). An executable graph is a
 * copy taken by cuGraphInstantiate*: later changes to the graph do not reach
 * it, cuGraphExecKernelNodeSetParams does. cuGraphLaunch records each kernel
 * node as a launch on the stream it was given, with the node's parameter
 * bytes, in an order that respects the dependencies and otherwise takes the
 * newest ready node first: nodes left without the edge that orders them come
 * out reversed, so a missing dependency shows. A kernel node whose module was
 * unloaded, or a wait node whose event was destroyed, fails the launch (400):
 * the driver leaves that undefined.
 *
 * Kernel node parameters: CUDA_KERNEL_NODE_PARAMS (v1: func, grid, block,
 * sharedMemBytes, kernelParams, extra) for the unversioned entries,
 * CUDA_KERNEL_NODE_PARAMS_v2 (v1 plus CUkernel kern, CUcontext ctx) for the
 * _v2 entries, which cuGetProcAddress gives from API version 12000 on. They
 * are checked as cuLaunchKernel checks its arguments (a function of the
 * current context, dimensions within the device's limits, shared bytes
 * within the function's allowance, kernelParams only) and the parameter
 * values are copied, as the driver copies them. The fake is stricter than
 * the driver about the v2 fields: kern must be NULL (CUkernel is not
 * supported) and ctx NULL or the function's context.
 *
 * Environment, read when it matters:
 *   FAKE_CUDA_ASYNC_ERROR=code  the synchronising calls (cuCtxSynchronize,
 *                               cuStreamSynchronize, cuEventSynchronize,
 *                               cuStreamQuery, cuEventQuery) return code, as the
 *                               driver reports a failure of queued work
 *   FAKE_CUDA_NOT_READY=1       cuStreamQuery, cuEventQuery and
 *                               cuEventElapsedTime return 600 (NOT_READY)
 *
 * Test-only exports: fake_cuda_stream_count, fake_cuda_event_count,
 * fake_cuda_graph_count, fake_cuda_graph_exec_count (live objects),
 * fake_cuda_instantiate_count (cuGraphInstantiate* calls that succeeded),
 * fake_cuda_last_wait (the latest cuStreamWaitEvent), fake_cuda_graph_nodes,
 * fake_cuda_graph_deps (a graph's nodes and edges, by creation index).
 */
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

typedef struct Graph Graph;
typedef struct Stream {
    struct Stream *next;
    Ctx *ctx;
    unsigned flags;       /* CU_STREAM_NON_BLOCKING = 1 */
    Graph *capture;       /* the graph being captured, or NULL */
    int mode, invalid;    /* CUstreamCaptureMode (0 global, 1 thread-local, 2 relaxed) */
    void *last;           /* the capture's latest node: the next one depends on it */
} Stream;
typedef struct Event { struct Event *next; Ctx *ctx; unsigned flags; int recorded; double ms; } Event;
enum { NODE_KERNEL = 1, NODE_WAIT = 2 };
typedef struct Graph Graph;
typedef struct Node {
    Graph *graph;
    int index, kind, ndeps;
    int *deps;                 /* creation indices of the nodes this one waits for */
    Func *f;                   /* NODE_KERNEL */
    unsigned dims[6], shared;
    unsigned char *bytes;      /* the parameter block, f->total + 1 bytes */
    Event *event;              /* NODE_WAIT */
} Node;
struct Graph { Graph *next; Ctx *ctx; int n, cap; Node **nodes; };
typedef struct Exec { struct Exec *next; Ctx *ctx; int n; Node *nodes; Node **origin; } Exec;  /* nodes in run order */

typedef struct {  /* CUDA_KERNEL_NODE_PARAMS_v1 */
    void *func;
    unsigned grid[3], block[3], shared;
    void **kernelParams, **extra;
} KernelParamsV1;
typedef struct {  /* CUDA_KERNEL_NODE_PARAMS_v2 */
    void *func;
    unsigned grid[3], block[3], shared;
    void **kernelParams, **extra;
    void *kern, *ctx;  /* CUkernel, CUcontext */
} KernelParamsV2;

static Stream *streams;
static Event *events;
static Graph *graphs;
static Exec *execs;
static int instantiations, nwaits;
static void *last_wait_stream, *last_wait_event;

static CUresult async_error(void) { return (CUresult)env_ll("FAKE_CUDA_ASYNC_ERROR", 0); }
static int not_ready(void) { return env_ll("FAKE_CUDA_NOT_READY", 0) != 0; }

/* ---- streams and synchronisation ---- */
static Stream *find_stream(void *h) {
    Stream *s = streams;
    while (s && s != h) s = s->next;
    return s;
}
CUresult stream_check(void *h) {
    NEED_CTX();
    if (h == NULL || h == P(1) || h == P(2)) return OK;
    Stream *s = find_stream(h);
    return !s ? E_HANDLE : s->ctx == current ? OK : E_CONTEXT;
}
static Ctx *stream_ctx(void *h) {  /* after stream_check */
    return (h == NULL || h == P(1) || h == P(2)) ? current : ((Stream *)h)->ctx;
}
static CUresult stream_create(void **ps, unsigned flags) {
    NEED_CTX();
    if (!ps || flags > 1) return E_VALUE;  /* CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING */
    Stream *s = calloc(1, sizeof *s);
    if (!s) return E_OOM;
    s->ctx = current, s->flags = flags, s->next = streams, streams = s;
    return *ps = s, OK;
}
EXPORT CUresult cuStreamCreate(void **ps, unsigned flags) { LOCKED(stream_create(ps, flags)); }
static CUresult stream_destroy(void *h) {
    NEED_INIT();
    for (Stream **pp = &streams; *pp; pp = &(*pp)->next)
        if (*pp == h) { Stream *s = *pp; *pp = s->next; free(s); return OK; }
    return E_HANDLE;
}
EXPORT CUresult cuStreamDestroy_v2(void *s) { LOCKED(stream_destroy(s)); }
static int any_capture(int unsafe_only) {
    for (Stream *s = streams; s; s = s->next)
        if (s->capture && s->ctx == current && (!unsafe_only || s->mode != 2)) return 1;
    return 0;
}
CUresult capture_forbids(void) { return any_capture(1) ? E_CAPTURE_UNSUPPORTED : OK; }
static CUresult stream_sync(void *h, int query) {
    CUresult r = stream_check(h);
    if (r || (r = async_error())) return r;
    Stream *cs = find_stream(h);
    if (cs && cs->capture) return cs->invalid = 1, E_CAPTURE_UNSUPPORTED;  /* not legal while capturing */
    if ((h == NULL || h == P(1)) && any_capture(1)) return E_CAPTURE_UNSUPPORTED;
    return query && not_ready() ? E_NOT_READY : OK;
}
EXPORT CUresult cuStreamSynchronize(void *s) { LOCKED(stream_sync(s, 0)); }
EXPORT CUresult cuStreamQuery(void *s) { LOCKED(stream_sync(s, 1)); }
static CUresult ctx_sync(void) {
    NEED_CTX();
    if (any_capture(1)) return E_CAPTURE_UNSUPPORTED;
    return async_error();
}
EXPORT CUresult cuCtxSynchronize(void) { LOCKED(ctx_sync()); }

/* ---- events ---- */
static Event *find_event(void *h) {
    Event *e = events;
    while (e && e != h) e = e->next;
    return e;
}
static CUresult event_create(void **pe, unsigned flags) {
    NEED_CTX();
    /* CU_EVENT_BLOCKING_SYNC 1, DISABLE_TIMING 2, INTERPROCESS 4 (which needs DISABLE_TIMING) */
    if (!pe || flags > 7 || ((flags & 4) && !(flags & 2))) return E_VALUE;
    Event *e = calloc(1, sizeof *e);
    if (!e) return E_OOM;
    e->ctx = current, e->flags = flags, e->next = events, events = e;
    return *pe = e, OK;
}
EXPORT CUresult cuEventCreate(void **pe, unsigned flags) { LOCKED(event_create(pe, flags)); }
static CUresult event_destroy(void *h) {
    NEED_INIT();
    for (Event **pp = &events; *pp; pp = &(*pp)->next)
        if (*pp == h) { Event *e = *pp; *pp = e->next; free(e); return OK; }
    return E_HANDLE;
}
EXPORT CUresult cuEventDestroy_v2(void *e) { LOCKED(event_destroy(e)); }
static CUresult event_record(void *h, void *stream) {
    CUresult r = stream_check(stream);
    if (r) return r;
    Event *e = find_event(h);
    if (!e || e->ctx != stream_ctx(stream)) return E_HANDLE;  /* event and stream of one context */
    fake_now_ms += 0.001;
    e->recorded = 1, e->ms = fake_now_ms;
    return OK;
}
EXPORT CUresult cuEventRecord(void *e, void *s) { LOCKED(event_record(e, s)); }
static CUresult event_sync(void *h, int query) {
    NEED_INIT();
    if (!find_event(h)) return E_HANDLE;
    CUresult r = async_error();
    return r ? r : query && not_ready() ? E_NOT_READY : OK;
}
EXPORT CUresult cuEventSynchronize(void *e) { LOCKED(event_sync(e, 0)); }
EXPORT CUresult cuEventQuery(void *e) { LOCKED(event_sync(e, 1)); }
static CUresult elapsed(float *ms, void *start, void *end) {
    NEED_INIT();
    Event *a = find_event(start), *b = find_event(end);
    if (!ms) return E_VALUE;
    if (!a || !b || !a->recorded || !b->recorded || (a->flags & 2) || (b->flags & 2)) return E_HANDLE;
    if (not_ready()) return E_NOT_READY;
    *ms = (float)(b->ms - a->ms);
    return OK;
}
EXPORT CUresult cuEventElapsedTime(float *ms, void *start, void *end) { LOCKED(elapsed(ms, start, end)); }
static CUresult stream_wait(void *s, void *e, unsigned flags) {
    CUresult r = stream_check(s);
    if (r) return r;
    if (!find_event(e)) return E_HANDLE;  /* an event of any context: waits cross devices */
    if (flags > 1) return E_VALUE;         /* CU_EVENT_WAIT_DEFAULT, CU_EVENT_WAIT_EXTERNAL */
    nwaits++, last_wait_stream = s, last_wait_event = e;
    return OK;
}
EXPORT CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) { LOCKED(stream_wait(s, e, flags)); }

/* ---- graphs ---- */
static Graph *find_graph(void *h) {
    Graph *g = graphs;
    while (g && g != h) g = g->next;
    return g;
}
static Node *find_node(void *h) {  /* a node of a live graph */
    for (Graph *g = graphs; g; g = g->next)
        for (int i = 0; i < g->n; i++) if (g->nodes[i] == h) return h;
    return NULL;
}
static Exec *find_exec(void *h) {
    Exec *x = execs;
    while (x && x != h) x = x->next;
    return x;
}
static CUresult graph_create(void **pg, unsigned flags) {
    NEED_CTX();
    if (!pg || flags) return E_VALUE;
    Graph *g = calloc(1, sizeof *g);
    if (!g) return E_OOM;
    g->ctx = current, g->next = graphs, graphs = g;
    return *pg = g, OK;
}
EXPORT CUresult cuGraphCreate(void **pg, unsigned flags) { LOCKED(graph_create(pg, flags)); }
static void free_node(Node *n) {
    if (n) free(n->deps), free(n->bytes);
    free(n);
}
static CUresult graph_destroy(void *h) {
    NEED_INIT();
    for (Graph **pp = &graphs; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            Graph *g = *pp;
            *pp = g->next;
            for (int i = 0; i < g->n; i++) free_node(g->nodes[i]);
            free(g->nodes), free(g);
            return OK;
        }
    return E_HANDLE;  /* executable graphs made from it live on */
}
EXPORT CUresult cuGraphDestroy(void *g) { LOCKED(graph_destroy(g)); }

/* Checks kernel node parameters and fills n's function, dimensions and a
 * copy of the parameter values. */
static CUresult kernel_fill(Node *n, const KernelParamsV2 *p) {
    if (!p) return E_VALUE;
    Func *f = find_func(p->func);
    if (!f) return p->func ? E_HANDLE : E_VALUE;  /* no func: a CUkernel, which the fake lacks */
    if (p->kern || (p->ctx && p->ctx != (void *)f->mod->ctx)) return E_VALUE;
    const unsigned d[6] = {p->grid[0], p->grid[1], p->grid[2], p->block[0], p->block[1], p->block[2]};
    CUresult r = check_launch(f, d, p->shared, p->kernelParams, p->extra);
    if (r) return r;
    unsigned char *bytes = pack_params(f, p->kernelParams);
    if (!bytes) return E_OOM;
    free(n->bytes);
    n->kind = NODE_KERNEL, n->f = f, n->shared = p->shared, n->bytes = bytes;
    memcpy(n->dims, d, sizeof d);
    return OK;
}
static KernelParamsV2 from_v1(const KernelParamsV1 *p) {
    KernelParamsV2 v2 = {0};
    if (p) memcpy(&v2, p, sizeof *p);  /* v2 begins with v1's fields */
    return v2;
}

/* Adds a node made by kernel_fill (params) or waiting for event. */
static CUresult add_node(void **pn, void *hg, void *const *deps, size_t ndeps, const KernelParamsV2 *params,
                         void *event) {
    NEED_CTX();
    Graph *g = find_graph(hg);
    if (!pn || (ndeps && !deps)) return E_VALUE;
    if (!g) return E_HANDLE;
    for (size_t i = 0; i < ndeps; i++) {
        Node *d = find_node(deps[i]);
        if (!d || d->graph != g) return E_VALUE;
        for (size_t j = 0; j < i; j++) if (deps[j] == deps[i]) return E_VALUE;  /* a duplicate */
    }
    Node *n = calloc(1, sizeof *n);
    if (!n) return E_OOM;
    CUresult r = OK;
    if (params) r = kernel_fill(n, params);
    else if (!(n->event = find_event(event))) r = E_HANDLE;
    else n->kind = NODE_WAIT;
    if (!r && ndeps && !(n->deps = malloc(ndeps * sizeof *n->deps))) r = E_OOM;
    if (!r && g->n == g->cap) {
        Node **more = realloc(g->nodes, (size_t)(g->cap + 16) * sizeof *more);
        if (more) g->nodes = more, g->cap += 16; else r = E_OOM;
    }
    if (r) return free_node(n), r;
    for (size_t i = 0; i < ndeps; i++) n->deps[i] = ((Node *)deps[i])->index;
    n->ndeps = (int)ndeps, n->graph = g, n->index = g->n;
    g->nodes[g->n++] = n;
    return *pn = n, OK;
}
EXPORT CUresult cuGraphAddKernelNode_v2(void **pn, void *g, void *const *deps, size_t ndeps, const void *params) {
    if (!params) return E_VALUE;
    LOCKED(add_node(pn, g, deps, ndeps, params, NULL));
}
EXPORT CUresult cuGraphAddKernelNode(void **pn, void *g, void *const *deps, size_t ndeps, const void *params) {
    if (!params) return E_VALUE;
    KernelParamsV2 v2 = from_v1(params);
    LOCKED(add_node(pn, g, deps, ndeps, &v2, NULL));
}
EXPORT CUresult cuGraphAddEventWaitNode(void **pn, void *g, void *const *deps, size_t ndeps, void *e) {
    LOCKED(add_node(pn, g, deps, ndeps, NULL, e));
}
static CUresult node_set(void *h, const KernelParamsV2 *p) {
    NEED_CTX();
    Node *n = find_node(h);
    if (!n || n->kind != NODE_KERNEL) return E_VALUE;
    Node tmp = *n;
    tmp.bytes = NULL;
    CUresult r = kernel_fill(&tmp, p);
    if (!r) free(n->bytes), *n = tmp;
    return r;
}
EXPORT CUresult cuGraphKernelNodeSetParams_v2(void *n, const void *params) { LOCKED(node_set(n, params)); }
EXPORT CUresult cuGraphKernelNodeSetParams(void *n, const void *params) {
    if (!params) return E_VALUE;
    KernelParamsV2 v2 = from_v1(params);
    LOCKED(node_set(n, &v2));
}

/* ---- executable graphs ---- */
static void free_exec(Exec *x) {
    for (int i = 0; i < x->n; i++) free(x->nodes[i].bytes), free(x->nodes[i].deps);
    free(x->nodes), free(x->origin), free(x);
}
/* The run order: Kahn's algorithm, taking the newest ready node first. */
static CUresult instantiate(void **pexec, void *hg, unsigned long long flags) {
    NEED_CTX();
    Graph *g = find_graph(hg);
    /* AUTO_FREE_ON_LAUNCH 1, UPLOAD 2, DEVICE_LAUNCH 4, USE_NODE_PRIORITY 8 */
    if (!pexec || flags > 15) return E_VALUE;
    if (!g) return E_HANDLE;
    Exec *x = calloc(1, sizeof *x);
    int *waiting = calloc((size_t)g->n + 1, sizeof *waiting), *ready = calloc((size_t)g->n + 1, sizeof *ready);
    if (x) x->nodes = calloc((size_t)g->n + 1, sizeof *x->nodes), x->origin = calloc((size_t)g->n + 1, sizeof *x->origin);
    if (!x || !waiting || !ready || !x->nodes || !x->origin) {
        if (x) free(x->nodes), free(x->origin), free(x);
        free(waiting), free(ready);
        return E_OOM;
    }
    int nready = 0;
    for (int i = 0; i < g->n; i++) if (!(waiting[i] = g->nodes[i]->ndeps)) ready[nready++] = i;
    CUresult r = OK;
    while (nready && !r) {
        Node *n = g->nodes[ready[--nready]], *c = &x->nodes[x->n];
        *c = *n, c->deps = NULL, c->ndeps = 0;  /* the run order replaces the edges */
        if (n->bytes && !(c->bytes = malloc((size_t)n->f->total + 1))) { r = E_OOM; break; }
        if (n->bytes) memcpy(c->bytes, n->bytes, (size_t)n->f->total + 1);
        x->origin[x->n++] = n;
        for (int j = n->index + 1; j < g->n; j++)  /* dependants come later in creation order */
            for (int k = 0; k < g->nodes[j]->ndeps; k++)
                if (g->nodes[j]->deps[k] == n->index && !--waiting[j]) ready[nready++] = j;
    }
    free(waiting), free(ready);
    if (r) return free_exec(x), r;
    x->ctx = current, x->next = execs, execs = x;
    instantiations++;
    return *pexec = x, OK;
}
EXPORT CUresult cuGraphInstantiateWithFlags(void **pexec, void *g, unsigned long long flags) {
    LOCKED(instantiate(pexec, g, flags));
}
EXPORT CUresult cuGraphInstantiate_v2(void **pexec, void *g, void **err_node, char *log, size_t log_size) {
    if (err_node) *err_node = NULL;
    if (log && log_size) log[0] = 0;
    LOCKED(instantiate(pexec, g, 0));
}
EXPORT CUresult cuGraphInstantiate(void **pexec, void *g, void **err_node, char *log, size_t log_size) {
    return cuGraphInstantiate_v2(pexec, g, err_node, log, log_size);
}
static CUresult exec_set(void *hx, void *hn, const KernelParamsV2 *p) {
    NEED_CTX();
    Exec *x = find_exec(hx);
    if (!x) return E_HANDLE;
    int i = 0;
    while (i < x->n && x->origin[i] != hn) i++;
    if (i == x->n || x->nodes[i].kind != NODE_KERNEL) return E_VALUE;  /* not a kernel node of this exec */
    Node tmp = x->nodes[i];
    tmp.bytes = NULL;
    CUresult r = kernel_fill(&tmp, p);
    if (!r && tmp.f->mod->ctx != x->ctx) r = E_VALUE;  /* the function's context cannot change */
    if (r) return free(tmp.bytes), r;
    free(x->nodes[i].bytes);
    x->nodes[i] = tmp;
    return OK;
}
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(void *x, void *n, const void *params) {
    LOCKED(exec_set(x, n, params));
}
EXPORT CUresult cuGraphExecKernelNodeSetParams(void *x, void *n, const void *params) {
    if (!params) return E_VALUE;
    KernelParamsV2 v2 = from_v1(params);
    LOCKED(exec_set(x, n, &v2));
}
static CUresult graph_launch(void *hx, void *stream) {
    NEED_CTX();
    Exec *x = find_exec(hx);
    if (!x) return E_HANDLE;
    CUresult r = stream_check(stream);
    if (r) return r;
    if (x->ctx != stream_ctx(stream)) return E_CONTEXT;
    for (int i = 0; i < x->n; i++)  /* what the driver leaves undefined fails here */
        if (x->nodes[i].kind == NODE_KERNEL ? find_func(x->nodes[i].f) != x->nodes[i].f
                                            : !find_event(x->nodes[i].event)) return E_HANDLE;
    if ((r = (CUresult)env_ll("FAKE_CUDA_FAIL_LAUNCH", 0))) return r;
    for (int i = 0; i < x->n && !r; i++)
        if (x->nodes[i].kind == NODE_KERNEL)
            r = record_launch(x->nodes[i].f, x->nodes[i].dims, x->nodes[i].shared, stream, x->nodes[i].bytes);
    return r;
}
EXPORT CUresult cuGraphLaunch(void *x, void *s) { LOCKED(graph_launch(x, s)); }
static CUresult exec_destroy(void *h) {
    NEED_INIT();
    for (Exec **pp = &execs; *pp; pp = &(*pp)->next)
        if (*pp == h) { Exec *x = *pp; *pp = x->next; free_exec(x); return OK; }
    return E_HANDLE;
}
EXPORT CUresult cuGraphExecDestroy(void *x) { LOCKED(exec_destroy(x)); }

/* ---- test-only exports ---- */
static int live(int what) {  /* 0 streams, 1 events, 2 graphs, 3 executable graphs, 4 instantiations */
    pthread_mutex_lock(&lock);
    int n = what == 4 ? instantiations : 0;
    for (Stream *s = streams; what == 0 && s; s = s->next) n++;
    for (Event *e = events; what == 1 && e; e = e->next) n++;
    for (Graph *g = graphs; what == 2 && g; g = g->next) n++;
    for (Exec *x = execs; what == 3 && x; x = x->next) n++;
    pthread_mutex_unlock(&lock);
    return n;
}
EXPORT int fake_cuda_stream_count(void) { return live(0); }
EXPORT int fake_cuda_event_count(void) { return live(1); }
EXPORT int fake_cuda_graph_count(void) { return live(2); }
EXPORT int fake_cuda_graph_exec_count(void) { return live(3); }
EXPORT int fake_cuda_instantiate_count(void) { return live(4); }
/* The number of cuStreamWaitEvent calls so far; the latest one's stream and
 * event (either output may be NULL). */
EXPORT int fake_cuda_last_wait(void **stream, void **event) {
    pthread_mutex_lock(&lock);
    if (stream) *stream = last_wait_stream;
    if (event) *event = last_wait_event;
    int n = nwaits;
    pthread_mutex_unlock(&lock);
    return n;
}
/* A graph's node count, or -1 if it is not a graph; kinds (may be NULL) gets
 * up to cap node kinds in creation order (1 kernel, 2 event wait). */
EXPORT int fake_cuda_graph_nodes(void *graph, int *kinds, int cap) {
    pthread_mutex_lock(&lock);
    Graph *g = find_graph(graph);
    int n = g ? g->n : -1;
    for (int i = 0; kinds && i < n && i < cap; i++) kinds[i] = g->nodes[i]->kind;
    pthread_mutex_unlock(&lock);
    return n;
}
/* How many nodes node `index` (creation order) of a graph depends on, or -1
 * if there is no such node; deps (may be NULL) gets up to cap of their
 * creation indices. */
EXPORT int fake_cuda_graph_deps(void *graph, int index, int *deps, int cap) {
    pthread_mutex_lock(&lock);
    Graph *g = find_graph(graph);
    Node *node = g && index >= 0 && index < g->n ? g->nodes[index] : NULL;
    int n = node ? node->ndeps : -1;
    for (int i = 0; deps && i < n && i < cap; i++) deps[i] = node->deps[i];
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- stream capture ---- */
static CUresult begin_capture(void *h, int mode) {
    CUresult r = stream_check(h);
    if (r) return r;
    Stream *s = find_stream(h);
    if (!s) return E_CAPTURE_UNSUPPORTED;  /* the legacy stream cannot be captured */
    if (mode < 0 || mode > 2) return E_VALUE;
    if (s->capture) return E_ILLEGAL_STATE;
    void *g;
    if ((r = graph_create(&g, 0))) return r;
    s->capture = g, s->mode = mode, s->invalid = 0, s->last = NULL;
    return OK;
}
EXPORT CUresult cuStreamBeginCapture_v2(void *s, int mode) { LOCKED(begin_capture(s, mode)); }
static CUresult end_capture(void *h, void **pg) {
    CUresult r = stream_check(h);
    if (r) return r;
    Stream *s = find_stream(h);
    if (!pg) return E_VALUE;
    if (!s || !s->capture) return E_ILLEGAL_STATE;
    Graph *g = s->capture;
    s->capture = NULL, s->last = NULL;
    if (s->invalid) {
        graph_destroy(g);
        *pg = NULL;
        return E_CAPTURE_INVALIDATED;
    }
    return *pg = g, OK;
}
EXPORT CUresult cuStreamEndCapture(void *s, void **pg) { LOCKED(end_capture(s, pg)); }
static CUresult is_capturing(void *h, int *status) {
    CUresult r = stream_check(h);
    if (r) return r;
    if (!status) return E_VALUE;
    Stream *s = find_stream(h);
    *status = !s || !s->capture ? 0 : s->invalid ? 2 : 1;
    return OK;
}
EXPORT CUresult cuStreamIsCapturing(void *s, int *status) { LOCKED(is_capturing(s, status)); }
CUresult capture_launch(void *h, const unsigned d[6], unsigned shared, void *stream, void **params,
                        int *captured) {
    *captured = 0;
    Stream *s = find_stream(stream);
    if (!s) {
        if (stream == P(2)) return OK;  /* per-thread stream: not implicitly synchronising */
        CUresult r = OK;                /* the legacy stream syncs with blocking streams */
        for (Stream *c = streams; c; c = c->next)
            if (c->capture && c->ctx == current && !(c->flags & 1) && c->mode != 2)
                c->invalid = 1, r = E_CAPTURE_IMPLICIT;
        return r;
    }
    if (!s->capture) return OK;
    *captured = 1;
    if (s->invalid) return E_CAPTURE_INVALIDATED;
    KernelParamsV2 p = {h, {d[0], d[1], d[2]}, {d[3], d[4], d[5]}, shared, params, NULL, NULL, NULL};
    void *n, *deps[1] = {s->last};
    CUresult r = add_node(&n, s->capture, deps, s->last ? 1 : 0, &p, NULL);
    if (r) return s->invalid = 1, r;
    s->last = n;
    return OK;
}

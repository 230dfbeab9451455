/* Streams, events and graphs of the CPU device.
 *
 * A stream is an in-order queue with a thread of its own that runs the
 * queued work through the same launch path as synchronous launches (so a
 * large launch still spreads over the pool; when another stream holds the
 * pool, it runs on the stream's thread: two streams overlap). A launch on a
 * stream copies its parameter block and returns at once.
 *
 * The default stream (handle 0) is CUDA's legacy default stream: a launch
 * on it first waits for every stream to drain, and it runs synchronously,
 * so later work on any stream follows it.
 *
 * An event records a point in a stream: recording enqueues a marker, the
 * marker stamps the time when the stream reaches it. A stream can wait for
 * an event (a marker that blocks its thread until the event completes).
 *
 * A graph is a list of launches (and event waits) replayed with one call:
 * on the default stream by the calling thread, on a stream as one entry.
 *
 * The first failure on a stream is kept (kernel name and message) and
 * returned by the next synchronising call on that stream or the device;
 * other streams are unaffected. QUICKLAUNCH_LAUNCH_BLOCKING=1 makes every
 * stream launch wait for itself and fail where it was made.
 *
 * One mutex guards all of it: these calls are microseconds apart at most,
 * and one lock keeps waits and wake-ups simple. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.h"
#include "streams.h"

#define QL_EXPORT __attribute__((visibility("default")))
#define MAX_STREAMS 1024
#define MAX_EVENTS 65536
#define MESSAGE_BYTES 1100

enum { ST_OK = 0, ST_INVALID_VALUE = 1, ST_OUT_OF_MEMORY = 2, ST_INVALID_HANDLE = 400,
       ST_NOT_READY = 600 };
enum { E_LAUNCH, E_RECORD, E_WAIT, E_GRAPH };

_Atomic uint64_t ql_async_pending;

typedef struct event {
    uint32_t gen;
    int in_use;
    uint64_t recorded, done; /* records made, and reached */
    uint64_t time_ns;        /* when the latest reached record was reached */
} event;

typedef struct node {        /* a graph's launch or event wait */
    int kind;
    const ql_cpu_kernel *k;
    unsigned dims[6], shared;
    event *ev;
    uint64_t ev_seq;
    uint32_t nbytes, nparams;
    unsigned char *bytes;
    void **ptrs;
    ql_cpu_dims run_dims;    /* a graph node small enough to run in place */
    uint64_t nblocks;        /* 0: not small, goes through the launch path */
} node;

typedef struct graph {
    uint32_t magic;
    int n, in_flight, dead;
    node *nodes;
} graph;
#define GRAPH_MAGIC 0x51474750u

typedef struct entry {
    struct entry *next;
    node work;               /* kind, and a launch's copied parameters */
    graph *g;
} entry;

typedef struct stream {
    uint32_t gen;
    int in_use, stop;
    pthread_t thread;
    pthread_cond_t work;
    entry *head, *tail;
    uint64_t queued, done;
    int err_code;
    char err_msg[MESSAGE_BYTES];
} stream;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER; /* any entry finished */
static stream streams[MAX_STREAMS];
static event *events[MAX_EVENTS];
static uint32_t next_gen = 1;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int blocking(void) {
    static int value = -1;
    if (value < 0) {
        const char *s = getenv("QUICKLAUNCH_LAUNCH_BLOCKING");
        value = s && *s && strcmp(s, "0") != 0;
    }
    return value;
}

/* Handles: (generation << 32) | (slot + 1), so a stale or forged int is
 * refused rather than followed. Call with the lock held. */
static stream *stream_of(uint64_t h) {
    uint64_t slot = (h & 0xffffffffu) - 1;
    if (slot >= MAX_STREAMS || !streams[slot].in_use || streams[slot].gen != (uint32_t)(h >> 32))
        return NULL;
    return &streams[slot];
}

static event *event_of(uint64_t h) {
    uint64_t slot = (h & 0xffffffffu) - 1;
    if (slot >= MAX_EVENTS || !events[slot] || !events[slot]->in_use ||
        events[slot]->gen != (uint32_t)(h >> 32))
        return NULL;
    return events[slot];
}

/* ----------------------------------------------------------- running work */
/* Copies a launch's parameters (each `params[i]` points at a value) into
 * one block laid out by the kernel's reflected sizes and alignments. */
static int copy_launch(node *w, const ql_cpu_kernel *k, const unsigned dims[6],
                       unsigned shared, void **params) {
    uint32_t off = 0, n = k->nparams;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t a = k->params[i].align ? k->params[i].align : 1;
        off = (off + a - 1) / a * a + k->params[i].size;
    }
    w->kind = E_LAUNCH;
    w->k = k;
    memcpy(w->dims, dims, sizeof w->dims);
    w->shared = shared;
    w->nparams = n;
    w->nbytes = off;
    w->ptrs = malloc(sizeof(void *) * (n ? n : 1) + off + 16);
    if (!w->ptrs) return ST_OUT_OF_MEMORY;
    w->bytes = (unsigned char *)(((uintptr_t)(w->ptrs + (n ? n : 1)) + 15) & ~(uintptr_t)15);
    off = 0;
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t a = k->params[i].align ? k->params[i].align : 1;
        off = (off + a - 1) / a * a;
        memcpy(w->bytes + off, params[i], k->params[i].size);
        w->ptrs[i] = w->bytes + off;
        off += k->params[i].size;
    }
    return ST_OK;
}

static void wait_event_locked(event *ev, uint64_t seq) {
    while (ev->done < seq) pthread_cond_wait(&progress, &lock);
}

static void reach_event_locked(event *ev, uint64_t seq) {
    if (seq > ev->done) {
        ev->done = seq;
        ev->time_ns = now_ns();
    }
    pthread_cond_broadcast(&progress);
}

/* Runs one piece of work without the lock; on failure writes "kernel 'x':
 * message" to `message` and returns the status. */
static int run_node(const node *w, char *message) {
    if (w->kind == E_LAUNCH) {
        int status = ql_cpu_launch_sync(w->k, w->dims, w->shared, w->ptrs);
        if (status)
            snprintf(message, MESSAGE_BYTES, "kernel '%s' (status %d): %s", w->k->expr, status,
                     *ql_cpu_last_error_text() ? ql_cpu_last_error_text()
                                               : "invalid launch configuration");
        return status;
    }
    pthread_mutex_lock(&lock);
    if (w->kind == E_RECORD) reach_event_locked(w->ev, w->ev_seq);
    else wait_event_locked(w->ev, w->ev_seq);
    pthread_mutex_unlock(&lock);
    return ST_OK;
}

/* Replays a graph. Runs of small launches (one block, or few threads) go
 * straight to the kernels' run functions under one recovery point and one
 * error record: no per-launch checks, dims or guard, all done at build. */
static int run_graph(graph *g, char *message) {
    ql_cpu_error err;
    ql_guard guard;
    volatile int at = 0;
    if (__builtin_setjmp(guard.jump) == 0) {
        for (; at < g->n; at = at + 1) {
            node *w = &g->nodes[at];
            if (w->kind == E_LAUNCH && w->nblocks) {
                err.code = err.ready = 0;
                w->run_dims.error = &err;
                guard.kernel = w->k;
                guard.dims = &w->run_dims;
                ql_active_guard = &guard;
                w->k->run(w->ptrs, &w->run_dims, 0, w->nblocks);
                ql_active_guard = 0;
                if (__atomic_load_n(&err.code, __ATOMIC_ACQUIRE)) break;
                continue;
            }
            int status = run_node(w, message);
            if (status) return status;
        }
    }
    ql_active_guard = 0;
    if (at >= g->n) return ST_OK;
    while (!__atomic_load_n(&err.ready, __ATOMIC_ACQUIRE)) {}
    const node *w = &g->nodes[at];
    snprintf(message, MESSAGE_BYTES, "kernel '%s' (status %d): %s", w->k->expr, err.code,
             err.message);
    return err.code;
}

static void free_graph(graph *g) {
    for (int i = 0; i < g->n; ++i) free(g->nodes[i].ptrs);
    free(g->nodes);
    g->magic = 0;
    free(g);
}

static void *stream_main(void *arg) {
    stream *s = arg;
    char message[MESSAGE_BYTES];
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->work, &lock);
        if (!s->head) break;
        entry *e = s->head;
        pthread_mutex_unlock(&lock);
        int status = e->g ? run_graph(e->g, message) : run_node(&e->work, message);
        pthread_mutex_lock(&lock);
        if (status && !s->err_code) {
            s->err_code = status;
            memcpy(s->err_msg, message, sizeof s->err_msg);
        }
        s->head = e->next;
        if (!s->head) s->tail = NULL;
        ++s->done;
        atomic_fetch_sub(&ql_async_pending, 1);
        if (e->g && --e->g->in_flight == 0 && e->g->dead) free_graph(e->g);
        pthread_cond_broadcast(&progress);
        free(e->work.ptrs);
        free(e);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void enqueue_locked(stream *s, entry *e) {
    e->next = NULL;
    if (s->tail) s->tail->next = e;
    else s->head = e;
    s->tail = e;
    ++s->queued;
    atomic_fetch_add(&ql_async_pending, 1);
    pthread_cond_signal(&s->work);
}

static void drain_locked(stream *s) {
    while (s->done < s->queued) pthread_cond_wait(&progress, &lock);
}

static void drain_all_locked(void) {
    while (atomic_load(&ql_async_pending)) pthread_cond_wait(&progress, &lock);
}

/* The stream's kept failure, handed to the caller (and forgotten). */
static int take_error_locked(stream *s) {
    int code = s->err_code;
    if (code) {
        ql_cpu_set_last_error(s->err_msg);
        s->err_code = 0;
    }
    return code;
}

/* ------------------------------------------------------------- launches */
int ql_cpu_launch_queued(const ql_cpu_kernel *k, const unsigned dims[6], unsigned shared,
                         void *stream_handle, void **params) {
    if (!stream_handle) { /* the default stream: after everything queued */
        pthread_mutex_lock(&lock);
        drain_all_locked();
        pthread_mutex_unlock(&lock);
        return ql_cpu_launch_sync(k, dims, shared, params);
    }
    entry *e = calloc(1, sizeof *e);
    if (!e) return ST_OUT_OF_MEMORY;
    if (copy_launch(&e->work, k, dims, shared, params)) {
        free(e);
        return ST_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    stream *s = stream_of((uint64_t)(uintptr_t)stream_handle);
    if (!s) {
        pthread_mutex_unlock(&lock);
        free(e->work.ptrs);
        free(e);
        return ST_INVALID_HANDLE;
    }
    enqueue_locked(s, e);
    int status = ST_OK;
    if (blocking()) {
        drain_locked(s);
        status = take_error_locked(s);
    }
    pthread_mutex_unlock(&lock);
    return status;
}

/* -------------------------------------------------------------- streams */
QL_EXPORT int ql_cpu_stream_create(uint64_t *out) {
    pthread_mutex_lock(&lock);
    int slot = -1;
    for (int i = 0; i < MAX_STREAMS && slot < 0; ++i)
        if (!streams[i].in_use && !streams[i].stop) slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&lock);
        return ST_OUT_OF_MEMORY;
    }
    stream *s = &streams[slot];
    memset(s, 0, sizeof *s);
    pthread_cond_init(&s->work, NULL);
    s->gen = next_gen++;
    s->in_use = 1;
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        s->in_use = 0;
        pthread_mutex_unlock(&lock);
        return ST_OUT_OF_MEMORY;
    }
    *out = ((uint64_t)s->gen << 32) | (uint64_t)(slot + 1);
    pthread_mutex_unlock(&lock);
    return ST_OK;
}

/* Finishes the stream's work, stops its thread, frees the slot. Returns
 * the stream's kept failure, if any. */
QL_EXPORT int ql_cpu_stream_destroy(uint64_t h) {
    pthread_mutex_lock(&lock);
    stream *s = stream_of(h);
    if (!s) {
        pthread_mutex_unlock(&lock);
        return ST_INVALID_HANDLE;
    }
    drain_locked(s);
    int code = take_error_locked(s);
    s->in_use = 0;
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_t t = s->thread;
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    pthread_mutex_lock(&lock);
    s->stop = 0;
    pthread_cond_destroy(&s->work);
    pthread_mutex_unlock(&lock);
    return code;
}

QL_EXPORT int ql_cpu_stream_synchronize(uint64_t h) {
    pthread_mutex_lock(&lock);
    stream *s = stream_of(h);
    int code = ST_INVALID_HANDLE;
    if (s) {
        drain_locked(s);
        code = take_error_locked(s);
    }
    pthread_mutex_unlock(&lock);
    return code;
}

QL_EXPORT int ql_cpu_stream_query(uint64_t h) {
    pthread_mutex_lock(&lock);
    stream *s = stream_of(h);
    int code = !s ? ST_INVALID_HANDLE : s->done < s->queued ? ST_NOT_READY : ST_OK;
    pthread_mutex_unlock(&lock);
    return code;
}

/* Waits for every stream; returns the first kept failure (and forgets it). */
QL_EXPORT int ql_cpu_device_synchronize(void) {
    pthread_mutex_lock(&lock);
    drain_all_locked();
    int code = 0;
    for (int i = 0; i < MAX_STREAMS; ++i)
        if (streams[i].in_use && streams[i].err_code) {
            if (!code) code = take_error_locked(&streams[i]);
            else streams[i].err_code = 0;
        }
    pthread_mutex_unlock(&lock);
    return code;
}

/* --------------------------------------------------------------- events */
QL_EXPORT int ql_cpu_event_create(uint64_t *out) {
    pthread_mutex_lock(&lock);
    int slot = -1;
    for (int i = 0; i < MAX_EVENTS && slot < 0; ++i)
        if (!events[i] || !events[i]->in_use) slot = i;
    if (slot >= 0 && !events[slot]) events[slot] = calloc(1, sizeof(event));
    if (slot < 0 || !events[slot]) {
        pthread_mutex_unlock(&lock);
        return ST_OUT_OF_MEMORY;
    }
    event *ev = events[slot];
    memset(ev, 0, sizeof *ev);
    ev->gen = next_gen++;
    ev->in_use = 1;
    *out = ((uint64_t)ev->gen << 32) | (uint64_t)(slot + 1);
    pthread_mutex_unlock(&lock);
    return ST_OK;
}

/* Waits for the event's pending records first (a queued marker points at it). */
QL_EXPORT int ql_cpu_event_destroy(uint64_t h) {
    pthread_mutex_lock(&lock);
    event *ev = event_of(h);
    if (ev) {
        wait_event_locked(ev, ev->recorded);
        ev->in_use = 0;
    }
    pthread_mutex_unlock(&lock);
    return ev ? ST_OK : ST_INVALID_HANDLE;
}

QL_EXPORT int ql_cpu_event_record(uint64_t e, uint64_t s) {
    entry *item = s ? calloc(1, sizeof *item) : NULL;
    if (s && !item) return ST_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    event *ev = event_of(e);
    stream *st = s ? stream_of(s) : NULL;
    if (!ev || (s && !st)) {
        pthread_mutex_unlock(&lock);
        free(item);
        return ST_INVALID_HANDLE;
    }
    uint64_t seq = ++ev->recorded;
    if (!s) { /* the default stream: reached once everything queued is done */
        drain_all_locked();
        reach_event_locked(ev, seq);
    } else {
        item->work.kind = E_RECORD;
        item->work.ev = ev;
        item->work.ev_seq = seq;
        enqueue_locked(st, item);
    }
    pthread_mutex_unlock(&lock);
    return ST_OK;
}

QL_EXPORT int ql_cpu_event_synchronize(uint64_t e) {
    pthread_mutex_lock(&lock);
    event *ev = event_of(e);
    if (ev) wait_event_locked(ev, ev->recorded);
    pthread_mutex_unlock(&lock);
    return ev ? ST_OK : ST_INVALID_HANDLE;
}

QL_EXPORT int ql_cpu_event_query(uint64_t e) {
    pthread_mutex_lock(&lock);
    event *ev = event_of(e);
    int code = !ev ? ST_INVALID_HANDLE : ev->done < ev->recorded ? ST_NOT_READY : ST_OK;
    pthread_mutex_unlock(&lock);
    return code;
}

/* Milliseconds from `start` to `end`, both recorded and reached. */
QL_EXPORT int ql_cpu_event_elapsed(uint64_t start, uint64_t end, double *ms) {
    pthread_mutex_lock(&lock);
    event *a = event_of(start), *b = event_of(end);
    int code = !a || !b ? ST_INVALID_HANDLE
               : !a->recorded || !b->recorded ? ST_INVALID_VALUE
               : a->done < a->recorded || b->done < b->recorded ? ST_NOT_READY : ST_OK;
    if (!code) *ms = ((double)b->time_ns - (double)a->time_ns) / 1e6;
    pthread_mutex_unlock(&lock);
    return code;
}

/* The stream (0: the caller, now) waits for the event's latest record. */
QL_EXPORT int ql_cpu_stream_wait_event(uint64_t s, uint64_t e) {
    entry *item = s ? calloc(1, sizeof *item) : NULL;
    if (s && !item) return ST_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    event *ev = event_of(e);
    stream *st = s ? stream_of(s) : NULL;
    if (!ev || (s && !st)) {
        pthread_mutex_unlock(&lock);
        free(item);
        return ST_INVALID_HANDLE;
    }
    if (!s) {
        wait_event_locked(ev, ev->recorded);
    } else {
        item->work.kind = E_WAIT;
        item->work.ev = ev;
        item->work.ev_seq = ev->recorded;
        enqueue_locked(st, item);
    }
    pthread_mutex_unlock(&lock);
    return ST_OK;
}

/* --------------------------------------------------------------- graphs */
QL_EXPORT int ql_cpu_graph_create(int n, uint64_t *out) {
    graph *g = calloc(1, sizeof *g);
    if (!g || n < 0 || !(g->nodes = calloc(n ? (size_t)n : 1, sizeof(node)))) {
        free(g);
        return ST_OUT_OF_MEMORY;
    }
    g->magic = GRAPH_MAGIC;
    g->n = n;
    *out = (uint64_t)(uintptr_t)g;
    return ST_OK;
}

static graph *graph_of(uint64_t h) {
    graph *g = (graph *)(uintptr_t)h;
    return g && g->magic == GRAPH_MAGIC && !g->dead ? g : NULL;
}

/* Node i launches kernel `f` with the parameter block `block` (laid out as
 * the kernel's reflected layout says). Also how a node is updated. */
QL_EXPORT int ql_cpu_graph_set_launch(uint64_t h, int i, void *f, const unsigned *dims,
                                      unsigned shared, const unsigned char *block,
                                      uint32_t nbytes) {
    pthread_mutex_lock(&lock);
    graph *g = graph_of(h);
    const ql_cpu_kernel *k = f;
    int code = !g || i < 0 || i >= g->n || !k || !k->run ? ST_INVALID_HANDLE
               : g->in_flight ? ST_NOT_READY : ST_OK;
    if (!code) {
        void *ptrs[512];
        uint32_t off = 0;
        for (uint32_t p = 0; p < k->nparams && p < 512; ++p) {
            uint32_t a = k->params[p].align ? k->params[p].align : 1;
            off = (off + a - 1) / a * a;
            ptrs[p] = (void *)(block + off);
            off += k->params[p].size;
        }
        node fresh;
        memset(&fresh, 0, sizeof fresh);
        if (off > nbytes || k->nparams > 512) code = ST_INVALID_VALUE;
        else if (copy_launch(&fresh, k, dims, shared, ptrs)) code = ST_OUT_OF_MEMORY;
        else if (!dims[0] || !dims[1] || !dims[2] || !dims[3] || !dims[4] || !dims[5]) {
            free(fresh.ptrs);
            code = ST_INVALID_VALUE;
        } else {
            uint64_t blocks = (uint64_t)dims[0] * dims[1] * dims[2], threads;
            if (__builtin_mul_overflow(blocks, (uint64_t)dims[3] * dims[4] * dims[5], &threads))
                threads = UINT64_MAX;
            fresh.run_dims = (ql_cpu_dims){{dims[0], dims[1], dims[2]},
                                           {dims[3], dims[4], dims[5]}, shared, 0, NULL};
            fresh.nblocks = blocks == 1 || threads <= ql_cpu_inline_threads ? blocks : 0;
            free(g->nodes[i].ptrs);
            g->nodes[i] = fresh;
        }
    }
    pthread_mutex_unlock(&lock);
    return code;
}

QL_EXPORT int ql_cpu_graph_set_wait(uint64_t h, int i, uint64_t e) {
    pthread_mutex_lock(&lock);
    graph *g = graph_of(h);
    event *ev = event_of(e);
    int code = !g || !ev || i < 0 || i >= g->n ? ST_INVALID_HANDLE : ST_OK;
    if (!code) {
        free(g->nodes[i].ptrs);
        memset(&g->nodes[i], 0, sizeof(node));
        g->nodes[i].kind = E_WAIT;
        g->nodes[i].ev = ev;
        g->nodes[i].ev_seq = 0; /* set at each replay: the record current then */
    }
    pthread_mutex_unlock(&lock);
    return code;
}

/* Replays the graph: on the default stream (0) now, on the calling thread;
 * on a stream, as one queued entry. An event-wait node waits for the
 * event's latest record at the time of the replay (as a stream would). */
QL_EXPORT int ql_cpu_graph_launch(uint64_t h, uint64_t s) {
    pthread_mutex_lock(&lock);
    graph *g = graph_of(h);
    stream *st = s ? stream_of(s) : NULL;
    if (!g || (s && !st)) {
        pthread_mutex_unlock(&lock);
        return ST_INVALID_HANDLE;
    }
    for (int i = 0; i < g->n; ++i)
        if (g->nodes[i].kind == E_WAIT) g->nodes[i].ev_seq = g->nodes[i].ev->recorded;
    if (!s) {
        drain_all_locked();
        ++g->in_flight;
        pthread_mutex_unlock(&lock);
        char message[MESSAGE_BYTES];
        int status = run_graph(g, message);
        if (status) ql_cpu_set_last_error(message);
        pthread_mutex_lock(&lock);
        --g->in_flight;
        pthread_mutex_unlock(&lock);
        return status;
    }
    entry *e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&lock);
        return ST_OUT_OF_MEMORY;
    }
    e->g = g;
    ++g->in_flight;
    enqueue_locked(st, e);
    int status = ST_OK;
    if (blocking()) {
        drain_locked(st);
        status = take_error_locked(st);
    }
    pthread_mutex_unlock(&lock);
    return status;
}

/* Frees the graph now, or when its queued replays are done. */
QL_EXPORT int ql_cpu_graph_destroy(uint64_t h) {
    pthread_mutex_lock(&lock);
    graph *g = graph_of(h);
    if (g) {
        g->dead = 1;
        if (!g->in_flight) free_graph(g);
    }
    pthread_mutex_unlock(&lock);
    return g ? ST_OK : ST_INVALID_HANDLE;
}

/* The work of the CPU device's streams, events and graphs (see work.h):
 * the state they share, events' records, and running a launch, an event
 * record or wait, or a graph replay. Launches go to the pool (pool.h), as
 * synchronous launches do: a large launch still spreads over the pool, and
 * when another stream holds the pool it runs on the calling (stream's)
 * thread, so two streams overlap. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interrupt.h"
#include "work.h"

/* ----------------------------------------------------------- shared state */
pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t progress = PTHREAD_COND_INITIALIZER; /* any entry finished */
event *events[MAX_EVENTS];
uint32_t next_gen = 1;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Handles: (generation << 32) | (slot + 1), so a stale or forged int is
 * refused rather than followed. Call with the lock held. */
event *event_of(uint64_t h) {
    uint64_t slot = (h & 0xffffffffu) - 1;
    if (slot >= MAX_EVENTS || !events[slot] || !events[slot]->in_use ||
        events[slot]->gen != (uint32_t)(h >> 32))
        return NULL;
    return events[slot];
}

/* ----------------------------------------------------------- running work */
/* Copies a launch's parameters (each `params[i]` points at a value) into
 * one block laid out by the kernel's reflected sizes and alignments. */
int copy_launch(node *w, const ql_cpu_kernel *k, const unsigned dims[6],
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

void wait_event_locked(event *ev, uint64_t seq) {
    while (ev->done < seq) pthread_cond_wait(&progress, &lock);
}

void reach_event_locked(event *ev, uint64_t seq) {
    if (seq > ev->done) {
        ev->done = seq;
        ev->time_ns = now_ns();
    }
    pthread_cond_broadcast(&progress);
}

/* Runs one piece of work without the lock; on failure writes "kernel 'x':
 * message" to `message` and returns the status. */
int run_node(const node *w, char *message) {
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

/* --------------------------------------------------------------- graphs */
/* Replays a graph. Runs of small launches (one block, or few threads) go
 * straight to the kernels' run functions under one recovery point and one
 * error record: no per-launch checks, dims or guard, all done at build. */
int run_graph(graph *g, char *message) {
    ql_cpu_error err;
    ql_guard guard;
    volatile int at = 0;
    uint64_t timeout_ns;
    const char *source = ql_timeout_now(&timeout_ns); /* each node timed (interrupt.h) */
    if (timeout_ns && !ql_thread_ready) ql_fault_setup_thread();
    if (__builtin_setjmp(guard.jump) == 0) {
        for (; at < g->n; at = at + 1) {
            node *w = &g->nodes[at];
            if (w->kind == E_LAUNCH && w->nblocks) {
                err.code = err.ready = 0;
                w->run_dims.error = &err;
                guard.kernel = w->k;
                guard.error = &err;
                if (timeout_ns) ql_watch_begin(&err, timeout_ns, source);
                ql_active_guard = &guard;
                w->k->run(w->ptrs, &w->run_dims, 0, w->nblocks);
                ql_active_guard = 0;
                if (timeout_ns) ql_watch_end();
                if (__atomic_load_n(&err.code, __ATOMIC_ACQUIRE)) break;
                continue;
            }
            int status = run_node(w, message);
            if (status) return status;
        }
    }
    ql_active_guard = 0;
    if (timeout_ns) ql_watch_end();
    if (at >= g->n) return ST_OK;
    while (!__atomic_load_n(&err.ready, __ATOMIC_ACQUIRE)) {}
    const node *w = &g->nodes[at];
    snprintf(message, MESSAGE_BYTES, "kernel '%s' (status %d): %s", w->k->expr, err.code,
             err.message);
    return err.code;
}

void free_graph(graph *g) {
    for (int i = 0; i < g->n; ++i) free(g->nodes[i].ptrs);
    free(g->nodes);
    g->magic = 0;
    free(g);
}

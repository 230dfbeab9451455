/* Graphs of the CPU device: a list of launches and event waits, built node
 * by node (and updated the same way), replayed with one call, destroyed
 * once no queued replay still uses it. The replay itself is work.c's
 * run_graph: a stream's thread runs it too. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams.h"

/* ---------------------------------------------------------------- build */
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
            const uint64_t blocks = (uint64_t)dims[0] * dims[1] * dims[2];
            fresh.run_dims = (ql_cpu_dims){{dims[0], dims[1], dims[2]},
                                           {dims[3], dims[4], dims[5]}, shared, 0, NULL};
            fresh.nblocks = ql_runs_inline(blocks, (uint64_t)dims[3] * dims[4] * dims[5])
                                ? blocks : 0;
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

/* --------------------------------------------------------------- launch */
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

/* -------------------------------------------------------------- destroy */
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

/* Streams, events and graphs of the CPU device: how they behave. This file
 * has the streams; events.c the events; graphs.c the building and launching
 * of graphs; work.c what all three share (the lock, event records, running
 * a queued launch or a graph replay).
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

#include "streams.h"

/* --------------------------------------------------------- shared state */
_Atomic uint64_t ql_async_pending;

static stream streams[MAX_STREAMS];

int blocking(void) {
    static int value = -1;
    if (value < 0) {
        const char *s = getenv("QUICKLAUNCH_LAUNCH_BLOCKING");
        value = s && *s && strcmp(s, "0") != 0;
    }
    return value;
}

/* Handles: (generation << 32) | (slot + 1), so a stale or forged int is
 * refused rather than followed. Call with the lock held. */
stream *stream_of(uint64_t h) {
    uint64_t slot = (h & 0xffffffffu) - 1;
    if (slot >= MAX_STREAMS || !streams[slot].in_use || streams[slot].gen != (uint32_t)(h >> 32))
        return NULL;
    return &streams[slot];
}

/* ----------------------------------------------------------- the threads */
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

void enqueue_locked(stream *s, entry *e) {
    e->next = NULL;
    if (s->tail) s->tail->next = e;
    else s->head = e;
    s->tail = e;
    ++s->queued;
    atomic_fetch_add(&ql_async_pending, 1);
    pthread_cond_signal(&s->work);
}

void drain_locked(stream *s) {
    while (s->done < s->queued) pthread_cond_wait(&progress, &lock);
}

void drain_all_locked(void) {
    while (atomic_load(&ql_async_pending)) pthread_cond_wait(&progress, &lock);
}

/* The stream's kept failure, handed to the caller (and forgotten). */
int take_error_locked(stream *s) {
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

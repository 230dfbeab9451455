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

#include "interrupt.h"
#include "streams.h"

/* --------------------------------------------------------- shared state */
_Atomic uint64_t ql_async_pending;

static stream streams[MAX_STREAMS];
QL_EXPORT const int ql_cpu_max_streams = MAX_STREAMS, ql_cpu_max_events = MAX_EVENTS;

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
        ql_thread_timeout_ns = s->timeout_ns;
        pthread_mutex_unlock(&lock);
        int status;
        if (e->epoch < atomic_load(&ql_interrupts) && (e->g || e->work.kind != E_RECORD)) {
            /* queued before a Ctrl-C: not started (an event record still
             * happens, or its waiters would wait for ever) */
            status = e->g || e->work.kind == E_LAUNCH ? QL_CPU_ERROR_INTERRUPTED : ST_OK;
            snprintf(message, MESSAGE_BYTES, "kernel '%s': interrupted (SIGINT, Ctrl-C) "
                     "before it started; work queued before the interrupt does not run",
                     e->g ? "graph replay" : e->work.k ? e->work.k->expr : "?");
        } else {
            status = e->g ? run_graph(e->g, message) : run_node(&e->work, message);
        }
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
    if (!s->has_thread) { /* a fork() child's copy of a stream: its thread, now */
        if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
            if (!s->err_code) {
                s->err_code = ST_OUT_OF_MEMORY;
                snprintf(s->err_msg, sizeof s->err_msg, "the stream's thread could not start");
            }
            free(e->work.ptrs);
            free(e);
            return;
        }
        s->has_thread = 1;
    }
    e->epoch = atomic_load(&ql_interrupts);
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
    while (atomic_load(&ql_async_pending) & ~QL_WATCH_BIT) pthread_cond_wait(&progress, &lock);
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
        return ST_TOO_MANY;
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
    s->has_thread = 1;
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
    const int joined = s->has_thread;
    pthread_mutex_unlock(&lock);
    if (joined) pthread_join(t, NULL);
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

/* Entries queued on streams and not finished (ql_async_pending without the
 * timeout bit, interrupt.h): what a reader outside the runtime should use. */
QL_EXPORT uint64_t ql_cpu_queued_work(void) {
    return atomic_load(&ql_async_pending) & ~QL_WATCH_BIT;
}

/* A stream's own timeout in seconds (0: the device's); see interrupt.h. */
QL_EXPORT int ql_cpu_stream_set_timeout(uint64_t h, double seconds) {
    if (!(seconds >= 0 && seconds < 1e9)) return ST_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    stream *s = stream_of(h);
    if (s) s->timeout_ns = (uint64_t)(seconds * 1e9);
    pthread_mutex_unlock(&lock);
    return s ? ST_OK : ST_INVALID_HANDLE;
}

/* ----------------------------------------------------------------- fork */
/* fork() copies streams but none of their threads. The child keeps every
 * stream handle valid: a stream gets a thread again when work is next
 * queued on it; work that was queued in the parent is dropped, and the
 * stream's next synchronisation says so. Events whose records were
 * dropped count as reached (nothing is left to reach them). */
static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }

static void after_fork_child(void) {
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&progress, NULL);
    for (int i = 0; i < MAX_STREAMS; ++i) {
        stream *s = &streams[i];
        if (!s->in_use && !s->stop) continue;
        pthread_cond_init(&s->work, NULL);
        s->has_thread = 0;
        if (!s->in_use) { /* being closed by another thread of the parent */
            s->stop = 0;
            continue;
        }
        uint64_t dropped = s->queued - s->done;
        for (entry *e = s->head, *next; e; e = next) {
            next = e->next;
            if (e->g && --e->g->in_flight == 0 && e->g->dead) free_graph(e->g);
            free(e->work.ptrs);
            free(e);
        }
        s->head = s->tail = NULL;
        s->done = s->queued;
        if (dropped && !s->err_code) {
            s->err_code = ST_FORKED;
            snprintf(s->err_msg, sizeof s->err_msg,
                     "%llu piece%s of work queued on this stream in the parent process did "
                     "not run in this fork() child (a stream's thread does not survive fork; "
                     "the stream works again for work queued from now on)",
                     (unsigned long long)dropped, dropped == 1 ? "" : "s");
        }
    }
    for (int i = 0; i < MAX_EVENTS; ++i)
        if (events[i] && events[i]->in_use && events[i]->done < events[i]->recorded)
            events[i]->done = events[i]->recorded;
    atomic_fetch_and(&ql_async_pending, QL_WATCH_BIT);
}

__attribute__((constructor)) static void register_fork_handlers(void) {
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

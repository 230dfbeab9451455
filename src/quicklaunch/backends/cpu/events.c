/* Events of the CPU device: create, record, wait, query, time, destroy. A
 * record on a stream is a queued marker (reached by the stream's thread);
 * on the default stream it is reached once every stream has drained. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "streams.h"

QL_EXPORT int ql_cpu_event_create(uint64_t *out) {
    pthread_mutex_lock(&lock);
    static int hint; /* where the last search ended: creation stays O(1) */
    int slot = -1;
    for (int n = 0; n < MAX_EVENTS && slot < 0; ++n) {
        int i = (hint + n) % MAX_EVENTS;
        if (!events[i] || !events[i]->in_use) slot = i;
    }
    if (slot >= 0) hint = (slot + 1) % MAX_EVENTS;
    if (slot >= 0 && !events[slot]) events[slot] = calloc(1, sizeof(event));
    if (slot < 0 || !events[slot]) {
        pthread_mutex_unlock(&lock);
        return slot < 0 ? ST_TOO_MANY : ST_OUT_OF_MEMORY;
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

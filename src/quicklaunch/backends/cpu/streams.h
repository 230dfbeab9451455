/* Streams of the CPU device (streams.c): in-order queues, each with a
 * thread of its own, and the slow half of the launch entry. Calls work.c
 * and the pool; runtime.c (the launch entry), events.c and graphs.c call
 * it. Internal to the runtime library. */
#ifndef QL_CPU_STREAMS_H
#define QL_CPU_STREAMS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "work.h"

#define MAX_STREAMS 1024

typedef struct entry {
    struct entry *next;
    node work;               /* kind, and a launch's copied parameters */
    graph *g;                /* or a graph replay */
    uint64_t epoch;          /* ql_interrupts when it was queued */
} entry;

typedef struct stream {
    uint32_t gen;
    int in_use, stop;
    int has_thread;          /* 0 in a fork() child until work is queued */
    uint64_t timeout_ns;     /* this stream's timeout, or 0 */
    pthread_t thread;
    pthread_cond_t work;
    entry *head, *tail;
    uint64_t queued, done;
    int err_code;
    char err_msg[MESSAGE_BYTES];
} stream;

/* Entries queued on any stream and not yet finished. A launch on the
 * default stream waits for it to reach zero first (CUDA's legacy default
 * stream); the launch entry reads it once per launch. */
extern _Atomic uint64_t ql_async_pending QL_HIDDEN;

/* The slow half of ql_cpu_launch: a launch on a stream, or on the default
 * stream while streams have work queued. */
QL_HIDDEN int ql_cpu_launch_queued(const ql_cpu_kernel *k, const unsigned dims[6],
                                   unsigned shared, void *stream, void **params);

/* QUICKLAUNCH_LAUNCH_BLOCKING is set: stream work waits for itself. */
QL_HIDDEN int blocking(void);

/* A stream handle's stream, or NULL (see event_of). Call with the lock held. */
QL_HIDDEN stream *stream_of(uint64_t h);

/* With the lock held: queue an entry on a stream; wait for one stream, or
 * for every stream, to finish its queued work; hand the stream's kept
 * failure to the caller (and forget it). */
QL_HIDDEN void enqueue_locked(stream *s, entry *e);
QL_HIDDEN void drain_locked(stream *s);
QL_HIDDEN void drain_all_locked(void);
QL_HIDDEN int take_error_locked(stream *s);

#endif

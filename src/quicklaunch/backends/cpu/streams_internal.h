/* Internals shared by the CPU device's streams (streams.c), events
 * (events.c) and graphs (graphs.c): their structures, the one lock that
 * guards them all, and the helpers that run under it. Not part of the
 * runtime's interface with runtime.c (that is streams.h). */
#ifndef QL_CPU_STREAMS_INTERNAL_H
#define QL_CPU_STREAMS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "streams.h"

#define QL_EXPORT __attribute__((visibility("default")))
#define MAX_STREAMS 1024
#define MAX_EVENTS 65536
#define MESSAGE_BYTES 1100

enum { ST_OK = 0, ST_INVALID_VALUE = 1, ST_OUT_OF_MEMORY = 2, ST_INVALID_HANDLE = 400,
       ST_NOT_READY = 600 };
enum { E_LAUNCH, E_RECORD, E_WAIT, E_GRAPH };


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

/* --------------------------------------------- shared state (streams.c) */
/* One mutex guards all of it; `progress` is signalled when any entry
 * finishes or any event is reached. */
extern pthread_mutex_t lock QL_HIDDEN;
extern pthread_cond_t progress QL_HIDDEN;
extern event *events[MAX_EVENTS] QL_HIDDEN;
extern uint32_t next_gen QL_HIDDEN; /* generation of the next stream or event */

/* QUICKLAUNCH_LAUNCH_BLOCKING is set: stream work waits for itself. */
QL_HIDDEN int blocking(void);

/* Handles: (generation << 32) | (slot + 1), so a stale or forged int is
 * refused (NULL) rather than followed. Call with the lock held. */
QL_HIDDEN stream *stream_of(uint64_t h);
QL_HIDDEN event *event_of(uint64_t h);

/* Copies a launch's parameters (each `params[i]` points at a value) into
 * one block laid out by the kernel's reflected sizes and alignments. */
QL_HIDDEN int copy_launch(node *w, const ql_cpu_kernel *k, const unsigned dims[6],
                          unsigned shared, void **params);

/* With the lock held: wait until the event's record `seq` is reached; mark
 * it reached (stamping the time) and wake the waiters. */
QL_HIDDEN void wait_event_locked(event *ev, uint64_t seq);
QL_HIDDEN void reach_event_locked(event *ev, uint64_t seq);

/* Runs one piece of work without the lock; on failure writes "kernel 'x':
 * message" to `message` (MESSAGE_BYTES) and returns the status. */
QL_HIDDEN int run_node(const node *w, char *message);

/* With the lock held: queue an entry on a stream; wait for one stream, or
 * for every stream, to finish its queued work; hand the stream's kept
 * failure to the caller (and forget it). */
QL_HIDDEN void enqueue_locked(stream *s, entry *e);
QL_HIDDEN void drain_locked(stream *s);
QL_HIDDEN void drain_all_locked(void);
QL_HIDDEN int take_error_locked(stream *s);

/* ------------------------------------------------------------- graphs.c */
/* Replays a graph without the lock (like run_node), and frees one. */
QL_HIDDEN int run_graph(graph *g, char *message);
QL_HIDDEN void free_graph(graph *g);

#endif

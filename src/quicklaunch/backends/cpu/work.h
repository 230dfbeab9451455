/* What streams, events and graphs of the CPU device share (work.c): their
 * structures, the one lock that guards them all, events' records, and the
 * work a stream or a graph replay runs (a launch, an event record or wait,
 * a whole graph). It calls only the pool (pool.h); streams.c, events.c and
 * graphs.c call it. Internal to the runtime library. */
#ifndef QL_CPU_WORK_H
#define QL_CPU_WORK_H

#include <pthread.h>
#include <stdint.h>

#include "pool.h"

#define MAX_EVENTS 65536
#define MESSAGE_BYTES 1100

/* ST_TOO_MANY: MAX_STREAMS live streams or MAX_EVENTS events (a limit, not
 * memory); ST_FORKED: work queued at fork() that the child never ran. */
enum { ST_OK = 0, ST_INVALID_VALUE = 1, ST_OUT_OF_MEMORY = 2, ST_TOO_MANY = 3, ST_FORKED = 4,
       ST_INVALID_HANDLE = 400, ST_NOT_READY = 600 };
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

/* ------------------------------------------------------------ shared state */
/* One mutex guards all of it; `progress` is signalled when any entry
 * finishes or any event is reached. */
extern pthread_mutex_t lock QL_HIDDEN;
extern pthread_cond_t progress QL_HIDDEN;
extern event *events[MAX_EVENTS] QL_HIDDEN;
extern uint32_t next_gen QL_HIDDEN; /* generation of the next stream or event */

/* Handles: (generation << 32) | (slot + 1), so a stale or forged int is
 * refused (NULL) rather than followed. Call with the lock held. */
QL_HIDDEN event *event_of(uint64_t h);

/* With the lock held: wait until the event's record `seq` is reached; mark
 * it reached (stamping the time) and wake the waiters. */
QL_HIDDEN void wait_event_locked(event *ev, uint64_t seq);
QL_HIDDEN void reach_event_locked(event *ev, uint64_t seq);

/* ------------------------------------------------------------------- work */
/* Copies a launch's parameters (each `params[i]` points at a value) into
 * one block laid out by the kernel's reflected sizes and alignments. */
QL_HIDDEN int copy_launch(node *w, const ql_cpu_kernel *k, const unsigned dims[6],
                          unsigned shared, void **params);

/* Runs one piece of work without the lock; on failure writes "kernel 'x':
 * message" to `message` (MESSAGE_BYTES) and returns the status. */
QL_HIDDEN int run_node(const node *w, char *message);

/* Replays a graph without the lock (like run_node), and frees one. */
QL_HIDDEN int run_graph(graph *g, char *message);
QL_HIDDEN void free_graph(graph *g);

#endif

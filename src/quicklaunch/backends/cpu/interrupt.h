/* Stopping running kernels from outside (interrupt.c): Ctrl-C (SIGINT) and
 * timeouts, and a kernel's own abort()/exit() (ql_launch_state.h).
 *
 * Every thread that runs kernels has a slot in a registry (its pthread and
 * the address of its recovery point, fault.h). Stopping means sending each
 * thread that is inside a kernel a private realtime signal; its handler
 * (beside the fault handler, and in the same way) records the block it was
 * running, drops it and jumps to the recovery point. The first thread of a
 * launch to be stopped waits briefly for the others and writes one message
 * naming every block that was still running.
 *
 * SIGINT: the runtime's handler chains to the one installed before it
 * (Python's, which arranges the KeyboardInterrupt) and then stops every
 * running kernel; queued stream work from before the interrupt does not
 * start. Timeouts: a watched launch (QUICKLAUNCH_CPU_TIMEOUT, set_timeout,
 * a stream's timeout) publishes a deadline in its slot; a watchdog thread
 * stops the launch's blocks when it passes. Unwatched launches (the
 * default) pay nothing. Internal to the runtime library. */
#ifndef QL_CPU_INTERRUPT_H
#define QL_CPU_INTERRUPT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fault.h"

#define QL_STOP_SIGNAL (SIGRTMAX - QL_CPU_STOP_SIGNAL_FROM_MAX)

/* Set in ql_async_pending (streams.h) while a timeout is in force, so the
 * launch entry's one test sends launches down the watched path. */
#define QL_WATCH_BIT (1ull << 63)

/* Interrupts (SIGINT) so far: stream work queued before the latest does
 * not start. */
extern _Atomic uint64_t ql_interrupts __attribute__((visibility("hidden")));

/* From install (fault.c): the stop and SIGINT handlers. */
void ql_stop_install(void);
/* From ql_fault_setup_thread: this thread gets a registry slot. */
void ql_stop_register_thread(void);
/* The stop signal's handler, which also takes a kernel's abort()/exit(). */
void ql_on_stop(int sig, siginfo_t *si, void *uc);

/* The device-wide timeout in ns (0: none), and the calling thread's own (a
 * stream's thread sets its stream's), which wins when nonzero. */
extern _Atomic uint64_t ql_timeout_ns __attribute__((visibility("hidden")));
extern __thread uint64_t ql_thread_timeout_ns QL_TLS;

/* The timeout in force on this thread (0: none), and where it comes from
 * (NULL: the device's). A deadline for the launch whose error record is
 * `e`, run by this thread (and the pool), until ql_watch_end. */
const char *ql_timeout_now(uint64_t *timeout_ns);
void ql_watch_begin(ql_cpu_error *e, uint64_t timeout_ns, const char *source);
void ql_watch_end(void);

/* A launch now with a deadline (see ql_cpu_launch_now); `source` names
 * where the timeout came from, for the message. */
int ql_cpu_launch_watched(const ql_cpu_kernel *k, const unsigned dims[6], unsigned shared,
                          void **params, uint64_t timeout_ns, const char *source);

/* ----------------------------------- shared by interrupt.c and watchdog.c */
#define MAX_SLOTS 4096

typedef struct slot {
    _Atomic int live;
    pthread_t thread;
    ql_guard **guard;                 /* &ql_active_guard of that thread */
    _Atomic uint32_t targeted, acked; /* the latest stop round sent to it, and answered */
    ql_cpu_error *error;              /* answered: the launch it stopped (or NULL) */
    uint32_t block[3];                /* answered: the block it was running */
    /* A watched launch on this thread: its deadline (0: none) and record. */
    _Atomic uint64_t deadline_ns, watch_seq;
    ql_cpu_error *_Atomic watch_error;
    uint64_t watch_timeout_ns;
    const char *watch_source;
} slot;

extern slot ql_slots[MAX_SLOTS] __attribute__((visibility("hidden")));
extern _Atomic int ql_slots_used __attribute__((visibility("hidden")));
extern __thread slot *ql_my_slot QL_TLS;

uint64_t ql_now_ns(void);
/* Signals every thread inside a kernel (only those running `target`'s
 * launch, if set, whose slot `owner` is still at `seq`). Async-signal-safe.
 * Returns 0, sending nothing, when another round is in progress. */
int ql_start_round(int reason, ql_cpu_error *target, slot *owner, uint64_t seq,
                   uint64_t timeout_ns, const char *source);
/* Puts the runtime's SIGINT handler in front of whatever handles SIGINT. */
void ql_chain_sigint(void);
void ql_ensure_watchdog(void);

#endif

/* Stopping running kernels: the registry, stop rounds and their handler
 * (which also takes a kernel's abort()/exit()), SIGINT. Timeouts and the
 * watchdog are watchdog.c. See interrupt.h. Everything a signal handler here touches is a plain or
 * atomic word of the registry; the handlers call only async-signal-safe
 * functions (pthread_kill, sigaction, raise, sched_yield, clock_gettime). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fmt.h"
#include "interrupt.h"
#include "pool.h"
#include "streams.h"

/* ------------------------------------------------------------- registry */

slot ql_slots[MAX_SLOTS];
_Atomic int ql_slots_used;            /* slots [0, ql_slots_used) have been used */
__thread slot *ql_my_slot QL_TLS;
static pthread_key_t slot_key;

_Atomic uint64_t ql_interrupts;

/* One stop round at a time: what it stops and why. */
static _Atomic int round_busy, round_sending;
static _Atomic uint32_t round_id;
static int round_reason;              /* a status: timeout or interrupted */
static ql_cpu_error *round_target;    /* the launch to stop, or NULL for all */
static slot *round_owner;             /* the watched launch's slot, and its sequence */
static uint64_t round_seq, round_timeout_ns;
static const char *round_source;

uint64_t ql_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void unregister(void *p) {
    slot *s = p;
    atomic_store(&s->deadline_ns, 0);
    atomic_store(&s->live, 0);
    /* A round that read `live` before the store may still signal us: wait
     * until it is over, so it never signals a thread that is gone. */
    while (atomic_load(&round_busy)) sched_yield();
    ql_my_slot = 0;
}

void ql_stop_register_thread(void) {
    if (ql_my_slot) return;
    for (int i = 0; i < MAX_SLOTS; ++i) {
        int expected = 0;
        if (atomic_load(&ql_slots[i].live) ||
            !atomic_compare_exchange_strong(&ql_slots[i].live, &expected, 1))
            continue;
        slot *s = &ql_slots[i];
        s->thread = pthread_self();
        s->guard = &ql_active_guard;
        s->error = 0;
        atomic_store(&s->deadline_ns, 0);
        atomic_store(&s->acked, atomic_load(&s->targeted));
        int hw = atomic_load(&ql_slots_used);
        while (hw < i + 1 && !atomic_compare_exchange_weak(&ql_slots_used, &hw, i + 1)) {}
        ql_my_slot = s;
        pthread_setspecific(slot_key, s);
        return;
    }
    /* A full registry: this thread's kernels cannot be stopped from outside. */
}

/* ---------------------------------------------------------- stop rounds */
/* Signals every thread inside a kernel (those of `target` only, if set).
 * Async-signal-safe: the SIGINT handler calls it. Returns 0 when another
 * round is in progress. */
int ql_start_round(int reason, ql_cpu_error *target, slot *owner, uint64_t seq,
                       uint64_t timeout_ns, const char *source) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&round_busy, &expected, 1)) return 0;
    round_reason = reason;
    round_target = target;
    round_owner = owner;
    round_seq = seq;
    round_timeout_ns = timeout_ns;
    round_source = source;
    atomic_store(&round_sending, 1);
    const uint32_t r = atomic_fetch_add(&round_id, 1) + 1;
    const int hw = atomic_load(&ql_slots_used);
    for (int i = 0; i < hw; ++i) {
        slot *s = &ql_slots[i];
        if (!atomic_load(&s->live) || !*(ql_guard *volatile *)s->guard) continue;
        atomic_store(&s->targeted, r);
        if (pthread_kill(s->thread, QL_STOP_SIGNAL) != 0) atomic_store(&s->acked, r);
    }
    atomic_store(&round_sending, 0);
    atomic_store(&round_busy, 0);
    return 1;
}

/* The first thread of a launch to be stopped: waits (briefly: a thread
 * may be descheduled) for the round's other threads, then writes the one
 * message naming the blocks that were still running. */
static void write_stop_message(ql_cpu_error *e, uint32_t r, int reason, uint64_t timeout_ns,
                               const char *source) {
    const uint64_t give_up = ql_now_ns() + 500000000u;
    while (atomic_load(&round_sending) && ql_now_ns() < give_up) sched_yield();
    const int hw = atomic_load(&ql_slots_used);
    for (int i = 0; i < hw; ++i)
        while (atomic_load(&ql_slots[i].targeted) == r && atomic_load(&ql_slots[i].acked) != r &&
               ql_now_ns() < give_up)
            sched_yield();
    unsigned n = 0;
    for (int i = 0; i < hw; ++i)
        if (atomic_load(&ql_slots[i].acked) == r && ql_slots[i].error == e) ++n;
    out o = {e->message, e->message + sizeof e->message - 1};
    if (reason == QL_CPU_ERROR_LAUNCH_TIMEOUT) {
        put(&o, "timed out after ");
        put_uint(&o, timeout_ns / 1000000000u);
        put(&o, ".");
        uint64_t ms = timeout_ns % 1000000000u / 1000000u;
        put(&o, ms < 100 ? (ms < 10 ? "00" : "0") : "");
        put_uint(&o, ms);
        put(&o, " s (");
        put(&o, source ? source : "the CPU device's timeout");
        put(&o, ")");
    } else {
        put(&o, "interrupted (SIGINT, Ctrl-C)");
    }
    put(&o, " with ");
    put_uint(&o, n);
    put(&o, n == 1 ? " block still running: " : " blocks still running: ");
    unsigned listed = 0;
    for (int i = 0; i < hw; ++i) {
        if (atomic_load(&ql_slots[i].acked) != r || ql_slots[i].error != e) continue;
        if (listed == 16) {
            put(&o, ", ...");
            break;
        }
        put_triple(&o, listed++ ? ", block" : "block", ql_slots[i].block);
    }
    put(&o, "; blocks that had finished wrote their results, the blocks still running "
            "stopped where they were, the others did not run");
    *o.p = '\0';
    __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
}

static void jump_out(ql_guard *g, const ucontext_t *uc) {
    pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, 0);
    __builtin_longjmp(g->jump, 1);
}

/* A kernel's abort()/exit(): fail its launch like __trap(). */
static void device_exit(ql_guard *g, const ql_cpu_device_exit *x, const ucontext_t *uc) {
    ql_active_guard = 0;
    ql_cpu_fault f;
    memset(&f, 0, sizeof f);
    f.at_call = 1;
    g->kernel->fault(&f);
    ql_cpu_error *e = g->error;
    int expected = 0;
    if (__atomic_compare_exchange_n(&e->code, &expected, QL_CPU_ERROR_LAUNCH_FAILED, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        out o = {e->message, e->message + sizeof e->message - 1};
        put(&o, x->what);
        put(&o, " in ");
        put_triple(&o, "block", f.block);
        put(&o, ", ");
        put_triple(&o, "thread", f.thread);
        put(&o, x->status < 0 ? ": the kernel aborted (on a GPU, a trap); the process "
                                "lives on"
                              : ": device code cannot end the process; the launch "
                                "failed instead");
        if (f.thread[0] == QL_CPU_UNKNOWN)
            put(&o, " (an optimised build does not track threadIdx.x; compile with "
                    "debug=True or QUICKLAUNCH_DEBUG=1 to name the thread)");
        *o.p = '\0';
        __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
    }
    jump_out(g, uc);
}

void ql_on_stop(int sig, siginfo_t *si, void *ucv) {
    (void)sig;
    const int saved_errno = errno;
    const ucontext_t *uc = ucv;
    ql_guard *g = ql_active_guard;
    if (si->si_code == SI_QUEUE && si->si_pid == getpid() && si->si_value.sival_ptr) {
        const ql_cpu_device_exit *x = si->si_value.sival_ptr;
        if (x->magic == QL_CPU_EXIT_MAGIC) {
            if (g) device_exit(g, x, uc);
            if (x->status >= 0) _exit(x->status); /* not in a kernel: as plain C */
            signal(SIGABRT, SIG_DFL);
            raise(SIGABRT);
            return;
        }
    }
    slot *me = ql_my_slot;
    if (!me) return;
    const uint32_t r = atomic_load(&round_id);
    const int reason = round_reason;
    ql_cpu_error *target = round_target;
    if (!g || !reason || (target && (g->error != target || !round_owner ||
                                     atomic_load(&round_owner->watch_seq) != round_seq))) {
        me->error = 0;
        atomic_store(&me->acked, r);
        errno = saved_errno;
        return;
    }
    const uint64_t timeout_ns = round_timeout_ns;
    const char *source = round_source;
    ql_active_guard = 0;
    ql_cpu_fault f;
    memset(&f, 0, sizeof f);
    g->kernel->fault(&f); /* where it was; the module drops the block */
    ql_cpu_error *e = g->error;
    memcpy(me->block, f.block, sizeof me->block);
    me->error = e;
    int expected = 0;
    const int claimed = __atomic_compare_exchange_n(&e->code, &expected, reason, 0,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    atomic_store(&me->acked, r);
    if (claimed) write_stop_message(e, r, reason, timeout_ns, source);
    jump_out(g, uc);
}

/* --------------------------------------------------------------- SIGINT */
static struct sigaction previous_int;

static void on_sigint(int sig, siginfo_t *si, void *uc) {
    const int saved_errno = errno;
    const struct sigaction *p = &previous_int;
    if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_IGN) return;
    if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_DFL) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT); /* delivered on return: the process ends as it would have */
        return;
    }
    if (p->sa_flags & SA_SIGINFO) p->sa_sigaction(sig, si, uc);
    else p->sa_handler(sig);
    atomic_fetch_add(&ql_interrupts, 1);
    ql_start_round(QL_CPU_ERROR_INTERRUPTED, 0, 0, 0, 0, 0);
    errno = saved_errno;
}

/* Puts on_sigint in front of whatever handles SIGINT now (Python may have
 * replaced it with signal.signal: the watchdog calls this again). */
void ql_chain_sigint(void) {
    struct sigaction now;
    if (sigaction(SIGINT, 0, &now) != 0) return;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigint) return;
    if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN) return; /* ignored */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigint;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (now.sa_flags & SA_RESTART);
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, QL_STOP_SIGNAL); /* a stop sent to itself waits for the return */
    previous_int = now;
    sigaction(SIGINT, &sa, 0);
}

/* The child of fork() has one thread: the one that forked. */
static void after_fork_child(void) {
    atomic_store(&round_busy, 0);
    atomic_store(&round_sending, 0);
    const int hw = atomic_load(&ql_slots_used);
    for (int i = 0; i < hw; ++i) {
        atomic_store(&ql_slots[i].deadline_ns, 0);
        if (&ql_slots[i] != ql_my_slot) atomic_store(&ql_slots[i].live, 0);
        else ql_slots[i].thread = pthread_self();
    }
}

void ql_stop_install(void) {
    pthread_key_create(&slot_key, unregister);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ql_on_stop;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(QL_STOP_SIGNAL, &sa, 0);
    ql_chain_sigint();
    pthread_atfork(NULL, NULL, after_fork_child);
    ql_ensure_watchdog();
}


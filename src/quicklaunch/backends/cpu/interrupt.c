/* Stopping running kernels: Ctrl-C, timeouts, a kernel's abort()/exit().
 * See interrupt.h. Everything a signal handler here touches is a plain or
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
#include <linux/futex.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "fmt.h"
#include "interrupt.h"
#include "pool.h"
#include "streams.h"

/* ------------------------------------------------------------- registry */
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

static slot slots[MAX_SLOTS];
static _Atomic int high_water;        /* slots [0, high_water) have been used */
static __thread slot *my_slot QL_TLS;
static pthread_key_t slot_key;

_Atomic uint64_t ql_interrupts;
_Atomic uint64_t ql_timeout_ns;
__thread uint64_t ql_thread_timeout_ns QL_TLS;

/* One stop round at a time: what it stops and why. */
static _Atomic int round_busy, round_sending;
static _Atomic uint32_t round_id;
static int round_reason;              /* a status: timeout or interrupted */
static ql_cpu_error *round_target;    /* the launch to stop, or NULL for all */
static slot *round_owner;             /* the watched launch's slot, and its sequence */
static uint64_t round_seq, round_timeout_ns;
static const char *round_source;

static uint64_t now_ns(void) {
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
    my_slot = 0;
}

void ql_stop_register_thread(void) {
    if (my_slot) return;
    for (int i = 0; i < MAX_SLOTS; ++i) {
        int expected = 0;
        if (atomic_load(&slots[i].live) ||
            !atomic_compare_exchange_strong(&slots[i].live, &expected, 1))
            continue;
        slot *s = &slots[i];
        s->thread = pthread_self();
        s->guard = &ql_active_guard;
        s->error = 0;
        atomic_store(&s->deadline_ns, 0);
        atomic_store(&s->acked, atomic_load(&s->targeted));
        int hw = atomic_load(&high_water);
        while (hw < i + 1 && !atomic_compare_exchange_weak(&high_water, &hw, i + 1)) {}
        my_slot = s;
        pthread_setspecific(slot_key, s);
        return;
    }
    /* A full registry: this thread's kernels cannot be stopped from outside. */
}

/* ---------------------------------------------------------- stop rounds */
/* Signals every thread inside a kernel (those of `target` only, if set).
 * Async-signal-safe: the SIGINT handler calls it. Returns 0 when another
 * round is in progress. */
static int start_round(int reason, ql_cpu_error *target, slot *owner, uint64_t seq,
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
    const int hw = atomic_load(&high_water);
    for (int i = 0; i < hw; ++i) {
        slot *s = &slots[i];
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
    const uint64_t give_up = now_ns() + 500000000u;
    while (atomic_load(&round_sending) && now_ns() < give_up) sched_yield();
    const int hw = atomic_load(&high_water);
    for (int i = 0; i < hw; ++i)
        while (atomic_load(&slots[i].targeted) == r && atomic_load(&slots[i].acked) != r &&
               now_ns() < give_up)
            sched_yield();
    unsigned n = 0;
    for (int i = 0; i < hw; ++i)
        if (atomic_load(&slots[i].acked) == r && slots[i].error == e) ++n;
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
        if (atomic_load(&slots[i].acked) != r || slots[i].error != e) continue;
        if (listed == 16) {
            put(&o, ", ...");
            break;
        }
        put_triple(&o, listed++ ? ", block" : "block", slots[i].block);
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
    g->kernel->fault(&f);
    ql_cpu_error *e = g->dims->error;
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
    slot *me = my_slot;
    if (!me) return;
    const uint32_t r = atomic_load(&round_id);
    const int reason = round_reason;
    ql_cpu_error *target = round_target;
    if (!g || !reason || (target && (g->dims->error != target || !round_owner ||
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
    ql_cpu_error *e = g->dims->error;
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
    start_round(QL_CPU_ERROR_INTERRUPTED, 0, 0, 0, 0, 0);
    errno = saved_errno;
}

/* Puts on_sigint in front of whatever handles SIGINT now (Python may have
 * replaced it with signal.signal: the watchdog calls this again). */
static void chain_sigint(void) {
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

/* ------------------------------------------------------------- watchdog */
static pthread_mutex_t watchdog_lock = PTHREAD_MUTEX_INITIALIZER;
static int watchdog_running;
/* When the watchdog next wakes by itself; a launch whose deadline is sooner
 * bumps `wake_word` and wakes it (a futex). Idle, it wakes once a second. */
static _Atomic uint64_t planned_wake;
static _Atomic uint32_t wake_word;

static void wake_watchdog_for(uint64_t deadline) {
    const uint64_t planned = atomic_load_explicit(&planned_wake, memory_order_relaxed);
    if (planned && deadline >= planned) return; /* 0: it is scanning, wake it again */
    atomic_store(&planned_wake, deadline);
    atomic_fetch_add(&wake_word, 1);
    syscall(SYS_futex, (uint32_t *)&wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *watchdog_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0);
    for (;;) {
        atomic_store(&planned_wake, 0);
        const uint32_t seen = atomic_load(&wake_word);
        uint64_t now = now_ns(), next = now + 1000000000u;
        const int hw = atomic_load(&high_water);
        for (int i = 0; i < hw; ++i) {
            slot *s = &slots[i];
            uint64_t d = atomic_load(&s->deadline_ns);
            if (!d || !atomic_load(&s->live)) continue;
            if (d > now) {
                if (d < next) next = d;
                continue;
            }
            uint64_t seq = atomic_load(&s->watch_seq);
            if (!atomic_compare_exchange_strong(&s->deadline_ns, &d, 0)) continue;
            if (!start_round(QL_CPU_ERROR_LAUNCH_TIMEOUT, atomic_load(&s->watch_error), s, seq,
                             s->watch_timeout_ns, s->watch_source))
                atomic_store(&s->deadline_ns, now + 10000000u); /* busy: try again soon */
        }
        chain_sigint();
        atomic_store(&planned_wake, next);
        uint64_t wait = next > now ? next - now : 1000000u;
        struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
        syscall(SYS_futex, (uint32_t *)&wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
    return NULL;
}

static void ensure_watchdog(void) {
    pthread_mutex_lock(&watchdog_lock);
    if (!watchdog_running) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256u << 10);
        if (pthread_create(&t, &attr, watchdog_main, 0) == 0) {
            pthread_detach(t);
            watchdog_running = 1;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&watchdog_lock);
}

/* The child of fork() has one thread: the one that forked. */
static void after_fork_child(void) {
    pthread_mutex_init(&watchdog_lock, NULL);
    watchdog_running = 0;
    atomic_store(&round_busy, 0);
    atomic_store(&round_sending, 0);
    const int hw = atomic_load(&high_water);
    for (int i = 0; i < hw; ++i) {
        atomic_store(&slots[i].deadline_ns, 0);
        if (&slots[i] != my_slot) atomic_store(&slots[i].live, 0);
        else slots[i].thread = pthread_self();
    }
    if (atomic_load(&ql_timeout_ns)) ensure_watchdog();
}

static uint64_t env_timeout_ns(void) {
    const char *s = getenv("QUICKLAUNCH_CPU_TIMEOUT");
    if (!s || !*s) return 0;
    char *end;
    double v = strtod(s, &end);
    return *end == '\0' && v > 0 && v < 1e9 ? (uint64_t)(v * 1e9) : 0;
}

void ql_stop_install(void) {
    pthread_key_create(&slot_key, unregister);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ql_on_stop;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(QL_STOP_SIGNAL, &sa, 0);
    chain_sigint();
    pthread_atfork(NULL, NULL, after_fork_child);
    ensure_watchdog();
}

/* At load: the first launch must already be watched. */
__attribute__((constructor)) static void read_env_timeout(void) {
    uint64_t t = env_timeout_ns();
    if (t) {
        atomic_store(&ql_timeout_ns, t);
        atomic_fetch_or(&ql_async_pending, QL_WATCH_BIT);
    }
}

/* ------------------------------------------------------------ launches */
static const char *env_source = "QUICKLAUNCH_CPU_TIMEOUT";
static const char *set_source = "the CPU device's timeout, runtime.set_timeout";

/* The device-wide timeout in seconds (0: none); returns the one in force. */
QL_EXPORT double ql_cpu_set_timeout(double seconds) {
    if (!ql_thread_ready) ql_fault_setup_thread();
    if (seconds >= 0 && seconds < 1e9) {
        atomic_store(&ql_timeout_ns, (uint64_t)(seconds * 1e9));
        env_source = set_source;
        if (seconds > 0) atomic_fetch_or(&ql_async_pending, QL_WATCH_BIT);
        else atomic_fetch_and(&ql_async_pending, ~QL_WATCH_BIT);
    }
    return (double)atomic_load(&ql_timeout_ns) / 1e9;
}

const char *ql_timeout_now(uint64_t *timeout_ns) {
    const uint64_t own = ql_thread_timeout_ns;
    *timeout_ns = own ? own : atomic_load_explicit(&ql_timeout_ns, memory_order_relaxed);
    return own ? "the stream's timeout" : NULL;
}

void ql_watch_begin(ql_cpu_error *e, uint64_t timeout_ns, const char *source) {
    if (!ql_thread_ready) ql_fault_setup_thread();
    slot *me = my_slot;
    if (!me) return;
    if (!watchdog_running) ensure_watchdog();
    me->watch_timeout_ns = timeout_ns;
    me->watch_source = source ? source : env_source;
    atomic_store(&me->watch_error, e);
    atomic_fetch_add(&me->watch_seq, 1);
    const uint64_t deadline = now_ns() + timeout_ns;
    atomic_store(&me->deadline_ns, deadline);
    wake_watchdog_for(deadline);
}

void ql_watch_end(void) {
    slot *me = my_slot;
    if (!me || !atomic_load(&me->deadline_ns)) return;
    atomic_store(&me->deadline_ns, 0);
    atomic_fetch_add(&me->watch_seq, 1); /* a round still in flight no longer matches */
}

int ql_cpu_launch_watched(const ql_cpu_kernel *k, const unsigned dims[6], unsigned shared,
                          void **params, uint64_t timeout_ns, const char *source) {
    if (!ql_thread_ready) ql_fault_setup_thread();
    slot *me = my_slot;
    if (!me || !timeout_ns)
        return ql_cpu_launch_now(k, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                 shared, params);
    ql_cpu_error err;
    err.code = err.ready = 0;
    ql_cpu_dims d = {{dims[0], dims[1], dims[2]}, {dims[3], dims[4], dims[5]}, shared, 0, &err};
    uint64_t nblocks = (uint64_t)dims[0] * dims[1] * dims[2];
    uint64_t per_block = (uint64_t)dims[3] * dims[4] * dims[5], threads;
    if (__builtin_mul_overflow(nblocks, per_block, &threads)) threads = UINT64_MAX;
    ql_watch_begin(&err, timeout_ns, source);
    if (nblocks == 1 || threads <= ql_cpu_inline_threads) ql_run_guarded(k, params, &d, 0, nblocks);
    else ql_pool_run(k, params, &d, nblocks);
    ql_watch_end();
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

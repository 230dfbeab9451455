/* Timeouts of CPU launches and the watchdog thread that enforces them
 * (see interrupt.h): a watched launch publishes a deadline in its thread's
 * registry slot; the watchdog, asleep until the earliest deadline (or a
 * second), stops the launch's blocks when it passes, and puts the
 * runtime's SIGINT handler in front again if something replaced it. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interrupt.h"
#include "pool.h"
#include "streams.h"

_Atomic uint64_t ql_timeout_ns;
__thread uint64_t ql_thread_timeout_ns QL_TLS;

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
        uint64_t now = ql_now_ns(), next = now + 1000000000u;
        const int hw = atomic_load(&ql_slots_used);
        for (int i = 0; i < hw; ++i) {
            slot *s = &ql_slots[i];
            uint64_t d = atomic_load(&s->deadline_ns);
            if (!d || !atomic_load(&s->live)) continue;
            if (d > now) {
                if (d < next) next = d;
                continue;
            }
            uint64_t seq = atomic_load(&s->watch_seq);
            if (!atomic_compare_exchange_strong(&s->deadline_ns, &d, 0)) continue;
            if (!ql_start_round(QL_CPU_ERROR_LAUNCH_TIMEOUT, atomic_load(&s->watch_error), s, seq,
                             s->watch_timeout_ns, s->watch_source))
                atomic_store(&s->deadline_ns, now + 10000000u); /* busy: try again soon */
        }
        ql_chain_sigint();
        atomic_store(&planned_wake, next);
        uint64_t wait = next > now ? next - now : 1000000u;
        struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
        syscall(SYS_futex, (uint32_t *)&wake_word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
    return NULL;
}

void ql_ensure_watchdog(void) {
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

/* The child of fork() has no watchdog: the next watched launch starts one. */
static void after_fork_child(void) {
    pthread_mutex_init(&watchdog_lock, NULL);
    watchdog_running = 0;
    atomic_store(&planned_wake, 0);
}

static uint64_t env_timeout_ns(void) {
    const char *s = getenv("QUICKLAUNCH_CPU_TIMEOUT");
    if (!s || !*s) return 0;
    char *end;
    double v = strtod(s, &end);
    return *end == '\0' && v > 0 && v < 1e9 ? (uint64_t)(v * 1e9) : 0;
}

/* At load: the first launch must already be watched. */
__attribute__((constructor)) static void read_env_timeout(void) {
    pthread_atfork(NULL, NULL, after_fork_child);
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
    slot *me = ql_my_slot;
    if (!me) return;
    if (!watchdog_running) ql_ensure_watchdog();
    me->watch_timeout_ns = timeout_ns;
    me->watch_source = source ? source : env_source;
    atomic_store(&me->watch_error, e);
    atomic_fetch_add(&me->watch_seq, 1);
    const uint64_t deadline = ql_now_ns() + timeout_ns;
    atomic_store(&me->deadline_ns, deadline);
    wake_watchdog_for(deadline);
}

void ql_watch_end(void) {
    slot *me = ql_my_slot;
    if (!me || !atomic_load(&me->deadline_ns)) return;
    atomic_store(&me->deadline_ns, 0);
    atomic_fetch_add(&me->watch_seq, 1); /* a round still in flight no longer matches */
}

int ql_cpu_launch_watched(const ql_cpu_kernel *k, const unsigned dims[6], unsigned shared,
                          void **params, uint64_t timeout_ns, const char *source) {
    if (!ql_thread_ready) ql_fault_setup_thread();
    slot *me = ql_my_slot;
    if (!me || !timeout_ns)
        return ql_cpu_launch_now(k, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                 shared, params);
    ql_cpu_error err;
    err.code = err.ready = 0;
    ql_cpu_dims d = {{dims[0], dims[1], dims[2]}, {dims[3], dims[4], dims[5]}, shared, 0, &err};
    const uint64_t nblocks = (uint64_t)dims[0] * dims[1] * dims[2];
    ql_watch_begin(&err, timeout_ns, source);
    if (ql_runs_inline(nblocks, (uint64_t)dims[3] * dims[4] * dims[5])) ql_run_guarded(k, params, &d, 0, nblocks);
    else ql_pool_run(k, params, &d, nblocks);
    ql_watch_end();
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

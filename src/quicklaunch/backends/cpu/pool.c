/* The CPU device's worker pool, which runs the blocks of a launch (see
 * pool.h for where it sits in the runtime).
 *
 * Scheduling: a launch publishes one job (kernel, parameters, dims), wakes
 * the workers and takes part itself. Participant p owns the p-th contiguous
 * range of blocks and claims chunks of it with its own atomic counter, then
 * steals chunks from the others' ranges. Owning the same range on every
 * launch keeps a time-stepping loop's data in the same core's cache; the
 * stealing keeps uneven blocks balanced. A launch with few
 * threads runs entirely on the caller: it must not pay a thread hand-off.
 * Workers spin briefly after a job (back-to-back launches find them awake)
 * and then sleep on a futex. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interrupt.h"
#include "pool.h"

#define QL_MAX_THREADS 256

/* One participant's range of blocks, on a cache line of its own. */
typedef struct range {
    _Alignas(64) _Atomic uint64_t next;
    uint64_t end;
} range;

typedef struct job {
    const ql_cpu_kernel *kernel;
    void **params;
    ql_cpu_dims dims;
    uint64_t chunk;
    int nranges;
    range ranges[QL_MAX_THREADS];
} job;

static struct {
    pthread_mutex_t lock;        /* one pooled launch at a time */
    pthread_mutex_t start_lock;  /* guards starting the pool and its size */
    int requested;               /* size asked for by ql_cpu_set_threads, or 0 */
    int nthreads;                /* participants: workers + the launching thread */
    _Atomic int started;
    job current;
    _Atomic uint32_t generation; /* futex word: bumped to publish a job */
    _Atomic uint32_t pending;    /* workers not yet done with the current job */
    _Atomic uint32_t done;       /* futex word: the generation last completed */
    _Atomic uint32_t sleepers;   /* workers asleep on `generation` */
    _Atomic uint32_t waiter;     /* the launching thread asleep on `done` */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

QL_EXPORT uint64_t ql_cpu_inline_threads = 16384;

static void futex_wait(_Atomic uint32_t *word, uint32_t seen) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void run_range(job *j, range *r) {
    for (;;) {
        if (__atomic_load_n(&j->dims.error->code, __ATOMIC_RELAXED)) return; /* failed */
        uint64_t first = atomic_fetch_add_explicit(&r->next, j->chunk, memory_order_relaxed);
        if (first >= r->end) return;
        uint64_t last = first + j->chunk;
        if (last > r->end) last = r->end;
        ql_run_guarded(j->kernel, j->params, &j->dims, first, last);
    }
}

/* Participant `self` runs its own range, then helps with the others. */
static void run_chunks(job *j, int self) {
    run_range(j, &j->ranges[self]);
    for (int p = 1; p < j->nranges; ++p) run_range(j, &j->ranges[(self + p) % j->nranges]);
}

/* Spin this long (ns) waiting for the next job or for the workers to finish,
 * before sleeping on a futex. */
#define QL_SPIN_NS 50000

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until *word != seen: spins first, then sleeps, counting itself in
 * *sleepers so the other side only pays a futex wake when someone sleeps. */
static uint32_t wait_change(_Atomic uint32_t *word, uint32_t seen, _Atomic uint32_t *sleepers) {
    uint32_t now;
    uint64_t deadline = 0;
    unsigned spins = 0;
    while ((now = atomic_load_explicit(word, memory_order_acquire)) == seen) {
        if ((++spins & 63) != 0) { cpu_relax(); continue; }
        uint64_t t = now_ns();
        if (!deadline) { deadline = t + QL_SPIN_NS; continue; }
        if (t < deadline) continue;
        atomic_fetch_add(sleepers, 1);
        futex_wait(word, seen);
        atomic_fetch_sub(sleepers, 1);
    }
    return now;
}

static void wake_if_sleeping(_Atomic uint32_t *word, _Atomic uint32_t *sleepers) {
    if (atomic_load(sleepers)) futex_wake(word);
}

static void *worker_main(void *arg) {
    /* The generation when the pool was created (a worker that starts after
     * the first job was published must still run it) and this worker's
     * participant number, packed into the argument. */
    uint32_t seen = (uint32_t)((uintptr_t)arg >> 16);
    int self = (int)((uintptr_t)arg & 0xffff);
    ql_fault_setup_thread();
    for (;;) {
        seen = wait_change(&pool.generation, seen, &pool.sleepers);
        run_chunks(&pool.current, self);
        /* The last worker out marks this generation done; the launcher waits
         * for exactly that value, so a late store can never be mistaken for
         * the end of a later launch. */
        if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
            atomic_store(&pool.done, seen);
            wake_if_sleeping(&pool.done, &pool.waiter);
        }
    }
    return NULL;
}

static int env_threads(void) {
    const char *s = getenv("QUICKLAUNCH_CPU_THREADS");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 1) return v < QL_MAX_THREADS ? (int)v : QL_MAX_THREADS;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n < QL_MAX_THREADS ? (int)n : QL_MAX_THREADS;
}

/* fork() copies the pool's state but none of its threads: the child starts
 * from an empty pool (and a lock no launch holds). */
static void reset_after_fork(void) {
    pthread_mutex_init(&pool.lock, NULL);
    pthread_mutex_init(&pool.start_lock, NULL);
    pool.nthreads = 0;
    atomic_store(&pool.pending, 0);
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.waiter, 0);
    atomic_store(&pool.done, atomic_load(&pool.generation));
    atomic_store(&pool.started, 0);
}

static void start_pool(void) {
    static int atfork_registered;
    pthread_mutex_lock(&pool.start_lock);
    if (atomic_load(&pool.started)) {
        pthread_mutex_unlock(&pool.start_lock);
        return;
    }
    if (!atfork_registered) {
        pthread_atfork(NULL, NULL, reset_after_fork);
        atfork_registered = 1;
    }
    int want = pool.requested ? pool.requested : env_threads();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    int started = 1; /* the launching thread */
    uintptr_t generation = atomic_load(&pool.generation);
    for (int i = 1; i < want; ++i) {
        pthread_t t;
        void *arg = (void *)((generation << 16) | (uintptr_t)i);
        if (pthread_create(&t, &attr, worker_main, arg) != 0) break;
        pthread_detach(t);
        ++started;
    }
    pthread_attr_destroy(&attr);
    pool.nthreads = started;
    atomic_store_explicit(&pool.started, 1, memory_order_release);
    pthread_mutex_unlock(&pool.start_lock);
}

/* Number of threads that execute blocks (the launching thread included). */
QL_EXPORT int ql_cpu_threads(void) {
    pthread_mutex_lock(&pool.start_lock);
    int n = atomic_load(&pool.started) ? pool.nthreads
            : pool.requested            ? pool.requested
                                        : env_threads();
    pthread_mutex_unlock(&pool.start_lock);
    return n;
}

/* Sets the pool size before its first use; returns the size in force. */
QL_EXPORT int ql_cpu_set_threads(int n) {
    pthread_mutex_lock(&pool.start_lock);
    if (!atomic_load(&pool.started) && n >= 1)
        pool.requested = n < QL_MAX_THREADS ? n : QL_MAX_THREADS;
    pthread_mutex_unlock(&pool.start_lock);
    return ql_cpu_threads();
}

/* ----------------------------------------------------------- last error */
/* The message of this thread's last failed launch, allocated at the first
 * failure (thread-local storage here stays a few words: see fault.h). */
#define LAST_ERROR_BYTES sizeof(((ql_cpu_error *)0)->message)
static __thread char *last_error QL_TLS;

QL_EXPORT const char *ql_cpu_last_error(void) { return last_error ? last_error : ""; }

const char *ql_cpu_last_error_text(void) { return ql_cpu_last_error(); }

void ql_cpu_set_last_error(const char *message) {
    if (!last_error) last_error = malloc(LAST_ERROR_BYTES);
    if (!last_error) return;
    strncpy(last_error, message, LAST_ERROR_BYTES - 1);
    last_error[LAST_ERROR_BYTES - 1] = '\0';
}

int ql_cpu_failed_launch(const ql_cpu_error *e) {
    while (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE)) cpu_relax();
    if (!last_error) last_error = malloc(LAST_ERROR_BYTES);
    if (last_error) {
        memcpy(last_error, e->message, LAST_ERROR_BYTES);
        last_error[LAST_ERROR_BYTES - 1] = '\0';
    }
    return e->code;
}

/* ------------------------------------------------------------- launches */
/* A launch spread over the pool; out of line (in this file) so the
 * small-launch path of ql_cpu_launch stays a short function. */
int ql_pool_run(const ql_cpu_kernel *k, void **params, const ql_cpu_dims *d,
                uint64_t nblocks) {
    if (!atomic_load_explicit(&pool.started, memory_order_acquire)) start_pool();
    if (pool.nthreads <= 1 || pthread_mutex_trylock(&pool.lock) != 0) {
        /* A single thread, or another launch holds the pool: run here. */
        ql_run_guarded(k, params, d, 0, nblocks);
        return QL_CPU_SUCCESS;
    }
    job *j = &pool.current;
    const int n = pool.nthreads;
    j->kernel = k;
    j->params = params;
    j->dims = *d;
    j->nranges = n;
    /* Chunks small enough to balance uneven blocks, large enough that the
     * counters are not contended: about 8 per participant. */
    uint64_t chunk = nblocks / ((uint64_t)n * 8);
    j->chunk = chunk ? chunk : 1;
    const uint64_t base = nblocks / n, extra = nblocks % n; /* no overflow */
    for (int p = 0; p < n; ++p) {
        uint64_t start = base * p + ((uint64_t)p < extra ? (uint64_t)p : extra);
        atomic_store_explicit(&j->ranges[p].next, start, memory_order_relaxed);
        j->ranges[p].end = start + base + ((uint64_t)p < extra);
    }
    atomic_store_explicit(&pool.pending, (uint32_t)(n - 1), memory_order_relaxed);
    const uint32_t generation = atomic_fetch_add(&pool.generation, 1) + 1;
    wake_if_sleeping(&pool.generation, &pool.sleepers);

    run_chunks(j, 0);

    /* Always wait for this generation's own completion mark. */
    uint32_t done;
    while ((done = atomic_load_explicit(&pool.done, memory_order_acquire)) != generation)
        wait_change(&pool.done, done, &pool.waiter);
    pthread_mutex_unlock(&pool.lock);
    return QL_CPU_SUCCESS;
}

int ql_cpu_launch_sync(const ql_cpu_kernel *k, const unsigned dims[6], unsigned shared,
                       void **params) {
    /* A stream's own timeout, else the device's (interrupt.h). */
    uint64_t t;
    const char *source = ql_timeout_now(&t);
    if (t) return ql_cpu_launch_watched(k, dims, shared, params, t, source);
    return ql_cpu_launch_now(k, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], shared,
                             params);
}

/* Cooperative launches on the CPU device (cuLaunchCooperativeKernel's
 * counterpart): every block of the grid is resident at once, so grid.sync()
 * can wait for all of them.
 *
 * A block's __shared__ memory and blockIdx are per OS thread (thread-local
 * in the kernel module), so co-resident blocks need a thread each: the
 * launch starts one thread per block, which runs that block (its CUDA
 * threads as fibers, ql_fibers.h) and exits. grid.sync() is a barrier over
 * the blocks (ql_cpu_grid in ql_cpu_abi.h): a block whose live threads have
 * all reached it waits here for the others. A block that ends (or fails)
 * without reaching a grid.sync() the others wait at makes it a deadlock, and
 * the waiters fail the launch instead of hanging as a GPU would.
 *
 * Co-residency limit: every block's fibers exist at once, each with a stack
 * of QUICKLAUNCH_CPU_STACK bytes (64 KiB by default) plus a guard page. A
 * launch may reserve stacks for at most a quarter of the host's memory; the
 * stacks must fit in the memory mappings the process has left under
 * vm.max_map_count (a stack and its guard are two; a block's thread adds
 * its own stack, guard and signal stack); and it starts at most
 * QL_COOP_MAX_BLOCKS threads. ql_cpu_cooperative_limit gives the number of
 * blocks that allows, and larger grids are refused before anything runs
 * (720, CUDA's CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interrupt.h"
#include "pool.h"

#define QL_COOP_MAX_BLOCKS 1024u
#define QL_MAPS_MARGIN 2048u      /* mappings left for everything else */
#define QL_MAPS_PER_THREAD 4u     /* a block thread's stack, guard, signal stack, TLS */
#define QL_CPU_ERROR_COOPERATIVE_TOO_LARGE 720

typedef struct coop {
    pthread_mutex_t m;
    pthread_cond_t c;
    uint32_t expected, arrived, departed, dead_waiting;
    uint64_t generation;
    int dead;
    ql_cpu_grid grid;
    const ql_cpu_kernel *k;
    void **params;
    ql_cpu_dims dims;
} coop;

typedef struct member {
    coop *s;
    uint64_t block;
} member;

static int failed(const coop *s) {
    return __atomic_load_n(&s->dims.error->code, __ATOMIC_ACQUIRE) != 0;
}

static int grid_sync(const ql_cpu_grid *g, uint32_t *waiting, uint32_t *exited) {
    coop *s = (coop *)g->state;
    int r;
    /* Not stoppable in here (a stop signal must not jump out of a mutex or
     * a condition wait: interrupt.h); a stopped grid wakes it, failed. */
    ql_guard *const guard = ql_active_guard;
    ql_active_guard = 0;
    pthread_mutex_lock(&s->m);
    if (!s->dead) {
        const uint64_t gen = s->generation;
        ++s->arrived;
        if (!s->departed && s->arrived == s->expected) {
            s->arrived = 0;
            ++s->generation;
            pthread_cond_broadcast(&s->c);
        } else if (s->departed && s->arrived + s->departed == s->expected) {
            s->dead = 1;
            s->dead_waiting = s->arrived;
            pthread_cond_broadcast(&s->c);
        } else {
            while (gen == s->generation && !s->dead) pthread_cond_wait(&s->c, &s->m);
        }
        r = gen != s->generation ? QL_GRID_RELEASED : failed(s) ? QL_GRID_FAILED
                                                                : QL_GRID_DEADLOCK;
    } else {
        r = failed(s) ? QL_GRID_FAILED : QL_GRID_DEADLOCK;
    }
    *waiting = s->dead ? s->dead_waiting : s->arrived;
    *exited = s->departed;
    pthread_mutex_unlock(&s->m);
    ql_active_guard = guard;
    return r;
}

/* A block has ended (or never started): the grid barrier counts it out. */
static void depart(coop *s) {
    pthread_mutex_lock(&s->m);
    ++s->departed;
    if (!s->dead && s->arrived && s->arrived + s->departed == s->expected) {
        s->dead = 1;
        s->dead_waiting = s->arrived;
        pthread_cond_broadcast(&s->c);
    }
    pthread_mutex_unlock(&s->m);
}

static void *block_main(void *arg) {
    member *me = (member *)arg;
    coop *s = me->s;
    ql_fault_setup_thread();
    if (!failed(s)) ql_run_guarded(s->k, s->params, &s->dims, me->block, me->block + 1);
    depart(s);
    return NULL;
}

static size_t fiber_stack_bytes(void) {
    size_t want = 64 * 1024;
    const char *e = getenv("QUICKLAUNCH_CPU_STACK");
    if (e && *e) {   /* as ql_fibers.h's stack_bytes reads it */
        char *end;
        unsigned long long v = strtoull(e, &end, 10);
        if (*end == 'k' || *end == 'K') v <<= 10;
        if (*end == 'm' || *end == 'M') v <<= 20;
        if (v >= 16384) want = (size_t)v;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (want + page - 1) / page * page + page;
}

static uint64_t read_number(const char *path, uint64_t otherwise) {
    FILE *f = fopen(path, "r");
    unsigned long long v;
    if (!f) return otherwise;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok ? (uint64_t)v : otherwise;
}

static uint64_t maps_in_use(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    uint64_t lines = 0;
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < got; ++i) lines += buf[i] == '\n';
    fclose(f);
    return lines;
}

/* The most blocks of `threads` CUDA threads a cooperative launch may have
 * now, and (each out pointer may be NULL) the numbers behind it: out[0] the
 * bytes of one fiber stack, out[1] the memory budget for all stacks, out[2]
 * the blocks that budget allows, out[3] vm.max_map_count, out[4] the
 * mappings in use, out[5] the blocks the mappings left allow, out[6] the
 * cap on blocks (threads). */
QL_EXPORT uint64_t ql_cpu_cooperative_limit(uint64_t threads, uint64_t out[7]) {
    const uint64_t stack = fiber_stack_bytes();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const uint64_t budget = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4
                                                  : (uint64_t)1 << 32;
    const uint64_t max_maps = read_number("/proc/sys/vm/max_map_count", 65530);
    const uint64_t used = maps_in_use();
    const uint64_t left = max_maps > used + QL_MAPS_MARGIN ? max_maps - used - QL_MAPS_MARGIN : 0;
    const uint64_t by_memory = threads ? budget / (threads * stack) : 0;
    const uint64_t by_maps = threads ? left / (2 * threads + QL_MAPS_PER_THREAD) : 0;
    uint64_t n = by_memory < by_maps ? by_memory : by_maps;
    if (n > QL_COOP_MAX_BLOCKS) n = QL_COOP_MAX_BLOCKS;
    if (out) {
        const uint64_t v[7] = {stack, budget, by_memory, max_maps, used, by_maps,
                               QL_COOP_MAX_BLOCKS};
        memcpy(out, v, sizeof v);
    }
    return n;
}

/* A cooperative launch, run now: cuLaunchCooperativeKernel's shape, less
 * the stream (the caller has synchronised it). */
QL_EXPORT int ql_cpu_launch_cooperative(void *f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz,
                                        unsigned shared_bytes, void **params) {
    const ql_cpu_kernel *k = (const ql_cpu_kernel *)f;
    if (!k || !k->run) return QL_CPU_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz) return QL_CPU_ERROR_INVALID_VALUE;
    const uint64_t nblocks = (uint64_t)gx * gy * gz;
    if (nblocks > ql_cpu_cooperative_limit((uint64_t)bx * by * bz, NULL))
        return QL_CPU_ERROR_COOPERATIVE_TOO_LARGE;
    if (k->tier != 2)   /* no grid.sync() (no fibers): any schedule is a valid one */
        return ql_cpu_launch_now(k, gx, gy, gz, bx, by, bz, shared_bytes, params);
    if (!ql_thread_ready) ql_fault_setup_thread();

    ql_cpu_error err;
    err.code = err.ready = 0;
    coop s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.m, NULL);
    pthread_cond_init(&s.c, NULL);
    s.expected = (uint32_t)nblocks;
    s.grid.state = &s;
    s.grid.sync = grid_sync;
    s.k = k;
    s.params = params;
    s.dims = (ql_cpu_dims){{gx, gy, gz}, {bx, by, bz}, shared_bytes, 0, &err, &s.grid};

    pthread_t *threads = malloc(sizeof(pthread_t) * nblocks);
    member *members = malloc(sizeof(member) * nblocks);
    unsigned char *started = calloc(nblocks, 1);
    if (!threads || !members || !started) {
        free(threads), free(members), free(started);
        ql_cpu_set_last_error("no memory to start a cooperative launch");
        return QL_CPU_ERROR_OUT_OF_MEMORY;
    }
    uint64_t timeout_ns;
    const char *source = ql_timeout_now(&timeout_ns);
    if (timeout_ns) ql_watch_begin(&err, timeout_ns, source); /* stops the block threads */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);  /* the scheduler's; fibers have their own */
    for (uint64_t b = 0; b < nblocks; ++b) {
        members[b].s = &s;
        members[b].block = b;
        if (pthread_create(&threads[b], &attr, block_main, &members[b]) == 0) {
            started[b] = 1;
            continue;
        }
        /* No thread for this block: fail the launch; the blocks that run
         * see it (or a grid barrier that cannot complete) and stop. */
        int expected = 0;
        if (__atomic_compare_exchange_n(&err.code, &expected, QL_CPU_ERROR_OUT_OF_MEMORY, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            snprintf(err.message, sizeof err.message,
                     "a cooperative launch of %llu blocks could start only %llu threads (one "
                     "per block): the system refused more", (unsigned long long)nblocks,
                     (unsigned long long)b);
            __atomic_store_n(&err.ready, 1, __ATOMIC_RELEASE);
        }
        for (uint64_t rest = b; rest < nblocks; ++rest) depart(&s);
        break;
    }
    pthread_attr_destroy(&attr);
    for (uint64_t b = 0; b < nblocks; ++b)
        if (started[b]) pthread_join(threads[b], NULL);
    if (timeout_ns) ql_watch_end();
    free(threads), free(members), free(started);
    pthread_cond_destroy(&s.c);
    pthread_mutex_destroy(&s.m);
    return err.code ? ql_cpu_failed_launch(&err) : QL_CPU_SUCCESS;
}

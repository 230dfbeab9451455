/* ql_memcheck.h: the memory checker of CPU kernel modules (memcheck builds).
 *
 * A memcheck build (ql.compile(..., memcheck=True), QUICKLAUNCH_MEMCHECK=1;
 * see backends/cpu/memcheck.py) is a debug build (-O0 -g) compiled with
 * GCC's outline address-sanitizer instrumentation and no ASan runtime:
 *     -fsanitize=kernel-address --param asan-instrumentation-with-call-threshold=0
 *     --param asan-stack=0 --param asan-globals=1 -include ql_memcheck.h
 *     -DQL_MEMCHECK=1 -DQL_ABORTS=1     (toolchain.MEMCHECK_FLAGS)
 * so every load and store through a pointer in the module's code calls
 * __asan_{load,store}{1,2,4,8,16,N}_noabort(address[, size]) *before* the
 * access. This header defines those functions (uninstrumented), so the
 * checker is part of the module itself. An access is allowed when it lies
 * wholly inside
 *   - one of the launch's argument buffers (the table the debug stub sets
 *     with ql_memcheck_set before each launch: each pointer argument's
 *     [address, address + nbytes) as the array it was given),
 *   - the launch's dynamic shared memory [__ql_dyn_shared, + shared_bytes),
 *   - one thread-local object of this module (the static __shared__
 *     variables and the shim's own: ql_memcheck_tls gives their offsets and
 *     sizes from the module's symbol table),
 *   - the CPU thread's stack or this worker's fiber stacks (locals),
 *   - a block from malloc/calloc/realloc in this module's code (their hidden
 *     definitions below record the live blocks),
 *   - one of the module's globals (__device__, __constant__: GCC registers
 *     them, with redzones between them, through __asan_register_globals),
 *     or the module's other mapped data (string literals),
 *   - the launch's own records (ql_cpu_dims, its error record).
 * The first other access is reported with ql_report (kernel-independent
 * text plus a machine-readable tail that the stub turns into names and the
 * source line) and the CUDA thread stops (ql_abort_thread): the access never
 * happens. The shim's helpers (QL_FN) are not instrumented in these builds,
 * except the atomics, which touch the user's memory; memcpy, memmove and
 * memset calls are checked by hidden definitions here. The checker itself is
 * compiled -O2 (by attribute) inside the -O0 build.
 *
 * Included first (by -include), before the translation unit's own
 * #include "cuda_shim.h". */
#ifndef QL_MEMCHECK_H
#define QL_MEMCHECK_H

#include "cuda_shim.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

/* Every static __shared__ variable gets a 64-byte thread-local redzone
 * declared just before it (they are laid out in order), so an overflow of
 * one lands in a redzone, not in the next variable: the redzones are left out
 * of the objects memcheck.py gives the checker. */
#undef __shared__
#define QL_MC_CAT2(a, b) a##b
#define QL_MC_CAT(a, b) QL_MC_CAT2(a, b)
#define __shared__                                                                    \
    thread_local char QL_MC_CAT(__ql_mc_redzone_, __COUNTER__)[64]                    \
        __attribute__((unused, used));                                                \
    thread_local __attribute__((unused))

/* The checker is optimised even in this -O0 build: it runs for every access. */
#define QL_MC_FN static __attribute__((no_sanitize_address, noinline, optimize("O2")))
#define QL_MC_INLINE static inline __attribute__((no_sanitize_address, always_inline, \
                                                  optimize("O2")))

namespace ql_memcheck {

enum { MAX_ARGS = 256, MAX_GLOBALS = 4096 };
struct arg_range { uint64_t lo, size, param; };
struct object { uint64_t lo, size; };
struct global_range { uint64_t lo, size, size_with_redzone; const char *name; };

static arg_range args[MAX_ARGS];
static uint32_t nargs;
static object *tls_objects;      /* offsets in the module's TLS block, sorted */
static uint32_t ntls;
static global_range globals[MAX_GLOBALS];
static uint32_t nglobals;
static uintptr_t image_lo, image_hi, image_base;   /* the module's mapped segments */
/* Device-side malloc: the live allocations of this module's code. */
enum { MAX_HEAP = 16384 };
static object heap[MAX_HEAP];
static uint32_t nheap;
static int heap_lock;
QL_MC_INLINE void lock_heap(void) {
    while (__atomic_exchange_n(&heap_lock, 1, __ATOMIC_ACQUIRE)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}
QL_MC_INLINE void unlock_heap(void) { __atomic_store_n(&heap_lock, 0, __ATOMIC_RELEASE); }
static uint64_t tls_size;

struct thread_view {
    int ready;
    uintptr_t tls_lo;            /* this thread's instance of the module's TLS block */
    uintptr_t stack_lo, stack_hi;
};
static thread_local thread_view me;

struct phdr_search { uintptr_t base; uintptr_t tls; int found; };

QL_MC_FN int find_module(struct dl_phdr_info *info, size_t, void *data) {
    phdr_search *s = (phdr_search *)data;
    if (info->dlpi_addr != s->base) return 0;
    s->found = 1;
    s->tls = (uintptr_t)info->dlpi_tls_data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + p->p_vaddr;
            if (a < lo) lo = a;
            if (a + p->p_memsz > hi) hi = a + p->p_memsz;
        } else if (p->p_type == PT_TLS) {
            tls_size = p->p_memsz;
        }
    }
    image_lo = lo, image_hi = hi;
    return 1;
}

QL_MC_FN void init_thread(void) {
    if (!image_base) {
        Dl_info info;
        if (dladdr((void *)&find_module, &info)) image_base = (uintptr_t)info.dli_fbase;
    }
    phdr_search s = {image_base, 0, 0};
    dl_iterate_phdr(find_module, &s);
    me.tls_lo = s.tls;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            me.stack_lo = (uintptr_t)addr;
            me.stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    me.ready = 1;
}

QL_MC_INLINE bool inside(uintptr_t a, size_t n, uintptr_t lo, uint64_t size) {
    return a >= lo && a - lo <= size && n <= size - (a - lo);
}

/* What the access hit, for the report. */
enum { WHERE_ARG = 1, WHERE_DYN_SHARED, WHERE_TLS, WHERE_GLOBAL, WHERE_NONE, WHERE_HEAP };

/* Distance of [a, a+n) outside [lo, lo+size): > 0 past the end (bytes from
 * the end to the access's first byte past it), < 0 before the start. */
QL_MC_INLINE int64_t outside(uintptr_t a, size_t n, uintptr_t lo, uint64_t size) {
    if (a < lo) return -(int64_t)(lo - a);
    uintptr_t end = lo + size, last = a + n;
    return (int64_t)(last > end ? (a >= end ? a - end : 0) : 0);
}

__attribute__((noreturn)) QL_MC_FN void report(uintptr_t a, size_t n, int write, void *pc,
                                              void *caller, int where, uint64_t index,
                                              uintptr_t lo, uint64_t size) {
    const uintptr_t off = (uintptr_t)pc - image_base;
    /* the caller of the function that made the access (an atomicAdd's) */
    const uintptr_t up = (uintptr_t)caller - image_base;
    const char *what = where == WHERE_DYN_SHARED ? "dynamic shared memory"
                       : where == WHERE_TLS      ? "static shared memory"
                       : where == WHERE_GLOBAL   ? "a __device__/__constant__ variable"
                       : where == WHERE_HEAP     ? "a block of device-side malloc"
                                                 : "argument buffer";
    char near[160];
    if (where == WHERE_NONE) {
        snprintf(near, sizeof near, "no buffer of the launch");
    } else {
        int64_t d = outside(a, n, lo, size);
        if (d < 0)
            snprintf(near, sizeof near, "%lld bytes before the start of %s %llu",
                     (long long)-d, what, (unsigned long long)index);
        else
            snprintf(near, sizeof near, "%lld bytes past the end of %s %llu",
                     (long long)d, what, (unsigned long long)index);
    }
    ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
              "memcheck: invalid %s of %zu bytes at address %#lx in block (%u, %u, %u), "
              "thread (%u, %u, %u): %s ([%#lx, +%llu bytes)); the access was not made "
              "[ql-memcheck pc=%#lx up=%#lx where=%d index=%llu lo=%#lx size=%llu addr=%#lx n=%zu "
              "write=%d]",
              write ? "write" : "read", n, (unsigned long)a, blockIdx.x, blockIdx.y, blockIdx.z,
              threadIdx.x, threadIdx.y, threadIdx.z, near, (unsigned long)lo,
              (unsigned long long)size, (unsigned long)off, (unsigned long)up, where, (unsigned long long)index,
              (unsigned long)lo, (unsigned long long)size, (unsigned long)a, n, write);
    ql_abort_thread();
}

/* The argument buffer nearest to [a, a+n) (UINT32_MAX: none), and its
 * distance. */
QL_MC_INLINE uint32_t nearest_arg(uintptr_t a, size_t n, uint64_t *dist_out) {
    uint32_t best = UINT32_MAX;
    uint64_t best_d = UINT64_MAX;
    for (uint32_t i = 0; i < nargs; ++i) {
        int64_t s = outside(a, n, args[i].lo, args[i].size);
        uint64_t dist = s < 0 ? (uint64_t)-s : (uint64_t)s;
        if (dist < best_d) best_d = dist, best = i;
    }
    *dist_out = best_d;
    return best;
}

QL_MC_FN void check(const void *p, size_t n, int write, void *pc, void *caller) {
    const uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < nargs; ++i)
        if (inside(a, n, args[i].lo, args[i].size)) return;
    if (__atomic_load_n(&nheap, __ATOMIC_RELAXED)) {
        lock_heap();
        for (uint32_t i = 0; i < nheap; ++i)
            if (inside(a, n, heap[i].lo, heap[i].size)) {
                unlock_heap();
                return;
            }
        unlock_heap();
    }
    if (!me.ready) init_thread();
    /* the launch's records, read by the block loop */
    const ql_cpu_dims *d = ql_launch_dims;
    if (!d) return;   /* not in a launch (the module's static initialisers) */
    {
        if (inside(a, n, (uintptr_t)d, sizeof *d)) return;
        if (d->error && inside(a, n, (uintptr_t)d->error, sizeof *d->error)) return;
        if (d->shared_bytes && __ql_dyn_shared) {
            const uintptr_t lo = (uintptr_t)__ql_dyn_shared;
            if (inside(a, n, lo, d->shared_bytes)) return;
            /* the arena holds at least 4 KiB: anything near it is an overflow */
            const uint64_t span = d->shared_bytes < 4096 ? 4096 : d->shared_bytes;
            if (a + n > lo - 4096 && a < lo + span + 4096)
                report(a, n, write, pc, caller, WHERE_DYN_SHARED, 0, lo, d->shared_bytes);
        }
    }
    if (me.stack_lo <= a && a < me.stack_hi) return;
#ifdef QL_TIER2
    {
        const uintptr_t base = (uintptr_t)ql_fiber::stacks_base;
        if (base && a >= base && a - base < ql_fiber::stack_bytes() * ql_fiber::stacks_count)
            return;
    }
#endif
    if (me.tls_lo && a + n > me.tls_lo - 64 && a < me.tls_lo + tls_size + 64) {
        const uintptr_t t = me.tls_lo;
        uint32_t best = UINT32_MAX;
        uint64_t best_d = UINT64_MAX;
        for (uint32_t i = 0; i < ntls; ++i) {
            if (inside(a, n, t + tls_objects[i].lo, tls_objects[i].size)) return;
            int64_t s = outside(a, n, t + tls_objects[i].lo, tls_objects[i].size);
            uint64_t dist = s < 0 ? (uint64_t)-s : (uint64_t)s;
            if (dist < best_d) best_d = dist, best = i;
        }
        /* A dlopen'ed module's thread-locals are a malloc'ed block on the
         * heap, so an argument buffer can lie right beside them: the nearer
         * of the two is the one the access overran. */
        if (!ntls) return;   /* no table: the stub did not give one */
        uint64_t arg_d;
        const uint32_t arg = nearest_arg(a, n, &arg_d);
        if (arg != UINT32_MAX && arg_d < best_d)
            report(a, n, write, pc, caller, WHERE_ARG, args[arg].param, args[arg].lo,
                   args[arg].size);
        report(a, n, write, pc, caller, WHERE_TLS, best, t + tls_objects[best].lo,
               tls_objects[best].size);
    }
    if (a >= image_lo && a < image_hi) {
        for (uint32_t i = 0; i < nglobals; ++i) {
            const global_range &g = globals[i];
            if (inside(a, n, g.lo, g.size)) return;
            if (a + n > g.lo && a < g.lo + g.size_with_redzone)
                report(a, n, write, pc, caller, WHERE_GLOBAL, i, g.lo, g.size);
        }
        return;   /* the module's other data: string literals, tables */
    }
    /* Not memory of the launch: name the nearest argument buffer. */
    uint64_t best_d;
    const uint32_t best = nearest_arg(a, n, &best_d);
    /* or the nearest block of device-side malloc, when that is nearer */
    uint64_t hlo = 0, hsize = 0;
    bool in_heap = false;
    if (__atomic_load_n(&nheap, __ATOMIC_RELAXED)) {
        lock_heap();
        for (uint32_t i = 0; i < nheap; ++i) {
            int64_t s = outside(a, n, heap[i].lo, heap[i].size);
            uint64_t dist = s < 0 ? (uint64_t)-s : (uint64_t)s;
            if (dist < best_d) best_d = dist, in_heap = true, hlo = heap[i].lo, hsize = heap[i].size;
        }
        unlock_heap();
    }
    if (in_heap) report(a, n, write, pc, caller, WHERE_HEAP, 0, hlo, hsize);
    if (best == UINT32_MAX) report(a, n, write, pc, caller, WHERE_NONE, 0, 0, 0);
    report(a, n, write, pc, caller, WHERE_ARG, args[best].param, args[best].lo, args[best].size);
}

}  // namespace ql_memcheck

/* GCC's outline instrumentation calls these before each access. They are
 * hidden (each module checks with its own tables) and not instrumented. */
#define QL_MC_SIZED(n)                                                                \
    extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void                        \
    __asan_load##n##_noabort(void *p) {                                               \
        ql_memcheck::check(p, n, 0, __builtin_return_address(0),                     \
                           __builtin_return_address(1));                             \
    }                                                                                 \
    extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void                        \
    __asan_store##n##_noabort(void *p) {                                              \
        ql_memcheck::check(p, n, 1, __builtin_return_address(0),                     \
                           __builtin_return_address(1));                             \
    }                                                                                 \
    __asm__(".hidden __asan_load" #n "_noabort\n.hidden __asan_store" #n "_noabort");
QL_MC_SIZED(1)
QL_MC_SIZED(2)
QL_MC_SIZED(4)
QL_MC_SIZED(8)
QL_MC_SIZED(16)
#undef QL_MC_SIZED

extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_loadN_noabort(void *p,
                                                                                long n) {
    if (n > 0) ql_memcheck::check(p, (size_t)n, 0, __builtin_return_address(0), __builtin_return_address(1));
}
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_storeN_noabort(void *p,
                                                                                 long n) {
    if (n > 0) ql_memcheck::check(p, (size_t)n, 1, __builtin_return_address(0), __builtin_return_address(1));
}
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_handle_no_return(void) {}

/* malloc() in device code (CUDA's device heap): this module's calls get
 * these hidden definitions, which record each live block for the checker
 * (beyond MAX_HEAP live blocks, further ones are not known to it). */
extern "C" void *__libc_malloc(size_t);
extern "C" void *__libc_calloc(size_t, size_t);
extern "C" void *__libc_realloc(void *, size_t);
extern "C" void __libc_free(void *);
namespace ql_memcheck {
QL_MC_FN void heap_add(void *p, size_t n) {
    if (!p) return;
    lock_heap();
    if (nheap < MAX_HEAP) heap[nheap++] = {(uint64_t)p, n};
    unlock_heap();
}
QL_MC_FN void heap_remove(void *p) {
    if (!p) return;
    lock_heap();
    for (uint32_t i = 0; i < nheap; ++i)
        if (heap[i].lo == (uint64_t)p) {
            heap[i] = heap[--nheap];
            break;
        }
    unlock_heap();
}
}  // namespace ql_memcheck
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *malloc(
    size_t n) noexcept {
    void *p = __libc_malloc(n);
    ql_memcheck::heap_add(p, n);
    return p;
}
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *calloc(
    size_t k, size_t n) noexcept {
    void *p = __libc_calloc(k, n);
    ql_memcheck::heap_add(p, k * n);
    return p;
}
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void free(
    void *p) noexcept {
    ql_memcheck::heap_remove(p);
    __libc_free(p);
}
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *realloc(
    void *p, size_t n) noexcept {
    void *q = __libc_realloc(p, n);
    if (q || !n) ql_memcheck::heap_remove(p);   /* a failed realloc leaves p as it was */
    ql_memcheck::heap_add(q, n);
    return q;
}
__asm__(".hidden malloc\n.hidden calloc\n.hidden free\n.hidden realloc");

/* memcpy, memmove and memset with a size g++ does not know are library
 * calls, which the instrumentation does not check: this module's calls get
 * these hidden definitions, which check both ranges first. */
extern "C" void *__memcpy_chk(void *, const void *, size_t, size_t);
extern "C" void *__memmove_chk(void *, const void *, size_t, size_t);
extern "C" void *__memset_chk(void *, int, size_t, size_t);
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *memcpy(
    void *d, const void *s, size_t n) noexcept {
    if (n) {
        ql_memcheck::check(s, n, 0, __builtin_return_address(0), __builtin_return_address(1));
        ql_memcheck::check(d, n, 1, __builtin_return_address(0), __builtin_return_address(1));
    }
    return __memcpy_chk(d, s, n, (size_t)-1);
}
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *memmove(
    void *d, const void *s, size_t n) noexcept {
    if (n) {
        ql_memcheck::check(s, n, 0, __builtin_return_address(0), __builtin_return_address(1));
        ql_memcheck::check(d, n, 1, __builtin_return_address(0), __builtin_return_address(1));
    }
    return __memmove_chk(d, s, n, (size_t)-1);
}
extern "C" __attribute__((visibility("hidden"), no_sanitize_address, used)) inline void *memset(
    void *d, int c, size_t n) noexcept {
    if (n) ql_memcheck::check(d, n, 1, __builtin_return_address(0), __builtin_return_address(1));
    return __memset_chk(d, c, n, (size_t)-1);
}
__asm__(".hidden memcpy\n.hidden memmove\n.hidden memset");

/* GCC's registration of the module's globals (redzones after each). */
struct ql_asan_global {
    const void *beg;
    size_t size, size_with_redzone;
    const char *name, *module_name;
    size_t has_dynamic_init;
    void *location;
    uintptr_t odr_indicator;
};
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_register_globals(
    ql_asan_global *g, size_t n) {
    for (size_t i = 0; i < n && ql_memcheck::nglobals < ql_memcheck::MAX_GLOBALS; ++i)
        ql_memcheck::globals[ql_memcheck::nglobals++] = {(uint64_t)g[i].beg, g[i].size,
                                                         g[i].size_with_redzone, g[i].name};
}
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_unregister_globals(
    ql_asan_global *, size_t) {}
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_before_dynamic_init(
    const char *) {}
extern "C" __attribute__((no_sanitize_address, used, optimize("O2"))) void __asan_after_dynamic_init(void) {}
__asm__(".hidden __asan_loadN_noabort\n.hidden __asan_storeN_noabort\n"
        ".hidden __asan_handle_no_return\n.hidden __asan_register_globals\n"
        ".hidden __asan_unregister_globals\n.hidden __asan_before_dynamic_init\n"
        ".hidden __asan_after_dynamic_init");

/* The debug stub's entry points (backends/cpu/memcheck.py). */
extern "C" __attribute__((visibility("default"), no_sanitize_address, used)) void
ql_memcheck_set(const uint64_t *triples, uint32_t n) {
    if (n > ql_memcheck::MAX_ARGS) n = ql_memcheck::MAX_ARGS;
    for (uint32_t i = 0; i < n; ++i)
        ql_memcheck::args[i] = {triples[3 * i], triples[3 * i + 1], triples[3 * i + 2]};
    ql_memcheck::nargs = n;
}
/* (offset, size) of each thread-local object; the memory stays the caller's. */
extern "C" __attribute__((visibility("default"), no_sanitize_address, used)) void
ql_memcheck_tls(const uint64_t *pairs, uint32_t n) {
    ql_memcheck::tls_objects = (ql_memcheck::object *)pairs;
    ql_memcheck::ntls = n;
}
/* The name GCC registered for global i (for the report). */
extern "C" __attribute__((visibility("default"), no_sanitize_address, used)) const char *
ql_memcheck_global_name(uint32_t i) {
    return i < ql_memcheck::nglobals ? ql_memcheck::globals[i].name : 0;
}

#endif /* QL_MEMCHECK_H */

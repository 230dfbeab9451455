/* Tier 2 of the CPU device: every CUDA thread of a block is a fiber on the
 * worker that owns the block. Part of cuda_shim.h, for modules that use
 * barriers, warp functions or cooperative groups; CUDA's functions over this
 * scheduler (__syncthreads, __shfl_*_sync, ...) are in ql_warp.h.
 *
 * A block runs in passes: fiber 0 runs until it blocks (a barrier, a warp
 * function) or exits, then switches straight to the next runnable fiber, and
 * so on; the last one switches back to the block's scheduler, which resolves
 * what can be resolved (a warp rendezvous whose named lanes are all there, a
 * barrier every live thread has reached; exited threads release barriers)
 * and starts the next pass. If nothing can be resolved, the block is
 * deadlocked: a LaunchError names the block and what each thread waits for.
 *
 * Switching saves the callee-saved registers and swaps stacks, with no
 * system call (x86-64 and aarch64 assembly below; elsewhere a ucontext
 * fallback, whose swapcontext makes one and which uses only the top 16 KiB
 * of each stack). Stacks are
 * mmap'd once per worker, QUICKLAUNCH_CPU_STACK bytes each (default 64 KiB),
 * with a PROT_NONE guard page below each. */
#ifndef QL_FIBERS_H
#define QL_FIBERS_H

#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__) && !defined(__aarch64__)
#include <ucontext.h>
#endif

namespace ql_fiber {

/* ------------------------------------------------------- context switch */
#if defined(__x86_64__)
extern "C" void ql_fiber_switch(void **save_sp, void *to_sp)
    __attribute__((visibility("hidden")));
extern "C" void ql_fiber_trampoline(void) __attribute__((visibility("hidden")));
__asm__(
    ".text\n.p2align 4\n"
    ".globl ql_fiber_switch\n.hidden ql_fiber_switch\n.type ql_fiber_switch,@function\n"
    "ql_fiber_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n.size ql_fiber_switch, .-ql_fiber_switch\n"
    ".globl ql_fiber_trampoline\n.hidden ql_fiber_trampoline\n"
    ".type ql_fiber_trampoline,@function\n"
    "ql_fiber_trampoline:\n  movq %r12, %rdi\n  callq *%r13\n  ud2\n"
    ".size ql_fiber_trampoline, .-ql_fiber_trampoline\n");

struct context { void *sp; };

/* A fresh stack whose first switch-in calls entry(arg). */
QL_FN void prepare(context *c, char *top, void (*entry)(void *), void *arg) {
    void **sp = (void **)((uintptr_t)top & ~(uintptr_t)15);
    *--sp = (void *)ql_fiber_trampoline;   /* popped by ret */
    *--sp = 0;                             /* rbp */
    *--sp = 0;                             /* rbx */
    *--sp = arg;                           /* r12 -> rdi */
    *--sp = (void *)entry;                 /* r13 */
    *--sp = 0;                             /* r14 */
    *--sp = 0;                             /* r15 */
    c->sp = sp;
}
QL_FN void jump(context *from, context *to) { ql_fiber_switch(&from->sp, to->sp); }
#elif defined(__aarch64__)
/* AAPCS64's callee-saved state: x19-x28, the frame pointer x29, the link
 * register x30 (where ret goes) and d8-d15, 160 bytes on the stack being
 * left; sp itself in *save_sp. No system call (swapcontext makes one per
 * switch, rt_sigprocmask). */
extern "C" void ql_fiber_switch(void **save_sp, void *to_sp)
    __attribute__((visibility("hidden")));
extern "C" void ql_fiber_trampoline(void) __attribute__((visibility("hidden")));
__asm__(
    ".text\n.p2align 4\n"
    ".globl ql_fiber_switch\n.hidden ql_fiber_switch\n.type ql_fiber_switch,%function\n"
    "ql_fiber_switch:\n"
    "  sub sp, sp, #160\n"
    "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
    "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
    "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n  stp d12, d13, [sp, #128]\n"
    "  stp d14, d15, [sp, #144]\n"
    "  mov x2, sp\n  str x2, [x0]\n  mov sp, x1\n"
    "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
    "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
    "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n  ldp d12, d13, [sp, #128]\n"
    "  ldp d14, d15, [sp, #144]\n"
    "  add sp, sp, #160\n  ret\n.size ql_fiber_switch, .-ql_fiber_switch\n"
    ".globl ql_fiber_trampoline\n.hidden ql_fiber_trampoline\n"
    ".type ql_fiber_trampoline,%function\n"
    "ql_fiber_trampoline:\n  mov x0, x19\n  blr x20\n  brk #0\n"
    ".size ql_fiber_trampoline, .-ql_fiber_trampoline\n");

struct context { void *sp; };

/* A fresh stack whose first switch-in "returns" (x30) to the trampoline,
 * which calls entry (x20) with arg (x19); the frame chain ends (x29 = 0). */
QL_FN void prepare(context *c, char *top, void (*entry)(void *), void *arg) {
    void **sp = (void **)((uintptr_t)top & ~(uintptr_t)15) - 20;
    for (int i = 0; i < 20; ++i) sp[i] = 0;
    sp[0] = arg;                           /* x19 -> x0 */
    sp[1] = (void *)entry;                 /* x20 */
    sp[11] = (void *)ql_fiber_trampoline;  /* x30: where ret goes */
    c->sp = sp;
}
QL_FN void jump(context *from, context *to) { ql_fiber_switch(&from->sp, to->sp); }
#else
struct context { ucontext_t uc; };
QL_FN void prepare(context *c, char *top, void (*entry)(void *), void *arg) {
    getcontext(&c->uc);
    size_t size = 16384;
    c->uc.uc_stack.ss_sp = top - size;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = 0;
    makecontext(&c->uc, (void (*)(void))entry, 1, arg);
}
QL_FN void jump(context *from, context *to) { swapcontext(&from->uc, &to->uc); }
#endif

/* --------------------------------------------------------------- stacks */
QL_FN size_t stack_bytes(void) {
    static size_t bytes;
    if (!bytes) {
        size_t want = 64 * 1024;
        const char *s = getenv("QUICKLAUNCH_CPU_STACK");
        if (s && *s) {
            char *end;
            unsigned long long v = strtoull(s, &end, 10);
            if (*end == 'k' || *end == 'K') v <<= 10;
            if (*end == 'm' || *end == 'M') v <<= 20;
            if (v >= 16384) want = (size_t)v;
        }
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        bytes = (want + page - 1) / page * page + page; /* + the guard page */
    }
    return bytes;
}

/* This worker's stacks: one per CUDA thread of the largest block seen. */
static thread_local char *stacks_base __attribute__((unused));
static thread_local unsigned stacks_count __attribute__((unused));
/* This worker's lanes and multi-warp tile slots (run_block). */
struct lane;
static thread_local lane *worker_lanes __attribute__((unused));
static thread_local uint64_t *worker_slots __attribute__((unused));
static thread_local unsigned worker_nlanes __attribute__((unused));

/* Frees a worker's stacks, lanes and slots when its thread exits: the pool's
 * workers live as long as the process, but a cooperative launch runs each
 * block on a thread of its own, which exits at the end of the launch. */
struct worker_memory {
    bool armed = false;
    ~worker_memory();
};

QL_FN char *stack_top(unsigned i, unsigned need) {
    char *&base = stacks_base;
    unsigned &count = stacks_count;
    const size_t each = stack_bytes();
    if (need > count) {
        static thread_local worker_memory keeper;
        keeper.armed = true;
        if (base) munmap(base, each * count);
        base = (char *)mmap(0, each * need, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == (char *)MAP_FAILED) {
            base = 0;
            count = 0;
            return 0;
        }
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        for (unsigned j = 0; j < need; ++j) {
            /* Each guard splits the mapping: two mappings a stack, which
             * vm.max_map_count bounds. Without its guard a stack's overflow
             * would go unseen: fail instead. */
            if (mprotect(base + j * each, page, PROT_NONE) != 0) {
                munmap(base, each * need);
                base = 0;
                count = 0;
                return 0;
            }
        }
        count = need;
    }
    /* Stagger the tops by a cache line each: stacks a whole number of pages
     * apart would otherwise put every fiber's live frame in the same L1 set. */
    return base + (size_t)(i + 1) * each - (size_t)(i % 64) * 64;
}

/* ---------------------------------------------------------------- block */
enum state : unsigned char { RUNNABLE, AT_BARRIER, AT_WARP, AT_TILE, AT_GRID, EXITED };
enum op : unsigned char {
    OP_SYNCWARP, OP_SHFL, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY, OP_ALL,
    OP_ACTIVEMASK, OP_MATCH_ANY, OP_MATCH_ALL, OP_ADD, OP_MIN, OP_MAX, OP_UMIN, OP_UMAX,
    OP_AND, OP_OR, OP_XOR
};
static const char *const op_names[] = {
    "__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "__ballot_sync", "__any_sync", "__all_sync", "__activemask", "__match_any_sync",
    "__match_all_sync", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync",
    "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync",
    "__reduce_xor_sync"};
enum barrier_kind : unsigned char { BAR_PLAIN, BAR_COUNT, BAR_AND, BAR_OR };

struct lane {
    context ctx;
    uint3 tid;
    state st;
    op wop;
    unsigned mask;      /* the warp function's mask (its group) */
    int arg, width;     /* source lane / delta / lane mask; width */
    uintptr_t site;     /* __activemask: the call site is the convergence point */
    uint64_t value;     /* what this lane brings */
    uint64_t result;    /* what it gets back */
    int pred;           /* barrier predicate in, __match_all_sync predicate out */
    unsigned tile;      /* AT_TILE: the size of the multi-warp tile it syncs */
};

struct block {
    lane *lanes;
    unsigned n, cur, alive, at_barrier, at_warp;
    unsigned at_grid;   /* threads at grid.sync() (a cooperative launch) */
    unsigned at_tile;   /* threads at a multi-warp tile's sync */
    unsigned char waiting[32];  /* lanes of each warp at a warp function */
    unsigned char exited[32];   /* lanes of each warp that have exited */
    unsigned short tile_waiting[32]; /* lanes at a multi-warp tile's sync, by its first warp */
    uint64_t *slots;    /* one word per thread: what multi-warp tile shuffles exchange */
    barrier_kind bkind;
    context sched;
    void (*body)(void **);
    void **params;
    bool failed;
};

static thread_local block *current __attribute__((unused));

QL_FN void enter(block *b, unsigned i) {
    b->cur = i;
    /* Stored by name: a pointer to threadIdx would let its address escape,
     * and then no tier-1 row loop of the module vectorises (4x on saxpy). */
    threadIdx = b->lanes[i].tid;
}

/* Leaves lane `me` (already marked blocked or exited) for the next runnable
 * lane of this pass, or for the scheduler at the end of the pass. */
QL_FN void yield(block *b, unsigned me) {
    for (unsigned j = me + 1; j < b->n; ++j) {
        if (b->lanes[j].st == RUNNABLE) {
            enter(b, j);
            jump(&b->lanes[me].ctx, &b->lanes[j].ctx);
            return;
        }
    }
    jump(&b->lanes[me].ctx, &b->sched);
}

__attribute__((noreturn)) QL_FN void abort_lane(void) {
    block *b = current;
    b->failed = true;
    unsigned me = b->cur;
    b->lanes[me].st = EXITED;
    jump(&b->lanes[me].ctx, &b->sched);
    __builtin_unreachable();
}

QL_FN void fiber_main(void *arg) {
    block *b = (block *)arg;
    b->body(b->params);
    unsigned me = b->cur;
    b->lanes[me].st = EXITED;
    --b->alive;
    ++b->exited[me / 32];
    yield(b, me);
    __builtin_unreachable();
}

QL_FN unsigned lane_id(unsigned t) { return t & 31u; }

/* The lane a shuffle of lane j reads, by CUDA's rules: with base the first
 * lane of j's segment of `width` lanes, __shfl_sync reads base + src mod
 * width; __shfl_up/down_sync read j -/+ delta, or j itself (defined: the own
 * value) when that leaves the segment; __shfl_xor_sync reads j ^ m, or j
 * itself when that lies in a later segment (an earlier one may be read). */
QL_FN int shuffle_lane(op o, unsigned j, unsigned a, unsigned w) {
    const unsigned base = j & ~(w - 1);
    switch (o) {
    case OP_SHFL: return (int)(base + (a & (w - 1)));
    case OP_SHFL_UP: return a > j - base ? (int)j : (int)(j - a);
    case OP_SHFL_DOWN: return a >= base + w - j ? (int)j : (int)(j + a);
    case OP_SHFL_XOR: {
        const unsigned s = j ^ a;
        return s >= base + w ? (int)j : (int)s;
    }
    default: return -1;
    }
}
QL_FN int shuffle_source(const lane &me, unsigned j) {
    return shuffle_lane(me.wop, j, (unsigned)me.arg, (unsigned)me.width);
}

/* Region fission's warp functions (backends/cpu/fission_warp.py): the
 * block's threads stored their operands in v[] / a[] (by linear thread
 * index) in the thread loop before; thread t reads its result here, by the
 * rules above. Only whole warps with the full mask get here. */
template <class T>
static inline T fission_shuffle(op o, const T *v, const int *a, unsigned t, int width) {
    if (width < 1 || width > 32 || (width & (width - 1))) width = 32;
    const unsigned w0 = t & ~31u;
    return v[w0 + (unsigned)shuffle_lane(o, t & 31u, (unsigned)a[t], (unsigned)width)];
}
/* The same with one lane argument for the whole block (a literal, a
 * parameter, a uniform loop's counter): nothing stored per thread. */
template <class T>
static inline T fission_shuffle_u(op o, const T *v, unsigned a, unsigned t, int width) {
    if (width < 1 || width > 32 || (width & (width - 1))) width = 32;
    const unsigned w0 = t & ~31u;
    return v[w0 + (unsigned)shuffle_lane(o, t & 31u, a, (unsigned)width)];
}
static inline unsigned fission_vote(op o, const int *p, unsigned t) {
    const unsigned w0 = t & ~31u;
    unsigned b = 0;
    for (unsigned l = 0; l < 32; ++l) b |= (unsigned)(p[w0 + l] != 0) << l;
    return o == OP_BALLOT ? b : o == OP_ANY ? (unsigned)(b != 0) : (unsigned)(b == 0xffffffffu);
}

QL_FN bool is_shuffle(op o) { return o >= OP_SHFL && o <= OP_SHFL_XOR; }

/* A group (mask m, within warp base w0) whose lanes have all arrived, before
 * it resolves: a shuffle that reads a lane outside m, or a lane of m that is
 * at another warp function, is undefined on a GPU (the value read is
 * garbage); report the first such lane. Returns 0, or -1 after reporting. */
QL_FN int check_group(block *b, unsigned w0, unsigned m) {
    const lane *L = b->lanes + w0;
    const unsigned nl = b->n - w0 < 32 ? b->n - w0 : 32;
    for (unsigned j = 0; j < 32; ++j) {
        if (!(m >> j & 1u) || !is_shuffle(L[j].wop)) continue;
        const int src = shuffle_source(L[j], j);
        const char *why = 0;
        if (!(m >> src & 1u))
            why = (unsigned)src >= nl ? "is not in the mask (it does not exist in this block)"
                                      : "is not in the mask";
        else if (!is_shuffle(L[src].wop))
            why = "is in the mask but is not at a shuffle (not converged: it waits at another "
                  "warp function)";
        if (!why) continue;
        const char *verb = L[j].wop == OP_SHFL ? "srcLane" : L[j].wop == OP_SHFL_XOR
                                                                 ? "laneMask" : "delta";
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "%s with mask 0x%08x (%s %d, width %d) in block (%u, %u, %u), thread "
                  "(%u, %u, %u), lane %u: reads lane %d, which %s; on a GPU a shuffle from a "
                  "lane that does not take part in it is undefined (the value read is "
                  "garbage); keep the source lane inside the mask", op_names[L[j].wop], m, verb,
                  L[j].arg, L[j].width, blockIdx.x, blockIdx.y, blockIdx.z, L[j].tid.x,
                  L[j].tid.y, L[j].tid.z, j, src, why);
        return -1;
    }
    /* Every lane of the group at the same warp function (the four shuffles
     * count as one: they exchange values the same way). */
    const unsigned first = (unsigned)__builtin_ctz(m);
    for (unsigned j = first + 1; j < 32; ++j) {
        if (!(m >> j & 1u)) continue;
        const op a = L[first].wop, o = L[j].wop;
        if (a == o || (is_shuffle(a) && is_shuffle(o))) continue;
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "%s with mask 0x%08x in block (%u, %u, %u), thread (%u, %u, %u), lane %u: "
                  "lane %u of the mask is at %s instead (not converged); on a GPU every lane "
                  "of a mask must reach the same warp function, else the result is undefined",
                  op_names[o], m, blockIdx.x, blockIdx.y, blockIdx.z, L[j].tid.x, L[j].tid.y,
                  L[j].tid.z, j, first, op_names[a]);
        return -1;
    }
    return 0;
}

/* The result of warp function `o` for lane l of a group whose lanes (mask
 * m, within warp base w0) have all arrived and passed check_group. */
QL_FN void resolve_group(block *b, unsigned w0, unsigned m) {
    lane *L = b->lanes + w0;
    unsigned ballot = 0;
    for (unsigned j = 0; j < 32; ++j)
        if ((m >> j & 1u) && L[j].value) ballot |= 1u << j;
    for (unsigned j = 0; j < 32; ++j) {
        if (!(m >> j & 1u)) continue;
        lane &me = L[j];
        const int src = shuffle_source(me, j);
        uint64_t r = 0;
        switch (me.wop) {
        case OP_SHFL: case OP_SHFL_UP: case OP_SHFL_DOWN: case OP_SHFL_XOR:
            r = L[src].value;   /* check_group: src is in m */
            break;
        case OP_BALLOT: r = ballot; break;
        case OP_ANY: r = ballot != 0; break;
        case OP_ALL: r = ballot == m; break;
        case OP_MATCH_ANY:
            for (unsigned q = 0; q < 32; ++q)
                if ((m >> q & 1u) && L[q].value == me.value) r |= 1ull << q;
            break;
        case OP_MATCH_ALL: {
            int same = 1;
            for (unsigned q = 0; q < 32; ++q)
                if ((m >> q & 1u) && L[q].value != me.value) same = 0;
            r = same ? m : 0;
            me.pred = same;
            break;
        }
        case OP_ADD: case OP_AND: case OP_OR: case OP_XOR: case OP_UMIN: case OP_UMAX:
        case OP_MIN: case OP_MAX: {
            int first = 1;
            for (unsigned q = 0; q < 32; ++q) {
                if (!(m >> q & 1u)) continue;
                uint32_t v = (uint32_t)L[q].value, acc = (uint32_t)r;
                if (first) { r = v; first = 0; continue; }
                switch (me.wop) {
                case OP_ADD: acc += v; break;
                case OP_AND: acc &= v; break;
                case OP_OR: acc |= v; break;
                case OP_XOR: acc ^= v; break;
                case OP_UMIN: acc = v < acc ? v : acc; break;
                case OP_UMAX: acc = v > acc ? v : acc; break;
                case OP_MIN: acc = (int32_t)v < (int32_t)acc ? v : acc; break;
                default: acc = (int32_t)v > (int32_t)acc ? v : acc; break;
                }
                r = acc;
            }
            break;
        }
        default: break;
        }
        me.result = r;
    }
    for (unsigned j = 0; j < 32; ++j)
        if (m >> j & 1u) {
            L[j].st = RUNNABLE;
            --b->at_warp;
            --b->waiting[w0 / 32];
        }
}

QL_FN const char *describe(const lane &l) {
    return l.st == AT_BARRIER ? "__syncthreads" : l.st == AT_WARP ? op_names[l.wop]
                                 : l.st == AT_TILE ? "a multi-warp tile's sync"
                                 : l.st == AT_GRID ? "grid.sync()" : "";
}

/* --------------------------------------------- multi-warp tiles (N > 32)
 * A tile of N threads (a power of two from 64 to 1024, so whole warps,
 * starting at a multiple of N) syncs at a barrier over its own threads only:
 * each arriving thread waits (AT_TILE) until every live thread of the tile
 * is there; threads that exited release it, as they release __syncthreads.
 * A thread of the tile at another barrier, a warp function or a tile of
 * another size leaves the tile waiting: a deadlock, reported with the
 * block's. */
QL_FN unsigned tile_live(const block *b, unsigned t0, unsigned N) {
    unsigned gone = 0;
    for (unsigned w = t0 / 32; w < (t0 + N) / 32; ++w) gone += b->exited[w];
    return N - gone;
}

/* Releases the tile at t0 of N threads once every live thread has arrived.
 * Returns 1 when released, 0 when not every thread is there yet, -1 after
 * reporting a thread of the tile at another tile's sync (not converged). */
QL_FN int release_tile(block *b, unsigned t0, unsigned N, barrier_kind kind) {
    lane *L = b->lanes + t0;
    int count = 0, all = 1, any = 0;
    for (unsigned j = 0; j < N; ++j) {
        if (L[j].st == EXITED) continue;
        if (L[j].st != AT_TILE) return 0;
        if (L[j].tile != N) {
            ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                      "thread_block_tile<%u>::sync in block (%u, %u, %u): thread (%u, %u, %u) "
                      "of the tile waits at thread_block_tile<%u>'s instead (not converged); "
                      "every thread of a tile must reach the same collective",
                      N, blockIdx.x, blockIdx.y, blockIdx.z, L[j].tid.x, L[j].tid.y,
                      L[j].tid.z, L[j].tile);
            return -1;
        }
        count += L[j].pred != 0;
        all &= L[j].pred != 0;
        any |= L[j].pred != 0;
    }
    const int r = kind == BAR_COUNT ? count : kind == BAR_AND ? all : kind == BAR_OR ? any : 0;
    for (unsigned j = 0; j < N; ++j)
        if (L[j].st == AT_TILE) {
            L[j].st = RUNNABLE;
            L[j].pred = r;
            --b->at_tile;
        }
    b->tile_waiting[t0 / 32] = 0;
    return 1;
}


/* Every live thread is at the barrier: release them all with the result of
 * __syncthreads_count/_and/_or. */
QL_FN void release_barrier(block *b) {
    int count = 0, all = 1, any = 0;
    for (unsigned j = 0; j < b->n; ++j) {
        if (b->lanes[j].st != AT_BARRIER) continue;
        count += b->lanes[j].pred != 0;
        all &= b->lanes[j].pred != 0;
        any |= b->lanes[j].pred != 0;
    }
    const int r = b->bkind == BAR_COUNT ? count : b->bkind == BAR_AND ? all : any;
    for (unsigned j = 0; j < b->n; ++j)
        if (b->lanes[j].st == AT_BARRIER) {
            b->lanes[j].st = RUNNABLE;
            b->lanes[j].pred = r;
        }
    b->at_barrier = 0;
    b->bkind = BAR_PLAIN;
}

/* ------------------------------------------------ grid.sync() (cooperative)
 * Every live thread of the block is at grid.sync(): the worker (this block's
 * own thread in a cooperative launch) waits at the launch's grid barrier for
 * the other blocks, then releases its threads. Returns 1, or -1 after
 * reporting a grid barrier that can never complete. */
QL_FN int release_grid(block *b) {
    const ql_cpu_grid *g = ql_launch_dims->grid_sync;
    uint32_t waiting = 0, exited = 0;
    const int r = g->sync(g, &waiting, &exited);
    if (r == QL_GRID_DEADLOCK)
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "grid.sync() in block (%u, %u, %u) can never complete: %u block%s of the "
                  "grid wait%s at it and %u %s exited without reaching it (on a GPU the launch "
                  "hangs); every block must reach each grid.sync()", blockIdx.x, blockIdx.y,
                  blockIdx.z, waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "",
                  exited, exited == 1 ? "has" : "have");
    if (r != QL_GRID_RELEASED) return -1;
    for (unsigned j = 0; j < b->n; ++j)
        if (b->lanes[j].st == AT_GRID) b->lanes[j].st = RUNNABLE;
    b->at_grid = 0;
    return 1;
}

/* Resolves warp rendezvous and the barrier after a pass. Returns 1 on
 * progress, 0 when the block is deadlocked, -1 after reporting a bad mask. */
QL_FN int resolve(block *b) {
    int progress = 0;
    for (unsigned w0 = 0; w0 < b->n; w0 += 32) {
        lane *L = b->lanes + w0;
        const unsigned nl = b->n - w0 < 32 ? b->n - w0 : 32;
        for (unsigned j = 0; j < nl; ++j) {
            if (L[j].st != AT_WARP) continue;
            if (L[j].wop == OP_ACTIVEMASK) { /* lanes that reached the same call site */
                unsigned m = 0;
                for (unsigned q = 0; q < nl; ++q)
                    if (L[q].st == AT_WARP && L[q].wop == OP_ACTIVEMASK && L[q].site == L[j].site)
                        m |= 1u << q;
                for (unsigned q = 0; q < nl; ++q)
                    if (m >> q & 1u) {
                        L[q].result = m;
                        L[q].st = RUNNABLE;
                        --b->at_warp;
                        --b->waiting[w0 / 32];
                    }
                progress = 1;
                continue;
            }
            const unsigned m = L[j].mask;
            int ready = 1;
            for (unsigned q = 0; q < 32 && ready; ++q) {
                if (!(m >> q & 1u)) continue;
                if (q >= nl || L[q].st == EXITED) {
                    ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                              "%s with mask 0x%08x in block (%u, %u, %u), thread (%u, %u, %u): "
                              "the mask names lane %u, which %s; name only lanes that take "
                              "part", op_names[L[j].wop], m, blockIdx.x, blockIdx.y,
                              blockIdx.z, L[j].tid.x, L[j].tid.y, L[j].tid.z, q,
                              q >= nl ? "does not exist in this block" : "has exited");
                    return -1;
                }
                if (L[q].st != AT_WARP || L[q].mask != m) ready = 0;
            }
            if (ready) {
                if (check_group(b, w0, m)) return -1;
                resolve_group(b, w0, m);
                progress = 1;
            }
        }
    }
    /* Multi-warp tiles whose last live threads exited while the rest waited. */
    for (unsigned j = 0; b->at_tile && j < b->n;) {
        if (b->lanes[j].st != AT_TILE) { ++j; continue; }
        const unsigned N = b->lanes[j].tile, t0 = j & ~(N - 1);
        if (b->tile_waiting[t0 / 32] == tile_live(b, t0, N)) {
            const int r = release_tile(b, t0, N, (barrier_kind)b->lanes[j].arg);
            if (r < 0) return -1;
            progress |= r;
        }
        j = t0 + N;
    }
    if (progress) return 1;
    if (b->alive && b->at_grid == b->alive) return release_grid(b);
    if (b->alive && b->at_barrier == b->alive) {
        release_barrier(b);
        return 1;
    }
    return 0;
}

QL_FN void report_deadlock(block *b) {
    char detail[700];
    size_t used = 0;
    for (unsigned j = 0; j < b->n && used < sizeof detail - 80;) {
        const lane &l = b->lanes[j];
        if (l.st == EXITED) { ++j; continue; }
        unsigned k = j;
        while (k + 1 < b->n && b->lanes[k + 1].st == l.st &&
               (l.st != AT_WARP || b->lanes[k + 1].wop == l.wop) &&
               (l.st != AT_TILE || b->lanes[k + 1].tile == l.tile))
            ++k;
        if (l.st == AT_TILE)
            used += snprintf(detail + used, sizeof detail - used,
                             "%sthreads %u-%u wait at thread_block_tile<%u>::sync",
                             used ? "; " : "", j, k, l.tile);
        else
            used += snprintf(detail + used, sizeof detail - used, "%sthreads %u-%u wait at %s",
                             used ? "; " : "", j, k, describe(l));
        j = k + 1;
    }
    ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
              "deadlock in block (%u, %u, %u): %u threads alive, %u at the barrier; %s "
              "(threads numbered x fastest)", blockIdx.x, blockIdx.y, blockIdx.z, b->alive,
              b->at_barrier, detail);
}

/* Runs one block of `body` as fibers. Returns 0, or -1 after a failure. */
QL_FN int run_block(void (*body)(void **), void **params, unsigned bx, unsigned by,
                    unsigned bz) {
    lane *&lanes = worker_lanes;
    uint64_t *&slots = worker_slots;
    unsigned &nlanes = worker_nlanes;
    const unsigned n = bx * by * bz;
    if (n > nlanes) {
        free(lanes);
        free(slots);
        lanes = (lane *)calloc(n, sizeof(lane));
        slots = (uint64_t *)calloc(n, sizeof(uint64_t));
        nlanes = lanes && slots ? n : 0;
    }
    if (!nlanes || !stack_top(0, n)) {
        ql_report(QL_CPU_ERROR_OUT_OF_MEMORY, "no memory for %u fiber stacks of %zu bytes "
                  "(out of memory, or of memory mappings: each stack and its guard page are "
                  "two, and vm.max_map_count bounds a process's)", n, stack_bytes());
        return -1;
    }
    block b;
    b.lanes = lanes;
    b.n = n;
    b.alive = n;
    b.at_barrier = 0;
    b.at_warp = 0;
    b.at_grid = 0;
    b.at_tile = 0;
    memset(b.waiting, 0, sizeof b.waiting);
    memset(b.exited, 0, sizeof b.exited);
    memset(b.tile_waiting, 0, sizeof b.tile_waiting);
    b.slots = slots;
    b.bkind = BAR_PLAIN;
    b.body = body;
    b.params = params;
    b.failed = false;
    for (unsigned t = 0; t < n; ++t) {
        lane &l = lanes[t];
        l.tid.x = t % bx;
        l.tid.y = (t / bx) % by;
        l.tid.z = t / (bx * by);
        l.st = RUNNABLE;
        prepare(&l.ctx, stack_top(t, n), fiber_main, &b);
    }
    block *outer = current;
    current = &b;
    ql_tier2_abort = abort_lane;
    int rc = 0;
    for (;;) {
        unsigned first = 0;
        while (first < n && lanes[first].st != RUNNABLE) ++first;
        if (first < n) {
            enter(&b, first);
            jump(&b.sched, &lanes[first].ctx);
            if (b.failed) { rc = -1; break; }
            continue;
        }
        if (!b.alive) break;
        int r = resolve(&b);
        if (r > 0) continue;
        if (r == 0) report_deadlock(&b);
        rc = -1;
        break;
    }
    current = outer;
    return rc;
}

/* A fault (signal) in this worker's block: the runtime resumes past the
 * block, so drop it, and say whether the address hit a stack's guard page.
 * Runs in a signal handler: no allocation, no locks. */
QL_FN void on_fault(ql_cpu_fault *f) {
    current = 0;
    const size_t each = stack_bytes(), page = (size_t)sysconf(_SC_PAGESIZE);
    f->fiber_stack = (uint32_t)(each - page);
    const uintptr_t base = (uintptr_t)stacks_base;
    if (base && f->address >= base && f->address - base < each * stacks_count)
        f->fiber_overflow = (f->address - base) % each < page;
}

/* A barrier or warp function reached outside a fiber: the compiler driver
 * ran this kernel as a loop (tier 1), which its analysis (backends/cpu/
 * tiers.py) must never do. The launch fails with the reason rather than
 * crashing; the thread goes on as if the call had returned. */
__attribute__((noinline, cold)) QL_FN void unscheduled(const char *what) {
    ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
              "%s reached in block (%u, %u, %u), thread (%u, %u, %u) of a kernel the CPU "
              "device runs as a loop over its threads (tier 1): quicklaunch chose the wrong "
              "tier for this kernel; please report it with the kernel's source", what,
              blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
}
#define QL_IN_FIBER(b, what, ...)                                                           \
    if (__builtin_expect(!(b), 0)) {                                                       \
        unscheduled(what);                                                                 \
        return __VA_ARGS__;                                                                \
    }

/* Blocks the calling lane at a warp function until its group resolves. */
QL_FN uint64_t warp_op(op o, unsigned mask, uint64_t value, int arg, int width,
                       uintptr_t site) {
    block *b = current;
    QL_IN_FIBER(b, op_names[o], value)
    const unsigned me = b->cur;
    lane &l = b->lanes[me];
    if (o != OP_ACTIVEMASK && !(mask >> lane_id(me) & 1u)) {
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "%s with mask 0x%08x in block (%u, %u, %u), thread (%u, %u, %u): the mask "
                  "must include the calling lane %u", op_names[o], mask, blockIdx.x, blockIdx.y,
                  blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, lane_id(me));
        abort_lane();
    }
    if (width < 1 || width > 32 || (width & (width - 1))) width = 32;
    l.wop = o;
    l.mask = mask;
    l.value = value;
    l.arg = arg;
    l.width = width;
    l.site = site;
    l.st = AT_WARP;
    ++b->at_warp;
    const unsigned w0 = me & ~31u;
    if (++b->waiting[w0 / 32] >= (unsigned)__builtin_popcount(mask) && o != OP_ACTIVEMASK) {
        /* Possibly the last of its group to arrive: if every named lane is
         * here with the same mask, complete the group now and go on. */
        const lane *L = b->lanes + w0;
        const unsigned nl = b->n - w0 < 32 ? b->n - w0 : 32;
        int ready = 1;
        for (unsigned q = 0; q < 32 && ready; ++q)
            if (mask >> q & 1u)
                ready = q < nl && L[q].st == AT_WARP && L[q].mask == mask;
        if (ready) {
            if (check_group(b, w0, mask)) abort_lane();
            resolve_group(b, w0, mask);
            return l.result;
        }
    }
    yield(b, me);
    return b->lanes[me].result;
}

QL_FN int barrier(barrier_kind kind, int pred) {
    block *b = current;
    QL_IN_FIBER(b, "__syncthreads", pred)
    const unsigned me = b->cur;
    b->lanes[me].st = AT_BARRIER;
    b->lanes[me].pred = pred;
    if (kind != BAR_PLAIN) b->bkind = kind;
    if (++b->at_barrier == b->alive && !b->at_warp) {
        /* The last live thread to arrive releases the barrier and goes on;
         * the others resume in the next pass. No trip to the scheduler. */
        release_barrier(b);
        return b->lanes[me].pred;
    }
    yield(b, me);
    return b->lanes[me].pred;
}

/* thread_block_tile<N>::sync (and any/all) for a multi-warp tile: waits for
 * every live thread of the calling thread's tile of N; returns the count /
 * and / or of the predicates for BAR_COUNT / BAR_AND / BAR_OR. */
QL_FN int tile_barrier(unsigned N, barrier_kind kind, int pred) {
    block *b = current;
    QL_IN_FIBER(b, "a multi-warp tile's sync", pred)
    const unsigned me = b->cur, t0 = me & ~(N - 1);
    lane &l = b->lanes[me];
    if (t0 + N > b->n) {   /* tiled_partition refuses such blocks; a tile made otherwise */
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "thread_block_tile<%u> in block (%u, %u, %u), thread (%u, %u, %u): the "
                  "block has %u threads, not a multiple of %u", N, blockIdx.x, blockIdx.y,
                  blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, b->n, N);
        abort_lane();
    }
    l.st = AT_TILE;
    l.tile = N;
    l.pred = pred;
    l.arg = kind;
    ++b->at_tile;
    if (++b->tile_waiting[t0 / 32] == tile_live(b, t0, N)) {
        /* The last live thread of the tile releases it and goes on. */
        const int r = release_tile(b, t0, N, kind);
        if (r < 0) abort_lane();
        if (r > 0) return l.pred;
    }
    yield(b, me);
    return b->lanes[me].pred;
}

/* A multi-warp tile's shuffle of one word: every thread of the tile leaves
 * its word in its slot, the tile syncs, each reads the word of rank `src`
 * (mod N), and the tile syncs again before the slots are reused. */
QL_FN uint64_t tile_shfl(unsigned N, uint64_t v, unsigned src) {
    block *b = current;
    QL_IN_FIBER(b, "a multi-warp tile's shfl", v)
    const unsigned me = b->cur, t0 = me & ~(N - 1);
    b->slots[me] = v;
    b->lanes[me].value = src;
    tile_barrier(N, BAR_PLAIN, 0);
    /* CUDA: every thread of a multi-warp tile names the same src_rank, a
     * rank of the tile; anything else is undefined on a GPU. */
    unsigned first = t0;
    while (b->lanes[first].st == EXITED) ++first;   /* this lane is not */
    const char *why = src >= N ? "is not a rank of the tile"
                      : b->lanes[first].value != src ? "differs from the src_rank of the "
                                                       "tile's first thread" : 0;
    if (why) {
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "thread_block_tile<%u>::shfl in block (%u, %u, %u), thread (%u, %u, %u): "
                  "src_rank %u %s (%u); in a tile of more than 32 threads every thread must "
                  "name the same src_rank, below %u, else the result is undefined on a GPU",
                  N, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
                  src, why, (unsigned)b->lanes[first].value, N);
        abort_lane();
    }
    const uint64_t r = b->slots[t0 + src];
    tile_barrier(N, BAR_PLAIN, 0);
    return r;
}

/* out[k] = the word of the tile's rank k * stride + offset, k < N / stride
 * (every thread of the tile gets them all, in two syncs). */
QL_FN void tile_gather(unsigned N, uint64_t v, unsigned stride, unsigned offset,
                       uint64_t *out) {
    block *b = current;
    QL_IN_FIBER(b, "a multi-warp tile's collective")
    const unsigned me = b->cur, t0 = me & ~(N - 1);
    b->slots[me] = v;
    tile_barrier(N, BAR_PLAIN, 0);
    for (unsigned k = 0; k < N / stride; ++k) out[k] = b->slots[t0 + k * stride + offset];
    tile_barrier(N, BAR_PLAIN, 0);
}

/* grid.sync(): the calling thread waits until every thread of the grid has
 * arrived (threads that exited excepted, as at __syncthreads). Only a
 * cooperative launch runs every block at once; in any other, grid.sync()
 * is a LaunchError (on a GPU it is undefined and usually hangs). */
QL_FN void grid_barrier(void) {
    block *b = current;
    QL_IN_FIBER(b, "grid.sync()")
    const unsigned me = b->cur;
    if (!ql_launch_dims || !ql_launch_dims->grid_sync) {
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "grid.sync() in block (%u, %u, %u), thread (%u, %u, %u): the kernel was not "
                  "launched cooperatively, so its blocks are not all resident at once (on a "
                  "GPU grid.sync() is then undefined); launch it with "
                  "k.configure(grid, block, cooperative=True)(...)", blockIdx.x, blockIdx.y,
                  blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
        abort_lane();
    }
    b->lanes[me].st = AT_GRID;
    if (++b->at_grid == b->alive) {
        /* The last thread of the block to arrive waits for the grid. */
        if (release_grid(b) < 0) abort_lane();
        return;
    }
    yield(b, me);
}

inline worker_memory::~worker_memory() {
    if (!armed) return;
    if (stacks_base) munmap(stacks_base, stack_bytes() * stacks_count);
    stacks_base = 0;
    stacks_count = 0;
    free(worker_lanes);
    free(worker_slots);
    worker_lanes = 0;
    worker_slots = 0;
    worker_nlanes = 0;
}

template <class T> QL_FN uint64_t bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move values of at most 8 bytes");
    uint64_t r = 0;
    memcpy(&r, &v, sizeof(T));
    return r;
}
template <class T> QL_FN T from_bits(uint64_t r) {
    T v;
    memcpy(&v, &r, sizeof(T));
    return v;
}

}  // namespace ql_fiber

#endif

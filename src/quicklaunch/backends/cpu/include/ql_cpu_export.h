// Reflection and the tier-1 block loop for CPU kernel modules.
//
// Included at the end of every CPU kernel translation unit, after the user's
// source. The generated tail (backends/cpu/compiler.py) then writes the
// module's kernel table:
//     QL_MODULE_BEGIN
//     QL_KERNEL("<expression>", <tier>, &<expression>)  one row per kernel or
//     ...                                         name expression
//     QL_MODULE_END(<count>)
// The compiler itself then answers each parameter's size, alignment and
// kind (enum ql_kind, from kinds.h); nothing is guessed in Python.
#ifndef QL_CPU_EXPORT_H
#define QL_CPU_EXPORT_H

#include "ql_cpu_abi.h"
#include "ql_direct.h"

namespace ql_export {

template <bool B, class T, class F> struct pick { typedef T type; };
template <class T, class F> struct pick<false, T, F> { typedef F type; };

template <class T> struct is_const { enum { value = 0 }; };
template <class T> struct is_const<const T> { enum { value = 1 }; };

// Kind of one parameter type: an enum ql_kind (kinds.h), which is also the
// launcher's type code.
template <class T, bool Enum = __is_enum(T)> struct kind_of {
    enum { value = QL_KIND_STRUCT };
};
template <class T> struct kind_of<T, true> {  // enums travel as their underlying type
    enum { value = kind_of<__underlying_type(T)>::value };
};
template <class T> struct kind_of<T *, false> {
    enum { value = is_const<T>::value ? QL_KIND_PTR_CONST : QL_KIND_PTR };
};
template <class T> struct kind_of<T &, false> { enum { value = QL_KIND_INVALID }; };
template <class T> struct kind_of<T &&, false> { enum { value = QL_KIND_INVALID }; };
#define QL_KIND_MAP(type, code) \
    template <> struct kind_of<type, false> { enum { value = code }; };
QL_KIND_MAP(bool, QL_KIND_BOOL)
QL_KIND_MAP(float, QL_KIND_F32)
QL_KIND_MAP(double, QL_KIND_F64)
QL_KIND_MAP(__half, QL_KIND_F16)
QL_KIND_MAP(__nv_bfloat16, QL_KIND_BF16)
#undef QL_KIND_MAP
// Integers: the width and signedness the compiler gives the type.
template <unsigned Size, bool Signed> struct int_kind;
template <> struct int_kind<1, true> { enum { value = QL_KIND_I8 }; };
template <> struct int_kind<2, true> { enum { value = QL_KIND_I16 }; };
template <> struct int_kind<4, true> { enum { value = QL_KIND_I32 }; };
template <> struct int_kind<8, true> { enum { value = QL_KIND_I64 }; };
template <> struct int_kind<1, false> { enum { value = QL_KIND_U8 }; };
template <> struct int_kind<2, false> { enum { value = QL_KIND_U16 }; };
template <> struct int_kind<4, false> { enum { value = QL_KIND_U32 }; };
template <> struct int_kind<8, false> { enum { value = QL_KIND_U64 }; };
#define QL_INT_KIND(type) \
    template <> struct kind_of<type, false> { \
        enum { value = int_kind<sizeof(type), (type)-1 < (type)0>::value }; \
    };
QL_INT_KIND(char) QL_INT_KIND(signed char) QL_INT_KIND(unsigned char)
QL_INT_KIND(short) QL_INT_KIND(unsigned short)
QL_INT_KIND(int) QL_INT_KIND(unsigned int)
QL_INT_KIND(long) QL_INT_KIND(unsigned long)
QL_INT_KIND(long long) QL_INT_KIND(unsigned long long)
QL_INT_KIND(char16_t) QL_INT_KIND(char32_t) QL_INT_KIND(wchar_t)
#undef QL_INT_KIND
// cv-qualified by-value parameters reflect as the plain type.
template <class T> struct kind_of<const T, false> { enum { value = kind_of<T>::value }; };
template <class T> struct kind_of<volatile T, false> { enum { value = kind_of<T>::value }; };
template <class T> struct kind_of<const volatile T, false> { enum { value = kind_of<T>::value }; };

template <class T> struct strip_ref { typedef T type; };
template <class T> struct strip_ref<T &> { typedef T type; };
template <class T> struct strip_ref<T &&> { typedef T type; };

template <unsigned... I> struct seq {};
template <unsigned N, unsigned... I> struct make_seq : make_seq<N - 1, N - 1, I...> {};
template <unsigned... I> struct make_seq<0, I...> { typedef seq<I...> type; };

// blockIdx of linear block b (x fastest). A block in the first row (every
// block of a 1-D grid) needs no division: a 64-bit divide costs more than
// the rest of a small launch.
static inline void set_block(uint64_t b, uint64_t gx, uint64_t gy) {
    if (b < gx) {
        blockIdx = uint3{(unsigned)b, 0u, 0u};
        return;
    }
    blockIdx.x = (unsigned)(b % gx);
    blockIdx.y = (unsigned)((b / gx) % gy);
    blockIdx.z = (unsigned)(b / (gx * gy));
}

// The block after the current one (x fastest), without dividing.
static inline void next_block(unsigned gx, unsigned gy) {
    if (++blockIdx.x < gx) return;
    blockIdx.x = 0;
    if (++blockIdx.y < gy) return;
    blockIdx.y = 0;
    ++blockIdx.z;
}

// gridDim and blockDim of a launch, and its dynamic shared memory (a
// launch without any leaves the pointer alone: one TLS store fewer).
static inline void set_launch(const ql_cpu_dims *d) {
    gridDim = dim3(d->grid[0], d->grid[1], d->grid[2]);
    blockDim = dim3(d->block[0], d->block[1], d->block[2]);
    if (d->shared_bytes) __ql_dyn_shared = ql_dynamic_shared_arena(d->shared_bytes);
}

// A launch's dynamic shared memory, out of line for the small launch.
static __attribute__((noinline, cold)) void set_dyn_shared(size_t bytes) {
    __ql_dyn_shared = ql_dynamic_shared_arena(bytes);
}

// Whether the launch has failed (another block's assert): read through the
// launch's own record, not thread-local state. A volatile read, not an
// atomic one: GCC treats any __atomic builtin as a
// clobber of all memory, so the kernel's thread-local coordinates (and their
// address, a __tls_get_addr call that spills every vector register) would be
// reloaded after it, on every block. The word is an aligned int written once
// by an atomic compare-exchange; a plain load sees it, later at worst.
static inline bool failed(const ql_cpu_dims *d) {
    return *(const volatile int *)&d->error->code != 0;
}
// The atomic read, for the fission loop: there the per-block function's own
// code is better with the compiler starting each block afresh (the tiled
// matmul ran 25% slower with the volatile read), and the clobber also keeps
// each block's blockIdx stored for the fault handler.
static inline bool failed_atomic(const ql_cpu_dims *d) {
    return __atomic_load_n(&d->error->code, __ATOMIC_RELAXED) != 0;
}

// Makes the block's coordinates visible in memory here, for the fault
// handler, without clobbering anything else: the stores are otherwise dead
// until the loop's end, and the compiler could sink them past the kernel's
// body. (Not threadIdx: to the compiler an operand naming threadIdx.y reads
// all of threadIdx, so each thread's threadIdx.x store would stay in the row
// and stop its vectorisation: saxpy 5x slower.)
static inline __attribute__((always_inline)) void publish_block() {
    __asm__ __volatile__("" : : "m"(blockIdx));
}

// The runtime's fault handler asks where the fault happened (see
// ql_cpu_fault): this module's thread-local coordinates of the CUDA thread
// that was running on the faulting worker. An optimised tier-1 build does
// not keep threadIdx.x: reading it here would force a store per CUDA
// thread, and that store alone stops the row loop from vectorising (10x on
// saxpy). Such builds report the block, y and z; debug builds (-O0) and
// kernels on fibers (tier 2, which keep threadIdx anyway) report x too.
// Per row of the kernel table: in a module with fibers, its loop (tier 1)
// kernels keep threadIdx.x no better than elsewhere: at a faulting
// instruction it may hold another kernel's last thread. At a call that
// stops the kernel (abort, exit) it is the caller's, since the callee could
// read it. Fission kernels (tier 3) store it in each thread loop, for the
// fault handler (fission_codegen.py).
template <unsigned Tier>
static void fault(ql_cpu_fault *f) {
    f->block[0] = blockIdx.x, f->block[1] = blockIdx.y, f->block[2] = blockIdx.z;
#if defined(QL_DEBUG)
    f->thread[0] = threadIdx.x;
#elif defined(QL_TIER2)
    f->thread[0] = Tier != 1 || f->at_call ? threadIdx.x : QL_CPU_UNKNOWN;
#else
    f->thread[0] = QL_CPU_UNKNOWN;
#endif
    f->thread[1] = threadIdx.y, f->thread[2] = threadIdx.z;
#ifdef QL_TIER2
    ql_fiber::on_fault(f);
#endif
}

template <class Fn, Fn F> struct entry;

template <class... A, void (*F)(A...)>
struct entry<void (*)(A...), F> {
    enum { nparams = sizeof...(A) };
    static constexpr ql_cpu_param params[sizeof...(A) + 1] = {
        {(uint32_t)sizeof(typename strip_ref<A>::type),
         (uint32_t)alignof(typename strip_ref<A>::type),
         (uint32_t)kind_of<A>::value}...,
        {0, 0, 0}};

    // One row of threads (fixed y, z) with a block width known at compile
    // time: the compiler can then prove that blockIdx.x * blockDim.x +
    // threadIdx.x does not wrap and vectorise the row.
    // The row runs over the global x index as a signed int (`base` is the
    // block's blockIdx.x * blockDim.x, known to fit): in the inlined body
    // blockIdx.x * blockDim.x + threadIdx.x folds to that index, so a bounds
    // test `if (i < n)` compares an induction variable that cannot overflow
    // with an invariant, and the compiler splits the row at n into a loop
    // without the test (vectorised without masks) and an empty rest.
    template <unsigned BX>
    static inline __attribute__((always_inline)) void row(int base, A... a) {
        for (int i = base; i < base + (int)BX; ++i) {
            threadIdx.x = (unsigned)i - (unsigned)base;
            F(a...);
        }
    }

    static inline __attribute__((always_inline)) void row(unsigned bx, A... a) {
        for (unsigned x = 0; x < bx; ++x) {
            threadIdx.x = x;
            F(a...);
        }
    }

    // One block of a few threads in the grid's first row (k[1, 1] and other
    // small launches): the block loop in straight-line code, so every
    // coordinate store shares one thread-local address (empty launch: 216 ->
    // 111 instructions in the module). Inlined only into `small` below, its
    // own out-of-line function: inlined copies in the block loop changed the
    // compiler's choices elsewhere in the module (a fission matmul beside it
    // ran 40% slower). The dynamic shared arena is set first, out of line,
    // so that no call separates the coordinates' stores from the row: they
    // share one thread-local address.
    static inline __attribute__((always_inline)) void one_block(const ql_cpu_dims *d,
                                                                uint64_t first, unsigned bx,
                                                                A... a) {
        if (failed(d)) return;
        block_of_few(d, first, bx, a...);
    }
    // The same block, of a launch known not to have failed (a planned one).
    static inline __attribute__((always_inline)) void block_of_few(const ql_cpu_dims *d,
                                                                   uint64_t first, unsigned bx,
                                                                   A... a) {
        if (__builtin_expect(d->shared_bytes != 0, 0)) set_dyn_shared(d->shared_bytes);
        gridDim = dim3(d->grid[0], d->grid[1], d->grid[2]);
        blockDim = dim3(bx, 1u, 1u);
        blockIdx = uint3{(unsigned)first, 0u, 0u};
        threadIdx.y = threadIdx.z = 0;
        publish_block();
        row(bx, a...);
    }

    // The block loop: arguments are unpacked once per range of blocks and
    // passed by value, so the inlined kernel body sees loop invariants.
    static void loop(const ql_cpu_dims *d, uint64_t first, uint64_t last, A... a) {
        const unsigned bx = d->block[0], by = d->block[1], bz = d->block[2];
        const unsigned gx = d->grid[0], gy = d->grid[1];
        set_launch(d);
        set_block(first, gx, gy);
        for (uint64_t b = first; b < last; ++b, next_block(gx, gy)) {
            if (failed(d)) return;
            publish_block();
#ifndef QL_DEBUG
            // Common widths get a specialised row when the global x index
            // of this block fits an int (true for any realistic launch). The
            // test is spelled as kernels spell the index, in 32-bit unsigned
            // arithmetic, so the compiler connects the two.
            const unsigned base = blockIdx.x * blockDim.x;
            const bool fits = base <= (unsigned)INT_MAX - 1024u;
#endif
            for (unsigned z = 0; z < bz; ++z) {
                threadIdx.z = z;
                for (unsigned y = 0; y < by; ++y) {
                    threadIdx.y = y;
#ifndef QL_DEBUG
                    if (fits) {
                        switch (bx) {
                        case 32: row<32>((int)base, a...); continue;
                        case 64: row<64>((int)base, a...); continue;
                        case 128: row<128>((int)base, a...); continue;
                        case 256: row<256>((int)base, a...); continue;
                        case 512: row<512>((int)base, a...); continue;
                        case 1024: row<1024>((int)base, a...); continue;
                        default: break;
                        }
                    }
#endif
                    row(bx, a...);
                }
            }
        }
    }

#ifdef QL_MEMCHECK   /* the block loop reads the launch's arguments: not checked */
#define QL_UNPACK_INLINE __attribute__((noinline, no_sanitize_address))
#elif defined(QL_ABORTS)
#define QL_UNPACK_INLINE __attribute__((noinline)) /* kept out of the setjmp frame */
#else
#define QL_UNPACK_INLINE inline __attribute__((always_inline))
#endif
    template <unsigned... I>
    static QL_UNPACK_INLINE void unpack(seq<I...>, void **p, const ql_cpu_dims *d,
                                        uint64_t first, uint64_t last) {
        loop(d, first, last, *static_cast<typename strip_ref<A>::type *>(p[I])...);
    }

    // A small launch (k[1, 1]): one block of fewer than 32 threads in the
    // grid's first row, run by `small` without the block loop's frame (the
    // loop saves six registers and unpacks for the general case). Not in
    // debug builds, nor under memcheck (its unpacking is not checked).
#if !defined(QL_DEBUG) && !defined(QL_MEMCHECK)
#define QL_SMALL_LAUNCH 1
    template <unsigned... I>
    static __attribute__((noinline)) void small(seq<I...>, void **p, const ql_cpu_dims *d,
                                                uint64_t first) {
        one_block(d, first, d->block[0], *static_cast<typename strip_ref<A>::type *>(p[I])...);
    }
#ifndef QL_ABORTS
    // The table's `small` entry (ql_cpu_small_fn): a planned launch of one
    // block of a few threads calls it directly, past `run` (empty launch:
    // 15 instructions fewer), and the launch is new, so not failed.
    template <unsigned... I>
    static inline __attribute__((always_inline)) void planned(seq<I...>, void **p,
                                                              const ql_cpu_dims *d) {
        block_of_few(d, 0, d->block[0], *static_cast<typename strip_ref<A>::type *>(p[I])...);
    }
    static void small_launch(void **p, const ql_cpu_dims *d) {
        planned(typename make_seq<sizeof...(A)>::type(), p, d);
    }
    // The table's `direct` entry (ql_cpu_direct_fn): the same launch read
    // from the Python arguments (ql_direct.h), each into a value of its
    // parameter's type, so the block runs on values in registers. Kernels
    // with a parameter no reader takes have none (direct_of below).
    enum { direct_ok = (1 && ... && py_read<kind_of<A>::value, A>::ok) };
    template <unsigned... I> struct slots : py_slot<I, A>... {};
    template <unsigned... I>
    static inline __attribute__((always_inline)) int direct_seq(seq<I...>, void *const *args,
                                                                const ql_pyargs *py,
                                                                const ql_cpu_dims *d) {
        slots<I...> s;
        if (!(py_read<kind_of<A>::value, A>::read(args[I], py, I,
                                                  static_cast<py_slot<I, A> &>(s).v) && ...))
            return 0;  // nothing has run
        block_of_few(d, 0, d->block[0], static_cast<py_slot<I, A> &>(s).v...);
        return 1;
    }
    static int direct(void *const *args, const ql_pyargs *py, const ql_cpu_dims *d) {
        return direct_seq(typename make_seq<sizeof...(A)>::type(), args, py, d);
    }
#define QL_SMALL_ENTRY 1
#endif
    static inline bool is_small(const ql_cpu_dims *d, uint64_t first, uint64_t last) {
        return last == first + 1 && d->block[0] < 32 && d->block[1] == 1 &&
               d->block[2] == 1 && first < d->grid[0];
    }
#endif
    static __attribute__((noinline)) void all_blocks(void **p, const ql_cpu_dims *d,
                                                     uint64_t first, uint64_t last) {
        unpack(typename make_seq<sizeof...(A)>::type(), p, d, first, last);
    }
    static inline __attribute__((always_inline)) void blocks(void **p, const ql_cpu_dims *d,
                                                             uint64_t first, uint64_t last) {
#ifdef QL_SMALL_LAUNCH
        if (is_small(d, first, last))
            return small(typename make_seq<sizeof...(A)>::type(), p, d, first);
        return all_blocks(p, d, first, last);
#else
        unpack(typename make_seq<sizeof...(A)>::type(), p, d, first, last);
#endif
    }

    // Tier 1: blocks [first, last). In a module that can stop a thread
    // (assert, __trap: QL_ABORTS), a failure longjmps back here; other
    // modules pay for none of it, and their small launches go straight to
    // `small`.
    static void run(void **p, const ql_cpu_dims *d, uint64_t first, uint64_t last) {
#ifdef QL_ABORTS
        ql_launch_dims = d;
#ifdef QL_TIER2
        ql_tier2_abort = 0;   // a fiber kernel of this module ran here before
#endif
        jmp_buf abort_to;
        ql_tier1_abort = &abort_to;
        if (setjmp(abort_to) == 0) blocks(p, d, first, last);
        ql_tier1_abort = 0;
#else
        blocks(p, d, first, last);
#endif
    }

#ifdef QL_TIER2
    // Tier 2: one CUDA thread, run as a fiber.
    template <unsigned... I>
#ifdef QL_MEMCHECK
    __attribute__((no_sanitize_address))
#endif
    static void call(seq<I...>, void **p) {
        F(*static_cast<typename strip_ref<A>::type *>(p[I])...);
    }
    static void body(void **p) { call(typename make_seq<sizeof...(A)>::type(), p); }

    static void run_fibers(void **p, const ql_cpu_dims *d, uint64_t first, uint64_t last) {
        ql_launch_dims = d;
        const unsigned gx = d->grid[0], gy = d->grid[1];
        set_launch(d);
        set_block(first, gx, gy);
        for (uint64_t b = first; b < last; ++b, next_block(gx, gy)) {
            if (failed(d)) return;
            if (ql_fiber::run_block(body, p, d->block[0], d->block[1], d->block[2]) < 0) return;
        }
    }
#endif
};

#ifdef QL_TIER2
// Region fission (backends/cpu/fission.py): G is the kernel's generated
// per-block version, which loops over the block's threads itself between
// barriers. Called once per block; asserts stop it as in tier 1.
template <class T> struct unconst { typedef T type; };
template <class T> struct unconst<const T> { typedef T type; };
template <class T> struct unconst<volatile T> { typedef T type; };
template <class T> struct unconst<const volatile T> { typedef T type; };

// Per-thread storage of a fission kernel's replicated locals: one 64-byte
// aligned array of blockDim threads per local, from this worker's scratch.
template <class T> static inline size_t scratch_bytes(unsigned n) {
    return ((size_t)n * sizeof(T) + 63) & ~(size_t)63;
}
template <class T> static inline T *scratch_take(char *&p, unsigned n) {
    T *r = reinterpret_cast<T *>(p);
    p += scratch_bytes<T>(n);
    return r;
}
// A fission loop that runs a row of threads at once (fission_strided.py):
// fault and timeout reports read threadIdx as (?, y, z) until the next
// thread loop stores a thread. Volatile stores and a compiler barrier, so
// that neither is dropped as dead (nothing in the loop reads them) nor
// moved past the loop's first memory access.
static inline void row_of_threads(uint3 &tid, unsigned y, unsigned z) {
    volatile unsigned *t = &tid.x;
    t[0] = QL_CPU_UNKNOWN;
    t[1] = y;
    t[2] = z;
    __asm__ __volatile__("" ::: "memory");
}

// No thread_local destructor frees it: a pending one keeps glibc from
// unloading the module (and the pool's workers live as long as the process);
// a thread that exits (a stream's) leaves its scratch behind.
static inline char *fission_scratch(size_t bytes) {
    static thread_local char *mem;
    static thread_local size_t size;
    if (bytes > size) {
        free(mem);
        size_t want = bytes < 65536 ? 65536 : bytes;
        mem = (char *)aligned_alloc(64, (want + 63) & ~(size_t)63);
        if (!mem) {
            size = 0;
            ql_report(QL_CPU_ERROR_OUT_OF_MEMORY, "no memory for %zu bytes of per-thread "
                      "storage in block (%u, %u, %u)", bytes, blockIdx.x, blockIdx.y,
                      blockIdx.z);
            ql_abort_thread();
        }
        size = want;
    }
    return mem;
}

template <class Gn, Gn G> struct fission;
template <class... A, void (*G)(A...)>
struct fission<void (*)(A...), G> {
    static void loop(const ql_cpu_dims *d, uint64_t first, uint64_t last, A... a) {
        const unsigned gx = d->grid[0], gy = d->grid[1];
        set_launch(d);
        set_block(first, gx, gy);
        for (uint64_t b = first; b < last; ++b, next_block(gx, gy)) {
            if (failed_atomic(d)) return;
            G(a...);
        }
    }
    template <unsigned... I>
    static __attribute__((noinline)) void unpack(seq<I...>, void **p, const ql_cpu_dims *d,
                                                 uint64_t first, uint64_t last) {
        loop(d, first, last, *static_cast<typename strip_ref<A>::type *>(p[I])...);
    }
    static void run(void **p, const ql_cpu_dims *d, uint64_t first, uint64_t last) {
        ql_launch_dims = d;
        ql_tier2_abort = 0;   // a fiber kernel of this module ran here before
        jmp_buf abort_to;
        ql_tier1_abort = &abort_to;
        if (setjmp(abort_to) == 0) unpack(typename make_seq<sizeof...(A)>::type(), p, d, first, last);
        ql_tier1_abort = 0;
    }
};
// A fission kernel with warp functions (fission_warp.py): its generated
// code handles whole warps under the full mask; a block of another size
// runs the original kernel on fibers, which report what the mask names.
// Rows: the generated code guards warp-uniform branches on threadIdx.x
// (fission_guards.py), which are so only when each warp is part of one row
// of threads: blockDim.x a multiple of 32, or a single row.
template <class Gn, Gn G, class Fn, Fn F, bool Rows>
struct fission_warps {
    static void run(void **p, const ql_cpu_dims *d, uint64_t first, uint64_t last) {
        if ((d->block[0] * d->block[1] * d->block[2]) % 32u ||
            (Rows && d->block[0] % 32u && d->block[1] * d->block[2] != 1u))
            entry<Fn, F>::run_fibers(p, d, first, last);
        else
            fission<Gn, G>::run(p, d, first, last);
    }
};
#endif

#ifdef QL_SMALL_ENTRY
// An entry's `direct` function for the table, or NULL where it has none.
template <bool Ok, class E> struct direct_of {
    static constexpr ql_cpu_direct_fn fn = nullptr;
};
template <class E> struct direct_of<true, E> {
    static constexpr ql_cpu_direct_fn fn = &E::direct;
};
#endif

// A noexcept kernel: the same entry, through the plain function pointer type.
template <class... A, void (*F)(A...) noexcept>
struct entry<void (*)(A...) noexcept, F> : entry<void (*)(A...), F> {};

}  // namespace ql_export

#define QL_ENTRY(...) ::ql_export::entry<decltype(__VA_ARGS__), (__VA_ARGS__)>
// One row of the module's kernel table: the expression's text, the tier
// the compiler driver chose for this kernel (backends/cpu/tiers.py: 2 when
// the kernel reaches a barrier, a warp function or cooperative groups; only
// a QL_TIER2 build has fibers), then the kernel's address. Variadic: a name
// expression such as &scale<float, 5> holds commas.
#define QL_RUN_1 run
#define QL_RUN_2 run_fibers
#ifdef QL_SMALL_ENTRY   /* tier 1 has a small entry and a direct one; fibers never */
#define QL_SMALL_1(...) QL_ENTRY(__VA_ARGS__)::small_launch
#define QL_DIRECT_1(...) \
    ::ql_export::direct_of<(bool)QL_ENTRY(__VA_ARGS__)::direct_ok, QL_ENTRY(__VA_ARGS__)>::fn
#else
#define QL_SMALL_1(...) nullptr
#define QL_DIRECT_1(...) nullptr
#endif
#define QL_SMALL_2(...) nullptr
#define QL_DIRECT_2(...) nullptr
#define QL_KERNEL(name_text, tier, ...)                                        \
    {name_text, reinterpret_cast<void *>(__VA_ARGS__), QL_ENTRY(__VA_ARGS__)::QL_RUN_##tier, \
     (uint32_t)QL_ENTRY(__VA_ARGS__)::nparams, tier##u, QL_ENTRY(__VA_ARGS__)::params, \
     ::ql_export::fault<tier##u>, QL_SMALL_##tier(__VA_ARGS__), QL_DIRECT_##tier(__VA_ARGS__)},
// A fission row (tier 3 in the table): the kernel's reflection, the
// generated per-block function's entry (a ql_export::fission type).
#define QL_KERNEL_FISSION(name_text, fission_entry, ...)                       \
    {name_text, reinterpret_cast<void *>(__VA_ARGS__), fission_entry::run,       \
     (uint32_t)QL_ENTRY(__VA_ARGS__)::nparams, 3u, QL_ENTRY(__VA_ARGS__)::params, \
     ::ql_export::fault<3u>, nullptr, nullptr},
// The table around the rows, closed by a sentinel row, and the module's one
// export, __ql_module (see ql_cpu_abi.h).
#define QL_MODULE_BEGIN static const ql_cpu_kernel ql_kernel_table[] = {
#define QL_MODULE_END(count)                                                   \
    {0, 0, 0, 0, 0, 0, 0, 0, 0}};                                                    \
    extern "C" __attribute__((visibility("default")))                         \
    const ql_cpu_module __ql_module = {QL_CPU_ABI_VERSION, (count), ql_kernel_table};

#endif

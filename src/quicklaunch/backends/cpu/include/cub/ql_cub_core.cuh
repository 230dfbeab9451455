/* What quicklaunch's CUB stand-ins for the CPU device share: the namespace,
 * the reduction functors, thread and lane numbering, a shared-memory
 * storage type and the checks that turn CUB's undefined cases into a
 * LaunchError naming the primitive.
 *
 * The collectives (block/, warp/) are written for the CPU device's fibers
 * (tier 2; a kernel that names `cub` runs there): each thread writes its
 * items into the primitive's TempStorage (in __shared__ memory, passed by the
 * user as in CUB), one barrier (__syncthreads, or __syncwarp over the logical
 * warp's lanes), one thread computes the collective in a fixed order, and a
 * second barrier hands the results back. Integer results are exactly CUB's;
 * floating-point ones follow the order each header names, which is not
 * always the order CUB uses on a GPU (docs/cccl.md). Like CUB, a
 * primitive's TempStorage may be reused only after a __syncthreads (or
 * __syncwarp for the warp ones) following its last use. */
#ifndef QL_CUB_CORE_CUH
#define QL_CUB_CORE_CUH

#include "cuda_shim.h"

/* The collectives need the fiber tier's barriers, which a module gets when
 * its source names `cub` (tiers.py); a module that only includes the headers
 * gets the functors and types without the collectives. */
#if defined(QL_TIER2) || defined(QL_SCAN_KERNELS)
#define QL_CUB_COLLECTIVES 1
#endif

#define CUB_VERSION 300500
#define CUB_MAJOR_VERSION 3
#define CUB_MINOR_VERSION 5
#define CUB_SUBMINOR_VERSION 0
#define CUB_NAMESPACE_BEGIN namespace cub {
#define CUB_NAMESPACE_END }
#define CUB_NS_QUALIFIER ::cub
#define CUB_RUNTIME_FUNCTION
#define CUB_PTX_ARCH __CUDA_ARCH__
#define CUB_IS_DEVICE_CODE 1
#define CUB_IS_HOST_CODE 0
#define CUB_INCLUDE_DEVICE_CODE 1
#define CUB_STDERR
#ifndef CUB_MAX
#define CUB_MAX(a, b) (((b) > (a)) ? (b) : (a))
#define CUB_MIN(a, b) (((b) < (a)) ? (b) : (a))
#define CUB_QUOTIENT_CEILING(a, b) (((a) + (b)-1) / (b))
#define CUB_ROUND_UP_NEAREST(x, y) ((((x) + (y)-1) / (y)) * (y))
#endif
#define CUB_WARP_THREADS(unused) 32
#define CUB_LOG_WARP_THREADS(unused) 5

namespace cub {

/* The functors CUB 2.x has (CCCL 3 removed Sum, Max and Min in favour of
 * cuda::std::plus<> and cuda::maximum<>/cuda::minimum<>, which work too). */
struct Sum {
    template <class A, class B> auto operator()(const A &a, const B &b) const { return a + b; }
};
struct Max {
    template <class A, class B> auto operator()(const A &a, const B &b) const {
        return a < b ? b : a;
    }
};
struct Min {
    template <class A, class B> auto operator()(const A &a, const B &b) const {
        return b < a ? b : a;
    }
};
struct Equality {
    template <class A, class B> bool operator()(const A &a, const B &b) const { return a == b; }
};
struct Inequality {
    template <class A, class B> bool operator()(const A &a, const B &b) const { return a != b; }
};

struct NullType {};

/* CUB's key-value pair and the arg-reductions over it: the larger (smaller)
 * value, the smaller key among equal values. */
template <class K, class V> struct KeyValuePair {
    typedef K Key;
    typedef V Value;
    K key;
    V value;
    KeyValuePair() = default;
    KeyValuePair(const K &k, const V &v) : key(k), value(v) {}
    bool operator==(const KeyValuePair &b) const { return value == b.value && key == b.key; }
    bool operator!=(const KeyValuePair &b) const { return !(*this == b); }
};
struct ArgMax {
    template <class V, class K>
    KeyValuePair<K, V> operator()(const KeyValuePair<K, V> &a, const KeyValuePair<K, V> &b) const {
        return (b.value > a.value || (a.value == b.value && b.key < a.key)) ? b : a;
    }
};
struct ArgMin {
    template <class V, class K>
    KeyValuePair<K, V> operator()(const KeyValuePair<K, V> &a, const KeyValuePair<K, V> &b) const {
        return (b.value < a.value || (a.value == b.value && b.key < a.key)) ? b : a;
    }
};

/* CUB's Uninitialized<T>: raw, suitably aligned storage for T, so a
 * __shared__ TempStorage has no constructor to run. */
template <class T> struct Uninitialized {
    alignas(T) unsigned char storage[sizeof(T)];
    T &Alias() { return *reinterpret_cast<T *>(storage); }
};

QL_FN unsigned int ql_cub_linear_tid(void) {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}
/* The hardware lane and warp of the calling thread (CUB's LaneId, WarpId). */
QL_FN unsigned int LaneId(void) { return ql_cub_linear_tid() & 31u; }
QL_FN unsigned int WarpId(void) { return ql_cub_linear_tid() >> 5; }
#ifdef QL_CUB_COLLECTIVES
QL_FN void CTA_SYNC(void) { __syncthreads(); }
QL_FN void WARP_SYNC(unsigned mask) { __syncwarp(mask); }
#endif

namespace detail {

constexpr int warp_threads = 32;

/* The serial part of a collective, which one thread runs, and the checks:
 * out of line and at -O1 (a call costs nothing next to the barriers around
 * it; inlined and vectorised into every kernel they made each instantiation
 * slower to compile). */
#if defined(__clang__) || !defined(__OPTIMIZE__)   /* clang has no optimize(); -O0 stays -O0 */
#define QL_CUB_OUTLINE __attribute__((noinline))
#else
#define QL_CUB_OUTLINE __attribute__((noinline, optimize("O1")))
#endif

/* CUB's row-major thread rank for a block of DX x DY x DZ threads. */
template <int DX, int DY, int DZ> QL_FN int block_tid(void) {
    return (DZ == 1 ? 0 : (int)threadIdx.z * DX * DY) + (DY == 1 ? 0 : (int)threadIdx.y * DX) +
           (int)threadIdx.x;
}

/* A block collective of `threads` threads is undefined in CUB when the
 * launch has another number of threads (the extra ones race on the storage,
 * the missing ones leave it unwritten, or the barrier deadlocks): here it is
 * a LaunchError naming the primitive. */
QL_CUB_OUTLINE static void check_block(const char *what, int threads) {
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    if (n != (unsigned)threads) {
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "%s in block (%u, %u, %u), thread (%u, %u, %u): the primitive is declared "
                  "for %d threads but the block has %u (undefined in CUB); make its block "
                  "dimensions the launch's block size",
                  what, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
                  threadIdx.z, threads, n);
        ql_abort_thread();
    }
}

/* A logical warp of L threads: hardware warp w = linear / 32, and within it
 * lanes [k*L, k*L + L) form logical warp k (CUB's layout). */
template <int L> struct logical_warp {
    static_assert(L >= 1 && L <= 32, "LogicalWarpThreads must be in the range [1, 32]");
    unsigned lane;      // rank within the logical warp
    unsigned first;     // hardware lane of its rank 0
    unsigned count;     // threads of the logical warp that exist in the block
    unsigned mask;      // their hardware lanes
    QL_FN logical_warp here(void) {
        logical_warp w;
        const unsigned linear = ql_cub_linear_tid();
        const unsigned hw_lane = linear & 31u;
        const unsigned warp_base = linear - hw_lane;
        const unsigned block = blockDim.x * blockDim.y * blockDim.z;
        const unsigned in_warp = block - warp_base < 32u ? block - warp_base : 32u;
        w.lane = hw_lane % (unsigned)L;
        w.first = hw_lane - w.lane;
        unsigned end = w.first + (unsigned)L;
        if (end > in_warp) end = in_warp;
        w.count = end - w.first;
        const unsigned long long bits = ((1ull << w.count) - 1ull) << w.first;
        w.mask = (unsigned)bits;
        return w;
    }
};


/* The value type an iterator reads (a pointer's pointee without const). */
template <class It> struct value_of {
    typedef typename It::value_type type;
    static constexpr bool pointer = false;
};
template <class T> struct value_of<T *> {
    typedef T type;
    static constexpr bool pointer = true;
};
template <class T> struct value_of<const T *> {
    typedef T type;
    static constexpr bool pointer = true;
};

/* CUB's row-major rank at run time. */
}  // namespace detail
QL_FN int RowMajorTid(int block_dim_x, int block_dim_y, int block_dim_z) {
    return (block_dim_z == 1 ? 0 : (int)threadIdx.z * block_dim_x * block_dim_y) +
           (block_dim_y == 1 ? 0 : (int)threadIdx.y * block_dim_x) + (int)threadIdx.x;
}
namespace detail {

/* The tree order of CUB's shuffle reductions: at step s, rank i (a multiple
 * of 2s) takes rank i + s when that rank is valid. v[0] ends as the total. */
template <class T, class Op> QL_CUB_OUTLINE static T tree_reduce(T *v, int n, Op op) {
    for (int s = 1; s < n; s *= 2)
        for (int i = 0; i + s < n; i += 2 * s) v[i] = op(v[i], v[i + s]);
    return v[0];
}

}  // namespace detail
}  // namespace cub

#endif /* QL_CUB_CORE_CUH */

/* cooperative_groups for the quicklaunch CPU device: the grid (for
 * cooperative launches), the thread block and its tiles, over the shim's
 * barrier and warp functions and the fiber scheduler (tier 2).
 * coalesced_threads() is not provided: the compiler driver refuses modules
 * that use it with a CompileError. */
#ifndef QL_COOPERATIVE_GROUPS_H
#define QL_COOPERATIVE_GROUPS_H

#include "cuda_shim.h"

namespace cooperative_groups {

QL_FN unsigned ql_linear_thread(void) {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}

class thread_block {
  public:
    void sync() const { __syncthreads(); }
    unsigned thread_rank() const { return ql_linear_thread(); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};

QL_FN thread_block this_thread_block(void) { return thread_block(); }

/* The whole grid, as CUDA's grid_group. sync() needs a cooperative launch
 * (k.configure(grid, block, cooperative=True)): the CPU runtime then runs
 * every block at once, each on a thread of its own (ql_fibers.h's
 * grid_barrier); is_valid() says whether this launch was one. */
class grid_group {
  public:
    void sync() const { ql_fiber::grid_barrier(); }
    bool is_valid() const { return ql_launch_dims && ql_launch_dims->grid_sync; }
    unsigned long long num_blocks() const {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z;
    }
    unsigned long long block_rank() const {
        return ((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    }
    unsigned long long num_threads() const {
        return num_blocks() * (blockDim.x * blockDim.y * blockDim.z);
    }
    unsigned long long size() const { return num_threads(); }
    unsigned long long thread_rank() const {
        return block_rank() * (blockDim.x * blockDim.y * blockDim.z) + ql_linear_thread();
    }
    dim3 dim_blocks() const { return gridDim; }
    dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    dim3 group_dim() const { return gridDim; }
};

QL_FN grid_group this_grid(void) { return grid_group(); }

/* A tile shuffle of any trivially copyable type, as CUDA's tiles allow:
 * values of up to 8 bytes move in one warp shuffle, larger ones in 8-byte
 * pieces, each piece its own shuffle with the same mask and source (every
 * lane of the tile makes the same sequence, so the pieces stay together). */
template <class T, class Shfl> QL_FN T ql_tile_move(const T &v, Shfl shfl) {
    static_assert(__is_trivially_copyable(T),
                  "tile shuffles move trivially copyable types only (as in CUDA)");
    if constexpr (sizeof(T) <= 8) {
        return ql_fiber::from_bits<T>(shfl(ql_fiber::bits(v)));
    } else {
        unsigned char in[sizeof(T)], out[sizeof(T)];
        memcpy(in, &v, sizeof(T));
        for (size_t off = 0; off < sizeof(T); off += 8) {
            const size_t n = sizeof(T) - off < 8 ? sizeof(T) - off : 8;
            uint64_t piece = 0;
            memcpy(&piece, in + off, n);
            piece = shfl(piece);
            memcpy(out + off, &piece, n);
        }
        T r;
        memcpy(&r, out, sizeof(T));
        return r;
    }
}

/* Memory for tiles of more than 32 threads, as CUDA's: a __shared__ object
 * passed to this_thread_block(). On a GPU before sm_80 the tiles exchange
 * values through it; the CPU device needs none (a multi-warp tile's threads
 * are fibers of one worker), so it only checks that the block fits. */
template <unsigned MaxBlockSize = 1024> struct block_tile_memory {
    static_assert(MaxBlockSize >= 1 && MaxBlockSize <= 1024,
                  "block_tile_memory<MaxBlockSize>: at most 1024 threads a block");
    unsigned char reserved[8];
};

template <unsigned M> QL_FN thread_block this_thread_block(block_tile_memory<M> &) {
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    if (n > M) {
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "this_thread_block(block_tile_memory<%u>) in block (%u, %u, %u), thread "
                  "(%u, %u, %u): the block has %u threads, more than the memory's "
                  "MaxBlockSize %u (undefined on a GPU); declare block_tile_memory<%u> or more",
                  M, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
                  threadIdx.z, n, M, n);
        ql_abort_thread();
    }
    return thread_block();
}

template <unsigned N, class ParentT = void> class thread_block_tile;

/* A tile of N threads (a power of two up to 1024) of a block, as CUDA's.
 * Up to 32 threads it is a piece of one warp, over the warp functions; from
 * 64 it spans whole warps, over the scheduler's tile barrier (ql_fibers.h),
 * and has what CUDA gives such tiles: sync, ranks and sizes, shfl (every
 * thread names the same src_rank, as CUDA requires, else a LaunchError),
 * any, all, and reduce and the scans below, on types of at most 8 bytes;
 * shfl_up/down/xor, ballot and match_* are for tiles of at most 32 threads,
 * in CUDA and here (a static_assert). */
template <unsigned N>
class thread_block_tile<N, void> {
    static_assert(N >= 1 && N <= 1024 && (N & (N - 1)) == 0,
                  "tiled_partition<N>: N must be a power of two from 1 to 1024");
    static constexpr bool multi = N > 32;
    static unsigned lane() { return ql_linear_thread() & 31u; }
    static unsigned first() { return multi ? 0u : lane() & ~(N - 1); }

  protected:
    unsigned parent_;   /* threads of the group it was partitioned from */

  public:
    explicit thread_block_tile(unsigned parent = 0) : parent_(parent) {}

    /* This tile's lanes within the warp, less any past the end of the block
     * (a block whose size is not a multiple of the tile ends in a short one). */
    static unsigned mask() {
        const unsigned tile = N >= 32 ? 0xffffffffu : ((1u << N) - 1u) << first();
        const unsigned left = blockDim.x * blockDim.y * blockDim.z - (ql_linear_thread() & ~31u);
        return left >= 32 ? tile : tile & ((1u << left) - 1u);
    }
    void sync() const {
        if constexpr (multi) ql_fiber::tile_barrier(N, ql_fiber::BAR_PLAIN, 0);
        else __syncwarp(mask());
    }
    unsigned thread_rank() const { return ql_linear_thread() & (N - 1); }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const {
        const unsigned t = ql_linear_thread();
        return (parent_ ? t % parent_ : t) / N;
    }
    unsigned meta_group_size() const {
        const unsigned p = parent_ ? parent_ : blockDim.x * blockDim.y * blockDim.z;
        return (p + N - 1) / N;
    }
    template <class T> T shfl(T v, int src) const {
        if constexpr (multi) {
            static_assert(sizeof(T) <= 8, "thread_block_tile::shfl: tiles of more than 32 "
                                          "threads move types of at most 8 bytes (as in CUDA)");
            return ql_tile_move(v, [&](uint64_t b) {
                return ql_fiber::tile_shfl(N, b, (unsigned)src);
            });
        } else {
            const unsigned m = mask();
            return ql_tile_move(v, [&](uint64_t b) { return __shfl_sync(m, b, src, N); });
        }
    }
    template <class T> T shfl_down(T v, unsigned d) const {
        static_assert(!multi, "thread_block_tile::shfl_down: tiles of at most 32 threads "
                              "(as in CUDA)");
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_down_sync(m, b, d, N); });
    }
    template <class T> T shfl_up(T v, unsigned d) const {
        static_assert(!multi, "thread_block_tile::shfl_up: tiles of at most 32 threads "
                              "(as in CUDA)");
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_up_sync(m, b, d, N); });
    }
    template <class T> T shfl_xor(T v, int lm) const {
        static_assert(!multi, "thread_block_tile::shfl_xor: tiles of at most 32 threads "
                              "(as in CUDA)");
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_xor_sync(m, b, lm, N); });
    }
    int any(int p) const {
        if constexpr (multi) return ql_fiber::tile_barrier(N, ql_fiber::BAR_OR, p != 0);
        else return __any_sync(mask(), p);
    }
    int all(int p) const {
        if constexpr (multi) return ql_fiber::tile_barrier(N, ql_fiber::BAR_AND, p != 0);
        else return __all_sync(mask(), p);
    }
    /* Bit i is the tile's thread of rank i. */
    unsigned ballot(int p) const {
        static_assert(!multi, "thread_block_tile::ballot: tiles of at most 32 threads "
                              "(as in CUDA)");
        return __ballot_sync(mask(), p) >> first();
    }
    template <class T> unsigned match_any(T v) const {
        static_assert(!multi, "thread_block_tile::match_any: tiles of at most 32 threads "
                              "(as in CUDA)");
        return __match_any_sync(mask(), v) >> first();
    }
    template <class T> unsigned match_all(T v, int &pred) const {
        static_assert(!multi, "thread_block_tile::match_all: tiles of at most 32 threads "
                              "(as in CUDA)");
        return __match_all_sync(mask(), v, &pred) >> first();
    }
};

/* The typed form tiled_partition<N>(parent) names in CUDA; it converts to
 * (and is used as) thread_block_tile<N>. */
template <unsigned N, class ParentT>
class thread_block_tile : public thread_block_tile<N, void> {
  public:
    explicit thread_block_tile(unsigned parent = 0) : thread_block_tile<N, void>(parent) {}
};

template <class G> struct ql_group_threads {
    static unsigned of(const G &) { return blockDim.x * blockDim.y * blockDim.z; }
};
template <unsigned M, class P> struct ql_group_threads<thread_block_tile<M, P>> {
    static unsigned of(const thread_block_tile<M, P> &) { return M; }
};

template <unsigned N, class Parent>
QL_FN thread_block_tile<N, Parent> tiled_partition(const Parent &parent) {
    const unsigned p = ql_group_threads<Parent>::of(parent);
    if (N > 32 && p % N) {
        /* CUDA: the parent's size must be a multiple of the tile's; a block
         * of 96 threads has no second tile of 64 (undefined on a GPU). */
        ql_report(QL_CPU_ERROR_LAUNCH_FAILED,
                  "tiled_partition<%u> in block (%u, %u, %u), thread (%u, %u, %u): the "
                  "parent group has %u threads, not a multiple of %u; CUDA requires the "
                  "parent's size to be evenly divisible by the tile size (use a block of a "
                  "multiple of %u threads)", N, blockIdx.x, blockIdx.y, blockIdx.z,
                  threadIdx.x, threadIdx.y, threadIdx.z, p, N, N);
        ql_abort_thread();
    }
    return thread_block_tile<N, Parent>(__is_same(Parent, thread_block) ? 0u : p);
}

template <class Group> QL_FN void sync(const Group &g) { g.sync(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

/* The value of rank k * Stride + Offset of a multi-warp tile, for every k,
 * to every thread of the tile (T in 8-byte words, each word one gather). */
template <unsigned N, unsigned Stride, class T>
QL_FN void ql_tile_gather(T v, unsigned offset, T *out) {
    static_assert(__is_trivially_copyable(T),
                  "tile collectives move trivially copyable types only (as in CUDA)");
    static_assert(sizeof(T) <= 8, "collectives of tiles of more than 32 threads (reduce, "
                                  "inclusive_scan, exclusive_scan) take types of at most 8 "
                                  "bytes (as in CUDA)");
    constexpr unsigned K = N / Stride;
    unsigned char in[sizeof(T)];
    memcpy(in, &v, sizeof(T));
    for (size_t off = 0; off < sizeof(T); off += 8) {
        const size_t n = sizeof(T) - off < 8 ? sizeof(T) - off : 8;
        uint64_t piece = 0, got[K];
        memcpy(&piece, in + off, n);
        ql_fiber::tile_gather(N, piece, Stride, offset, got);
        for (unsigned k = 0; k < K; ++k) memcpy((unsigned char *)&out[k] + off, &got[k], n);
    }
}

/* Every thread of the tile gets op over all of the tile's values. A
 * multi-warp tile reduces each warp, then combines the warps' results in
 * rank order. */
template <unsigned N, class P, class T, class Op>
QL_FN T reduce(const thread_block_tile<N, P> &g, T v, Op op) {
    if constexpr (N > 32) {
        const thread_block_tile<32> warp(N);
        v = reduce(warp, v, op);
        T parts[N / 32];
        ql_tile_gather<N, 32>(v, 0, parts);
        T r = parts[0];
        for (unsigned k = 1; k < N / 32; ++k) r = op(r, parts[k]);
        return r;
    } else {
        for (unsigned offset = N / 2; offset > 0; offset /= 2) v = op(v, g.shfl_xor(v, offset));
        return v;
    }
}

/* Thread of rank r gets op over ranks 0..r (inclusive_scan) or 0..r-1
 * (exclusive_scan; rank 0 gets T(), which CUDA leaves unspecified for ops
 * other than plus). */
template <unsigned N, class P, class T, class Op>
QL_FN T inclusive_scan(const thread_block_tile<N, P> &g, T v, Op op) {
    if constexpr (N > 32) {
        const thread_block_tile<32> warp(N);
        v = inclusive_scan(warp, v, op);
        T totals[N / 32];
        ql_tile_gather<N, 32>(v, 31, totals);
        const unsigned w = g.thread_rank() / 32;
        if (w == 0) return v;
        T prefix = totals[0];
        for (unsigned k = 1; k < w; ++k) prefix = op(prefix, totals[k]);
        return op(prefix, v);
    } else {
        const unsigned r = g.thread_rank();
        for (unsigned d = 1; d < N; d *= 2) {
            const T o = g.shfl_up(v, d);
            if (r >= d) v = op(o, v);
        }
        return v;
    }
}
template <unsigned N, class P, class T>
QL_FN T inclusive_scan(const thread_block_tile<N, P> &g, T v) {
    return inclusive_scan(g, v, plus<T>());
}
template <unsigned N, class P, class T, class Op>
QL_FN T exclusive_scan(const thread_block_tile<N, P> &g, T v, Op op) {
    const T inc = inclusive_scan(g, v, op);
    /* The inclusive result of the rank before. */
    const unsigned r = g.thread_rank();
    T prev;
    if constexpr (N > 32) {
        const thread_block_tile<32> warp(N);
        prev = warp.shfl_up(inc, 1);
        T totals[N / 32];
        ql_tile_gather<N, 32>(inc, 31, totals);
        if (r % 32 == 0 && r) prev = totals[r / 32 - 1];
    } else {
        prev = g.shfl_up(inc, 1);
    }
    return r ? prev : T();
}
template <unsigned N, class P, class T>
QL_FN T exclusive_scan(const thread_block_tile<N, P> &g, T v) {
    return exclusive_scan(g, v, plus<T>());
}

}  // namespace cooperative_groups

#endif

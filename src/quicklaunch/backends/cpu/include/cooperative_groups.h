/* cooperative_groups for the quicklaunch CPU device: the thread block and
 * its warp-sized tiles, over the shim's barrier and warp functions (tier 2).
 * this_grid() and coalesced_threads() are not provided: the compiler driver
 * refuses modules that use them with a CompileError. */
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

template <unsigned N>
class thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "tiled_partition<N>: N must be a power of two from 1 to 32");
    static unsigned lane() { return ql_linear_thread() & 31u; }
    static unsigned first() { return lane() & ~(N - 1); }

  public:
    /* This tile's lanes within the warp, less any past the end of the block
     * (a block whose size is not a multiple of the tile ends in a short one). */
    static unsigned mask() {
        const unsigned tile = N == 32 ? 0xffffffffu : ((1u << N) - 1u) << first();
        const unsigned left = blockDim.x * blockDim.y * blockDim.z - (ql_linear_thread() & ~31u);
        return left >= 32 ? tile : tile & ((1u << left) - 1u);
    }
    void sync() const { __syncwarp(mask()); }
    unsigned thread_rank() const { return ql_linear_thread() & (N - 1); }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return ql_linear_thread() / N; }
    unsigned meta_group_size() const {
        return (blockDim.x * blockDim.y * blockDim.z + N - 1) / N;
    }
    template <class T> T shfl(T v, int src) const {
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_sync(m, b, src, N); });
    }
    template <class T> T shfl_down(T v, unsigned d) const {
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_down_sync(m, b, d, N); });
    }
    template <class T> T shfl_up(T v, unsigned d) const {
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_up_sync(m, b, d, N); });
    }
    template <class T> T shfl_xor(T v, int lm) const {
        const unsigned m = mask();
        return ql_tile_move(v, [&](uint64_t b) { return __shfl_xor_sync(m, b, lm, N); });
    }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
    /* Bit i is the tile's thread of rank i. */
    unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> first(); }
    template <class T> unsigned match_any(T v) const {
        return __match_any_sync(mask(), v) >> first();
    }
    template <class T> unsigned match_all(T v, int &pred) const {
        return __match_all_sync(mask(), v, &pred) >> first();
    }
};

template <unsigned N, class Parent>
QL_FN thread_block_tile<N> tiled_partition(const Parent &) { return thread_block_tile<N>(); }

template <class Group> QL_FN void sync(const Group &g) { g.sync(); }

template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };

/* Every thread of the tile gets op over all of the tile's values. */
template <unsigned N, class T, class Op>
QL_FN T reduce(const thread_block_tile<N> &g, T v, Op op) {
    for (unsigned offset = N / 2; offset > 0; offset /= 2) v = op(v, g.shfl_xor(v, offset));
    return v;
}

}  // namespace cooperative_groups

#endif

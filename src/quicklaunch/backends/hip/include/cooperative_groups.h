/* cooperative_groups for hiprtc (quicklaunch.hip): the thread block and its
 * tiles of 1 to 32 threads (and of 64 on a wave64 GPU), over the warp
 * functions of ql_hip_warp.h. A tile lies inside one wavefront, as a CUDA
 * tile lies inside one warp; its ballot has bit i for the tile's thread of
 * rank i, so it fits 32 bits for tiles of up to 32 on every GPU.
 *
 * this_grid() compiles, but grid.sync() is refused at compile time: it
 * needs a cooperative launch (hipModuleLaunchCooperativeKernel), which
 * quicklaunch does not make. coalesced_threads() is not provided. */
#ifndef QL_HIP_COOPERATIVE_GROUPS_H
#define QL_HIP_COOPERATIVE_GROUPS_H

namespace cooperative_groups {

__device__ inline unsigned ql_linear_thread() {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
}
__device__ inline unsigned ql_block_size() { return blockDim.x * blockDim.y * blockDim.z; }

class thread_block {
  public:
    __device__ void sync() const { __syncthreads(); }
    __device__ unsigned thread_rank() const { return ql_linear_thread(); }
    __device__ unsigned size() const { return ql_block_size(); }
    __device__ unsigned num_threads() const { return ql_block_size(); }
    __device__ dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    __device__ dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    __device__ dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
    __device__ dim3 dim_threads() const { return group_dim(); }
};
__device__ inline thread_block this_thread_block() { return thread_block(); }

template <class QlT> struct ql_false { enum { value = 0 }; };

class grid_group {
  public:
    __device__ unsigned long long thread_rank() const {
        const unsigned long long b = (blockIdx.z * (unsigned long long)gridDim.y + blockIdx.y)
                                     * gridDim.x + blockIdx.x;
        return b * ql_block_size() + ql_linear_thread();
    }
    __device__ unsigned long long size() const {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * ql_block_size();
    }
    __device__ unsigned long long num_threads() const { return size(); }
    template <class QlT = void> __device__ void sync() const {
        static_assert(ql_false<QlT>::value,
                      "quicklaunch HIP: grid_group::sync() needs a cooperative launch, which "
                      "quicklaunch does not make; split the kernel at the grid barrier");
    }
    __device__ bool is_valid() const { return false; }
};
__device__ inline grid_group this_grid() { return grid_group(); }

template <unsigned N>
class thread_block_tile {
    static_assert(N >= 1 && N <= QL_HIP_WAVE && (N & (N - 1)) == 0,
                  "tiled_partition<N>: N must be a power of two from 1 to 32 (to 64 on a wave64 GPU)");
    __device__ static unsigned first() { return __lane_id() & ~(N - 1); }
    /* This tile's lanes of the wavefront that exist (a block whose size is
     * not a multiple of N ends in a short tile; its missing lanes are idle). */
    __device__ static unsigned long long lanes() {
        return ql_hip::tile_lanes(__lane_id(), N) & ql_hip::ballot(1);
    }
    typedef typename ql_hip::tile_mask<N>::type mask_type;

  public:
    __device__ void sync() const { ql_hip::syncwarp(); }
    __device__ unsigned thread_rank() const { return ql_linear_thread() & (N - 1); }
    __host__ __device__ static constexpr unsigned size() { return N; }
    __host__ __device__ static constexpr unsigned num_threads() { return N; }
    __device__ unsigned meta_group_rank() const { return ql_linear_thread() / N; }
    __device__ unsigned meta_group_size() const { return (ql_block_size() + N - 1) / N; }
    template <class T> __device__ T shfl(T v, int src) const {
        return ql_hip::permute(v, ql_hip::shfl_src(0, __lane_id(), (unsigned)src, N));
    }
    template <class T> __device__ T shfl_up(T v, unsigned d) const {
        return ql_hip::permute(v, ql_hip::shfl_src(1, __lane_id(), d, N));
    }
    template <class T> __device__ T shfl_down(T v, unsigned d) const {
        return ql_hip::permute(v, ql_hip::shfl_src(2, __lane_id(), d, N));
    }
    template <class T> __device__ T shfl_xor(T v, int m) const {
        return ql_hip::permute(v, ql_hip::shfl_src(3, __lane_id(), (unsigned)m, N));
    }
    __device__ int any(int p) const { return (ql_hip::ballot(p) & lanes()) != 0; }
    __device__ int all(int p) const { return (ql_hip::ballot(p) & lanes()) == lanes(); }
    /* Bit i: the tile's thread of rank i. */
    __device__ mask_type ballot(int p) const {
        return (mask_type)((ql_hip::ballot(p) & lanes()) >> first());
    }
    template <class T> __device__ mask_type match_any(T v) const {
        return (mask_type)(ql_hip::u64(ql_hip::match_any_sync(lanes(), v)) >> first());
    }
    template <class T> __device__ mask_type match_all(T v, int &pred) const {
        return (mask_type)(ql_hip::u64(ql_hip::match_all_sync(lanes(), v, &pred)) >> first());
    }
};

template <unsigned N, class Parent>
__device__ inline thread_block_tile<N> tiled_partition(const Parent &) {
    return thread_block_tile<N>();
}

template <class Group> __device__ inline void sync(const Group &g) { g.sync(); }

template <class T> struct plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const { return a ^ b; } };

/* Every thread of the tile gets op over all of the tile's values. */
template <unsigned N, class T, class Op>
__device__ inline T reduce(const thread_block_tile<N> &g, T v, Op op) {
    for (unsigned offset = N / 2; offset > 0; offset /= 2) v = op(v, g.shfl_xor(v, offset));
    return v;
}

}  // namespace cooperative_groups

#endif

/* cub::BlockReduce for the quicklaunch CPU device (see ../ql_cub_core.cuh).
 *
 * The block's threads write their partials (each thread's items folded left
 * to right first) into TempStorage, one __syncthreads, and thread 0 combines
 * them; the result is valid in thread 0 only, as in CUB (the others get
 * their own partial back). Order, for floating point:
 *   BLOCK_REDUCE_WARP_REDUCTIONS: each warp of 32 as CUB's shuffle tree
 *     (rank i takes rank i + s for s = 1, 2, 4, 8, 16), then the warps'
 *     totals left to right;
 *   BLOCK_REDUCE_RAKING, BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY: the partials
 *     cut into 32 segments of ceil(threads / 32), each folded left to right,
 *     the segments' totals as the tree above (a block of at most 32 threads:
 *     the tree alone).
 * With num_valid, only the first num_valid threads' inputs count. */
#ifndef QL_CUB_BLOCK_REDUCE_CUH
#define QL_CUB_BLOCK_REDUCE_CUH

#include "../ql_cub_core.cuh"

namespace cub {

enum BlockReduceAlgorithm {
    BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
    BLOCK_REDUCE_RAKING,
    BLOCK_REDUCE_WARP_REDUCTIONS,
};

#ifdef QL_CUB_COLLECTIVES
/* The sixth parameter is CUB 2.x's LEGACY_PTX_ARCH, accepted and ignored. */
template <class T, int BlockDimX, BlockReduceAlgorithm Algorithm = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BlockDimY = 1, int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockReduce {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static_assert(BLOCK_THREADS >= 1 && BLOCK_THREADS <= 1024,
                  "cub::BlockReduce: a block has 1 to 1024 threads");
    struct _TempStorage {
        T partial[BLOCK_THREADS];
    };

  public:
    using TempStorage = Uninitialized<_TempStorage>;

  private:
    _TempStorage &storage;
    int tid;

    static _TempStorage &private_storage() {
        __shared__ TempStorage shared;
        return shared.Alias();
    }

    template <class Op> QL_CUB_OUTLINE static T combine(T *v, int valid, Op op) {
        if (Algorithm == BLOCK_REDUCE_WARP_REDUCTIONS) {
            T total = detail::tree_reduce(v, valid < 32 ? valid : 32, op);
            for (int w = 32; w < valid; w += 32) {
                const int n = valid - w < 32 ? valid - w : 32;
                total = op(total, detail::tree_reduce(v + w, n, op));
            }
            return total;
        }
        if (BLOCK_THREADS <= 32) return detail::tree_reduce(v, valid, op);
        constexpr int seg = (BLOCK_THREADS + 31) / 32;
        const int segments = (valid + seg - 1) / seg;
        for (int r = 0; r < segments; r++) {
            const int end = (r + 1) * seg < valid ? (r + 1) * seg : valid;
            T acc = v[r * seg];
            for (int i = r * seg + 1; i < end; i++) acc = op(acc, v[i]);
            v[r] = acc;
        }
        return detail::tree_reduce(v, segments, op);
    }

    template <class Op> T reduce(T partial, Op op, int valid) {
        detail::check_block("cub::BlockReduce", BLOCK_THREADS);
        storage.partial[tid] = partial;
        __syncthreads();
        if (tid == 0 && valid > 0)
            return combine(storage.partial, valid < BLOCK_THREADS ? valid : BLOCK_THREADS, op);
        return partial;
    }

    template <int N, class Op> static T fold(T (&inputs)[N], Op op) {
        T acc = inputs[0];
        for (int i = 1; i < N; i++) acc = op(acc, inputs[i]);
        return acc;
    }

  public:
    BlockReduce() : storage(private_storage()),
                    tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockReduce(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <class ReductionOp> T Reduce(T input, ReductionOp reduction_op) {
        return reduce(input, reduction_op, BLOCK_THREADS);
    }
    template <int ITEMS_PER_THREAD, class ReductionOp>
    T Reduce(T (&inputs)[ITEMS_PER_THREAD], ReductionOp reduction_op) {
        return reduce(fold(inputs, reduction_op), reduction_op, BLOCK_THREADS);
    }
    template <class ReductionOp> T Reduce(T input, ReductionOp reduction_op, int num_valid) {
        return reduce(input, reduction_op, num_valid);
    }
    T Sum(T input) { return reduce(input, Sum_(), BLOCK_THREADS); }
    template <int ITEMS_PER_THREAD> T Sum(T (&inputs)[ITEMS_PER_THREAD]) {
        return reduce(fold(inputs, Sum_()), Sum_(), BLOCK_THREADS);
    }
    T Sum(T input, int num_valid) { return reduce(input, Sum_(), num_valid); }

    /* Region fission (backends/cpu/fission_cub.py) runs reduce() as its two
     * halves, one thread loop before the barrier and one after it: begin
     * checks the block and stores the thread's partial, end combines in
     * thread 0 (Sum without an operator). */
    static constexpr int ql_fission_threads = BLOCK_THREADS;
    static int ql_fission_begin(TempStorage &temp, T partial) {
        detail::check_block("cub::BlockReduce", BLOCK_THREADS);
        const int tid = detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>();
        temp.Alias().partial[tid] = partial;
        return tid;
    }
    template <class Op>
    static T ql_fission_end(TempStorage &temp, int tid, T partial, int valid, Op op) {
        if (tid != 0 || valid <= 0) return partial;
        return combine(temp.Alias().partial, valid < BLOCK_THREADS ? valid : BLOCK_THREADS, op);
    }
    static T ql_fission_end(TempStorage &temp, int tid, T partial, int valid) {
        return ql_fission_end(temp, tid, partial, valid, Sum_());
    }

  private:
    struct Sum_ {
        T operator()(const T &a, const T &b) const { return a + b; }
    };
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_REDUCE_CUH */

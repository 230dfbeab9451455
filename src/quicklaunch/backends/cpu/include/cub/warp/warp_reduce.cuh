/* cub::WarpReduce for the quicklaunch CPU device (see ../ql_cub_core.cuh).
 *
 * A logical warp of LogicalWarpThreads (1 to 32) is CUB's: lanes
 * [k*L, k*L + L) of a hardware warp; in a block whose last warp is partial
 * its lanes are the threads that exist. Each lane writes its input to
 * TempStorage, a __syncwarp over the logical warp's lanes, lane 0 combines
 * them in the order of CUB's shuffle tree (rank i takes rank i + s for
 * s = 1, 2, 4, ...), and a second __syncwarp lets the storage be used again
 * at once (CUB's shuffle reductions do not touch it). The result is valid in
 * lane 0 of each logical warp, as in CUB (the other lanes get their input). */
#ifndef QL_CUB_WARP_REDUCE_CUH
#define QL_CUB_WARP_REDUCE_CUH

#include "../ql_cub_core.cuh"

namespace cub {

#ifdef QL_CUB_COLLECTIVES
template <class T, int LogicalWarpThreads = detail::warp_threads, int LegacyPtxArch = 0>
class WarpReduce {
    static_assert(LogicalWarpThreads >= 1 && LogicalWarpThreads <= 32,
                  "LogicalWarpThreads must be in the range [1, 32]");
    struct _TempStorage {
        T item[LogicalWarpThreads];
    };

  public:
    using TempStorage = Uninitialized<_TempStorage>;

  private:
    _TempStorage &storage;
    struct Sum_ {
        T operator()(const T &a, const T &b) const { return a + b; }
    };

    template <class Op> T reduce(T input, Op op, int valid) {
        const detail::logical_warp<LogicalWarpThreads> w =
            detail::logical_warp<LogicalWarpThreads>::here();
        storage.item[w.lane] = input;
        __syncwarp(w.mask);
        T out = input;
        const int n = valid < (int)w.count ? valid : (int)w.count;
        if (w.lane == 0 && n > 0) out = detail::tree_reduce(storage.item, n, op);
        __syncwarp(w.mask);
        return out;
    }
    template <int N, class Op> static T fold(const T (&in)[N], Op op) {
        T acc = in[0];
        for (int i = 1; i < N; i++) acc = op(acc, in[i]);
        return acc;
    }

  public:
    WarpReduce(TempStorage &temp_storage) : storage(temp_storage.Alias()) {}

    T Sum(T input) { return reduce(input, Sum_(), LogicalWarpThreads); }
    template <int N> T Sum(const T (&input)[N]) {
        return reduce(fold(input, Sum_()), Sum_(), LogicalWarpThreads);
    }
    T Sum(T input, int valid_items) { return reduce(input, Sum_(), valid_items); }
    template <class ReductionOp> T Reduce(T input, ReductionOp op) {
        return reduce(input, op, LogicalWarpThreads);
    }
    template <int N, class ReductionOp> T Reduce(const T (&input)[N], ReductionOp op) {
        return reduce(fold(input, op), op, LogicalWarpThreads);
    }
    template <class ReductionOp> T Reduce(T input, ReductionOp op, int valid_items) {
        return reduce(input, op, valid_items);
    }
    T Max(T input) { return Reduce(input, cub::Max()); }
    T Min(T input) { return Reduce(input, cub::Min()); }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_WARP_REDUCE_CUH */

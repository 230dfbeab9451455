/* cub::WarpScan for the quicklaunch CPU device (see ../ql_cub_core.cuh and
 * warp_reduce.cuh for the logical warps).
 *
 * Each lane writes its input to TempStorage, a __syncwarp, lane 0 scans in
 * the order of CUB's shuffle scan (Kogge-Stone: for s = 1, 2, 4, ... each
 * rank i >= s takes rank i - s), a __syncwarp, each lane reads its result,
 * and a last __syncwarp lets the storage be used again at once. Without an
 * initial value, lane 0's exclusive output is left as it was (undefined in
 * CUB). With an initial value the aggregate is that of the inputs alone. */
#ifndef QL_CUB_WARP_SCAN_CUH
#define QL_CUB_WARP_SCAN_CUH

#include "../ql_cub_core.cuh"

namespace cub {

#ifdef QL_CUB_COLLECTIVES
template <class T, int LogicalWarpThreads = detail::warp_threads, int LegacyPtxArch = 0>
class WarpScan {
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

    /* The lane's inclusive result, its exclusive one (*has_before: whether
     * there is one) and the aggregate. */
    template <class Op>
    void scan(T input, Op op, T *inclusive, T *before, bool *has_before, T *aggregate) {
        const detail::logical_warp<LogicalWarpThreads> w =
            detail::logical_warp<LogicalWarpThreads>::here();
        storage.item[w.lane] = input;
        __syncwarp(w.mask);
        if (w.lane == 0) {
            T *v = storage.item;
            for (int s = 1; s < (int)w.count; s *= 2)
                for (int i = (int)w.count - 1; i >= s; i--) v[i] = op(v[i - s], v[i]);
        }
        __syncwarp(w.mask);
        *inclusive = storage.item[w.lane];
        *has_before = w.lane > 0;
        if (w.lane > 0) *before = storage.item[w.lane - 1];
        if (aggregate) *aggregate = storage.item[w.count - 1];
        __syncwarp(w.mask);
    }

  public:
    WarpScan(TempStorage &temp_storage) : storage(temp_storage.Alias()) {}

    void InclusiveSum(T input, T &inclusive_output) {
        InclusiveScan(input, inclusive_output, Sum_());
    }
    void InclusiveSum(T input, T &inclusive_output, T &warp_aggregate) {
        InclusiveScan(input, inclusive_output, Sum_(), warp_aggregate);
    }
    void ExclusiveSum(T input, T &exclusive_output) {
        ExclusiveScan(input, exclusive_output, T(0), Sum_());
    }
    void ExclusiveSum(T input, T &exclusive_output, T &warp_aggregate) {
        ExclusiveScan(input, exclusive_output, T(0), Sum_(), warp_aggregate);
    }

    template <class ScanOp> void InclusiveScan(T input, T &inclusive_output, ScanOp op) {
        T before;
        bool has;
        scan(input, op, &inclusive_output, &before, &has, (T *)0);
    }
    template <class ScanOp>
    void InclusiveScan(T input, T &inclusive_output, ScanOp op, T &warp_aggregate) {
        T before;
        bool has;
        scan(input, op, &inclusive_output, &before, &has, &warp_aggregate);
    }
    template <class ScanOp>
    void InclusiveScan(T input, T &inclusive_output, T initial_value, ScanOp op) {
        T before, incl;
        bool has;
        scan(input, op, &incl, &before, &has, (T *)0);
        inclusive_output = op(initial_value, incl);
    }
    template <class ScanOp>
    void InclusiveScan(T input, T &inclusive_output, T initial_value, ScanOp op,
                       T &warp_aggregate) {
        T before, incl;
        bool has;
        scan(input, op, &incl, &before, &has, &warp_aggregate);
        inclusive_output = op(initial_value, incl);
    }

    template <class ScanOp> void ExclusiveScan(T input, T &exclusive_output, ScanOp op) {
        T incl, before;
        bool has;
        scan(input, op, &incl, &before, &has, (T *)0);
        if (has) exclusive_output = before;
    }
    template <class ScanOp>
    void ExclusiveScan(T input, T &exclusive_output, T initial_value, ScanOp op) {
        T incl, before;
        bool has;
        scan(input, op, &incl, &before, &has, (T *)0);
        exclusive_output = has ? op(initial_value, before) : initial_value;
    }
    template <class ScanOp>
    void ExclusiveScan(T input, T &exclusive_output, ScanOp op, T &warp_aggregate) {
        T incl, before;
        bool has;
        scan(input, op, &incl, &before, &has, &warp_aggregate);
        if (has) exclusive_output = before;
    }
    template <class ScanOp>
    void ExclusiveScan(T input, T &exclusive_output, T initial_value, ScanOp op,
                       T &warp_aggregate) {
        T incl, before;
        bool has;
        scan(input, op, &incl, &before, &has, &warp_aggregate);
        exclusive_output = has ? op(initial_value, before) : initial_value;
    }

    template <class ScanOp>
    void Scan(T input, T &inclusive_output, T &exclusive_output, ScanOp op) {
        T before;
        bool has;
        scan(input, op, &inclusive_output, &before, &has, (T *)0);
        if (has) exclusive_output = before;
    }
    template <class ScanOp>
    void Scan(T input, T &inclusive_output, T &exclusive_output, T initial_value, ScanOp op) {
        T before, incl;
        bool has;
        scan(input, op, &incl, &before, &has, (T *)0);
        inclusive_output = op(initial_value, incl);
        exclusive_output = has ? op(initial_value, before) : initial_value;
    }

    T Broadcast(T input, unsigned int src_lane) {
        const detail::logical_warp<LogicalWarpThreads> w =
            detail::logical_warp<LogicalWarpThreads>::here();
        storage.item[w.lane] = input;
        __syncwarp(w.mask);
        T out = storage.item[src_lane];
        __syncwarp(w.mask);
        return out;
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_WARP_SCAN_CUH */

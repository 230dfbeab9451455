/* cub::BlockScan for the quicklaunch CPU device (see ../ql_cub_core.cuh).
 *
 * Each thread folds its items left to right and writes the partial into
 * TempStorage; after a __syncthreads thread 0 scans the partials left to
 * right (the block aggregate is the fold of every input, without an initial
 * value); a second __syncthreads (a third with a prefix callback, which the
 * first warp's threads call, lane 0's value counting, as in CUB) and each
 * thread applies its exclusive prefix to its items left to right. Without an
 * initial value, thread 0's exclusive output is left as it was (undefined in
 * CUB). Floating-point results follow this order, not CUB's raking or warp
 * scans. Every algorithm variant is accepted and computes the same. */
#ifndef QL_CUB_BLOCK_SCAN_CUH
#define QL_CUB_BLOCK_SCAN_CUH

#include "../ql_cub_core.cuh"

namespace cub {

enum BlockScanAlgorithm {
    BLOCK_SCAN_RAKING,
    BLOCK_SCAN_RAKING_MEMOIZE,
    BLOCK_SCAN_WARP_SCANS,
};

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, BlockScanAlgorithm Algorithm = BLOCK_SCAN_RAKING,
          int BlockDimY = 1, int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockScan {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static_assert(BLOCK_THREADS >= 1 && BLOCK_THREADS <= 1024,
                  "cub::BlockScan: a block has 1 to 1024 threads");
    struct _TempStorage {
        T prefix[BLOCK_THREADS];   // each thread's exclusive prefix (partial before)
        T aggregate;
        T seed;                    // the prefix callback's value (lane 0's)
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
    struct Sum_ {
        T operator()(const T &a, const T &b) const { return a + b; }
    };
    struct NoCallback {
        T operator()(const T &a) const { return a; }
    };

    /* Thread 0: the partials to exclusive prefixes, left to right. */
    template <class Op> QL_CUB_OUTLINE static void scan_partials(_TempStorage &s, Op op) {
        T run = s.prefix[0];
        for (int i = 1; i < BLOCK_THREADS; i++) {
            T next = s.prefix[i];
            s.prefix[i] = run;
            run = op(run, next);
        }
        s.aggregate = run;
    }

    /* What the thread's items are to be prefixed with: *prefix, and whether
     * there is one (thread 0 without an initial value or a callback has
     * none). Mode: 0 none, 1 initial value, 2 callback. */
    template <class Op, class Callback>
    bool block_prefix(T partial, Op op, int mode, const T *init, Callback *callback, T *prefix,
                      T *aggregate) {
        detail::check_block("cub::BlockScan", BLOCK_THREADS);
        storage.prefix[tid] = partial;
        __syncthreads();
        if (tid == 0) scan_partials(storage, op);
        __syncthreads();
        if (aggregate) *aggregate = storage.aggregate;
        T seed;
        if (mode == 2) {
            if (tid < 32) {
                T got = (*callback)(storage.aggregate);
                if (tid == 0) storage.seed = got;
            }
            __syncthreads();
            seed = storage.seed;
        } else if (mode == 1) {
            seed = *init;
        }
        if (tid == 0) {
            if (mode == 0) return false;
            *prefix = seed;
            return true;
        }
        *prefix = mode == 0 ? storage.prefix[tid] : op(seed, storage.prefix[tid]);
        return true;
    }

    template <int N, class Op> static T fold(const T (&in)[N], Op op) {
        T acc = in[0];
        for (int i = 1; i < N; i++) acc = op(acc, in[i]);
        return acc;
    }

    template <int N, class Op, class Callback>
    void inclusive(const T (&in)[N], T (&out)[N], Op op, int mode, const T *init,
                   Callback *callback, T *aggregate) {
        T items[N];
        for (int i = 0; i < N; i++) items[i] = in[i];
        T prefix;
        const bool has = block_prefix(fold(items, op), op, mode, init, callback, &prefix,
                                      aggregate);
        T run = has ? op(prefix, items[0]) : items[0];
        out[0] = run;
        for (int i = 1; i < N; i++) {
            run = op(run, items[i]);
            out[i] = run;
        }
    }

    template <int N, class Op, class Callback>
    void exclusive(const T (&in)[N], T (&out)[N], Op op, int mode, const T *init,
                   Callback *callback, T *aggregate) {
        T items[N];
        for (int i = 0; i < N; i++) items[i] = in[i];
        T prefix;
        const bool has = block_prefix(fold(items, op), op, mode, init, callback, &prefix,
                                      aggregate);
        T run = items[0];
        if (has) {
            out[0] = prefix;
            run = op(prefix, items[0]);
        }
        for (int i = 1; i < N; i++) {
            out[i] = run;
            run = op(run, items[i]);
        }
    }

    typedef T One[1];
    static One &one(T &v) { return *reinterpret_cast<One *>(&v); }

  public:
    BlockScan() : storage(private_storage()),
                  tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockScan(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    /* ---- sums */
    void ExclusiveSum(T input, T &output) {
        const T zero = T(0);
        exclusive(one(input), one(output), Sum_(), 1, &zero, (NoCallback *)0, (T *)0);
    }
    void ExclusiveSum(T input, T &output, T &block_aggregate) {
        const T zero = T(0);
        exclusive(one(input), one(output), Sum_(), 1, &zero, (NoCallback *)0, &block_aggregate);
    }
    template <class Callback> void ExclusiveSum(T input, T &output, Callback &callback) {
        exclusive(one(input), one(output), Sum_(), 2, (T *)0, &callback, (T *)0);
    }
    template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N]) {
        const T zero = T(0);
        exclusive(input, output, Sum_(), 1, &zero, (NoCallback *)0, (T *)0);
    }
    template <int N> void ExclusiveSum(T (&input)[N], T (&output)[N], T &block_aggregate) {
        const T zero = T(0);
        exclusive(input, output, Sum_(), 1, &zero, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class Callback>
    void ExclusiveSum(T (&input)[N], T (&output)[N], Callback &callback) {
        exclusive(input, output, Sum_(), 2, (T *)0, &callback, (T *)0);
    }
    void InclusiveSum(T input, T &output) {
        inclusive(one(input), one(output), Sum_(), 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    void InclusiveSum(T input, T &output, T &block_aggregate) {
        inclusive(one(input), one(output), Sum_(), 0, (T *)0, (NoCallback *)0,
                  &block_aggregate);
    }
    template <class Callback> void InclusiveSum(T input, T &output, Callback &callback) {
        inclusive(one(input), one(output), Sum_(), 2, (T *)0, &callback, (T *)0);
    }
    template <int N> void InclusiveSum(T (&input)[N], T (&output)[N]) {
        inclusive(input, output, Sum_(), 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    template <int N> void InclusiveSum(T (&input)[N], T (&output)[N], T &block_aggregate) {
        inclusive(input, output, Sum_(), 0, (T *)0, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class Callback>
    void InclusiveSum(T (&input)[N], T (&output)[N], Callback &callback) {
        inclusive(input, output, Sum_(), 2, (T *)0, &callback, (T *)0);
    }

    /* ---- scans with an operator */
    template <class ScanOp> void ExclusiveScan(T input, T &output, T initial_value, ScanOp op) {
        exclusive(one(input), one(output), op, 1, &initial_value, (NoCallback *)0, (T *)0);
    }
    template <class ScanOp>
    void ExclusiveScan(T input, T &output, T initial_value, ScanOp op, T &block_aggregate) {
        exclusive(one(input), one(output), op, 1, &initial_value, (NoCallback *)0,
                  &block_aggregate);
    }
    template <class ScanOp, class Callback>
    void ExclusiveScan(T input, T &output, ScanOp op, Callback &callback) {
        exclusive(one(input), one(output), op, 2, (T *)0, &callback, (T *)0);
    }
    template <class ScanOp> void ExclusiveScan(T input, T &output, ScanOp op) {
        exclusive(one(input), one(output), op, 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    template <class ScanOp>
    void ExclusiveScan(T input, T &output, ScanOp op, T &block_aggregate) {
        exclusive(one(input), one(output), op, 0, (T *)0, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class ScanOp>
    void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp op) {
        exclusive(input, output, op, 1, &initial_value, (NoCallback *)0, (T *)0);
    }
    template <int N, class ScanOp>
    void ExclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp op,
                       T &block_aggregate) {
        exclusive(input, output, op, 1, &initial_value, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class ScanOp, class Callback>
    void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp op, Callback &callback) {
        exclusive(input, output, op, 2, (T *)0, &callback, (T *)0);
    }
    template <int N, class ScanOp> void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp op) {
        exclusive(input, output, op, 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    template <int N, class ScanOp>
    void ExclusiveScan(T (&input)[N], T (&output)[N], ScanOp op, T &block_aggregate) {
        exclusive(input, output, op, 0, (T *)0, (NoCallback *)0, &block_aggregate);
    }
    template <class ScanOp> void InclusiveScan(T input, T &output, ScanOp op) {
        inclusive(one(input), one(output), op, 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    template <class ScanOp>
    void InclusiveScan(T input, T &output, ScanOp op, T &block_aggregate) {
        inclusive(one(input), one(output), op, 0, (T *)0, (NoCallback *)0, &block_aggregate);
    }
    template <class ScanOp, class Callback>
    void InclusiveScan(T input, T &output, ScanOp op, Callback &callback) {
        inclusive(one(input), one(output), op, 2, (T *)0, &callback, (T *)0);
    }
    template <int N, class ScanOp> void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp op) {
        inclusive(input, output, op, 0, (T *)0, (NoCallback *)0, (T *)0);
    }
    template <int N, class ScanOp>
    void InclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp op) {
        inclusive(input, output, op, 1, &initial_value, (NoCallback *)0, (T *)0);
    }
    template <int N, class ScanOp>
    void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp op, T &block_aggregate) {
        inclusive(input, output, op, 0, (T *)0, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class ScanOp>
    void InclusiveScan(T (&input)[N], T (&output)[N], T initial_value, ScanOp op,
                       T &block_aggregate) {
        inclusive(input, output, op, 1, &initial_value, (NoCallback *)0, &block_aggregate);
    }
    template <int N, class ScanOp, class Callback>
    void InclusiveScan(T (&input)[N], T (&output)[N], ScanOp op, Callback &callback) {
        inclusive(input, output, op, 2, (T *)0, &callback, (T *)0);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_SCAN_CUH */

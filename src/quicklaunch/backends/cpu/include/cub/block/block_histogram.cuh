/* cub::BlockHistogram for the quicklaunch CPU device (see ../ql_cub_core.cuh):
 * Histogram zeroes the bins (each thread a stride of them, as CUB), a
 * __syncthreads, and adds the block's items with atomic increments; Composite
 * only adds. Both algorithms (BLOCK_HISTO_SORT, BLOCK_HISTO_ATOMIC) count the
 * same. Read the bins after a __syncthreads, as in CUB. */
#ifndef QL_CUB_BLOCK_HISTOGRAM_CUH
#define QL_CUB_BLOCK_HISTOGRAM_CUH

#include "../ql_cub_core.cuh"

namespace cub {

enum BlockHistogramAlgorithm { BLOCK_HISTO_SORT, BLOCK_HISTO_ATOMIC };

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, int ItemsPerThread, int Bins,
          BlockHistogramAlgorithm Algorithm = BLOCK_HISTO_SORT, int BlockDimY = 1,
          int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockHistogram {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    struct _TempStorage {
        unsigned char unused;
    };

  public:
    using TempStorage = Uninitialized<_TempStorage>;

  private:
    int tid;

  public:
    BlockHistogram() : tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockHistogram(TempStorage &) : tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <class CounterT> void InitHistogram(CounterT histogram[Bins]) {
        for (int b = tid; b < Bins; b += BLOCK_THREADS) histogram[b] = 0;
    }
    template <class CounterT>
    void Composite(T (&items)[ItemsPerThread], CounterT histogram[Bins]) {
        for (int i = 0; i < ItemsPerThread; i++)
            __atomic_fetch_add(&histogram[items[i]], (CounterT)1, __ATOMIC_RELAXED);
    }
    template <class CounterT>
    void Histogram(T (&items)[ItemsPerThread], CounterT histogram[Bins]) {
        detail::check_block("cub::BlockHistogram", BLOCK_THREADS);
        InitHistogram(histogram);
        __syncthreads();
        Composite(items, histogram);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_HISTOGRAM_CUH */

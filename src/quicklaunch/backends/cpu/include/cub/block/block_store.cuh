/* cub::BlockStore and the direct store functions for the quicklaunch CPU
 * device (arrangements as in block_load.cuh).
 *
 * BLOCK_STORE_DIRECT and _VECTORIZE store blocked items; _STRIPED stores
 * striped ones; _TRANSPOSE exchanges blocked items to striped through
 * TempStorage (one __syncthreads) and stores them striped;
 * _WARP_TRANSPOSE(_TIMESLICED) exchange within each warp (one __syncwarp)
 * and store warp-striped. Every variant but _STRIPED thus writes element
 * t*N + i from item i of thread t. With valid_items, elements at or past it
 * are not written. */
#ifndef QL_CUB_BLOCK_STORE_CUH
#define QL_CUB_BLOCK_STORE_CUH

#include "../ql_cub_core.cuh"

namespace cub {

enum BlockStoreAlgorithm {
    BLOCK_STORE_DIRECT,
    BLOCK_STORE_STRIPED,
    BLOCK_STORE_VECTORIZE,
    BLOCK_STORE_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
};

template <class T, int N, class It>
QL_FN void StoreDirectBlocked(int linear_tid, It dst, T (&items)[N]) {
    for (int i = 0; i < N; i++) dst[linear_tid * N + i] = items[i];
}
template <class T, int N, class It>
QL_FN void StoreDirectBlocked(int linear_tid, It dst, T (&items)[N], int valid_items) {
    for (int i = 0; i < N; i++)
        if (linear_tid * N + i < valid_items) dst[linear_tid * N + i] = items[i];
}
template <class T, int N>
QL_FN void StoreDirectBlockedVectorized(int linear_tid, T *dst, T (&items)[N]) {
    StoreDirectBlocked(linear_tid, dst, items);
}
template <int THREADS, class T, int N, class It>
QL_FN void StoreDirectStriped(int linear_tid, It dst, T (&items)[N]) {
    for (int i = 0; i < N; i++) dst[i * THREADS + linear_tid] = items[i];
}
template <int THREADS, class T, int N, class It>
QL_FN void StoreDirectStriped(int linear_tid, It dst, T (&items)[N], int valid_items) {
    for (int i = 0; i < N; i++)
        if (i * THREADS + linear_tid < valid_items) dst[i * THREADS + linear_tid] = items[i];
}
template <class T, int N, class It>
QL_FN void StoreDirectWarpStriped(int linear_tid, It dst, T (&items)[N]) {
    const int lane = linear_tid & 31, base = (linear_tid >> 5) * 32 * N;
    for (int i = 0; i < N; i++) dst[base + i * 32 + lane] = items[i];
}
template <class T, int N, class It>
QL_FN void StoreDirectWarpStriped(int linear_tid, It dst, T (&items)[N], int valid_items) {
    const int lane = linear_tid & 31, base = (linear_tid >> 5) * 32 * N;
    for (int i = 0; i < N; i++)
        if (base + i * 32 + lane < valid_items) dst[base + i * 32 + lane] = items[i];
}

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, int ItemsPerThread,
          BlockStoreAlgorithm Algorithm = BLOCK_STORE_DIRECT, int BlockDimY = 1,
          int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockStore {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int N = ItemsPerThread;
    static constexpr bool WARP = Algorithm == BLOCK_STORE_WARP_TRANSPOSE ||
                                 Algorithm == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED;
    static_assert(!WARP || BLOCK_THREADS % 32 == 0,
                  "BLOCK_STORE_WARP_TRANSPOSE needs a block of whole warps (as in CUB)");
    struct _TempStorage {
        T item[Algorithm == BLOCK_STORE_TRANSPOSE || WARP ? BLOCK_THREADS * N : 1];
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

    template <class It> void store(It dst, T (&items)[N], int valid, bool guarded) {
        if (Algorithm == BLOCK_STORE_TRANSPOSE) {
            detail::check_block("cub::BlockStore (BLOCK_STORE_TRANSPOSE)", BLOCK_THREADS);
            T striped[N];
            for (int i = 0; i < N; i++) storage.item[tid * N + i] = items[i];
            __syncthreads();
            for (int i = 0; i < N; i++) striped[i] = storage.item[i * BLOCK_THREADS + tid];
            if (guarded) StoreDirectStriped<BLOCK_THREADS>(tid, dst, striped, valid);
            else StoreDirectStriped<BLOCK_THREADS>(tid, dst, striped);
        } else if (WARP) {
            const int lane = tid & 31, base = (tid >> 5) * 32 * N;
            T striped[N];
            for (int i = 0; i < N; i++) storage.item[tid * N + i] = items[i];
            __syncwarp();
            for (int i = 0; i < N; i++) striped[i] = storage.item[base + i * 32 + lane];
            __syncwarp();
            if (guarded) StoreDirectWarpStriped(tid, dst, striped, valid);
            else StoreDirectWarpStriped(tid, dst, striped);
        } else if (Algorithm == BLOCK_STORE_STRIPED) {
            if (guarded) StoreDirectStriped<BLOCK_THREADS>(tid, dst, items, valid);
            else StoreDirectStriped<BLOCK_THREADS>(tid, dst, items);
        } else {
            if (guarded) StoreDirectBlocked(tid, dst, items, valid);
            else StoreDirectBlocked(tid, dst, items);
        }
    }

  public:
    BlockStore() : storage(private_storage()),
                   tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockStore(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <class It> void Store(It dst, T (&items)[N]) { store(dst, items, 0, false); }
    template <class It> void Store(It dst, T (&items)[N], int valid_items) {
        store(dst, items, valid_items, true);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_STORE_CUH */

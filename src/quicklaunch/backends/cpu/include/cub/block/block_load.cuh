/* cub::BlockLoad and the direct load functions for the quicklaunch CPU
 * device (see ../ql_cub_core.cuh).
 *
 * Arrangements, as CUB's: blocked (thread t holds items t*N .. t*N+N-1),
 * striped (item i of thread t is element i*threads + t) and warp-striped
 * (item i of lane l of warp w is element w*32*N + i*32 + l).
 * BLOCK_LOAD_DIRECT and _VECTORIZE load blocked; _STRIPED loads striped;
 * _TRANSPOSE loads striped and exchanges to blocked through TempStorage (one
 * __syncthreads); _WARP_TRANSPOSE(_TIMESLICED) load warp-striped and exchange
 * to blocked within each warp (one __syncwarp). With valid_items, elements at
 * or past it are not read: their items keep their value (undefined in CUB)
 * or take oob_default. */
#ifndef QL_CUB_BLOCK_LOAD_CUH
#define QL_CUB_BLOCK_LOAD_CUH

#include "../ql_cub_core.cuh"
#include "../thread/thread_load.cuh"   /* CacheLoadModifier, as CUB's header has it */

namespace cub {

enum BlockLoadAlgorithm {
    BLOCK_LOAD_DIRECT,
    BLOCK_LOAD_STRIPED,
    BLOCK_LOAD_VECTORIZE,
    BLOCK_LOAD_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
};

template <class T, int N, class It>
QL_FN void LoadDirectBlocked(int linear_tid, It src, T (&items)[N]) {
    for (int i = 0; i < N; i++) items[i] = src[linear_tid * N + i];
}
template <class T, int N, class It>
QL_FN void LoadDirectBlocked(int linear_tid, It src, T (&items)[N], int valid_items) {
    for (int i = 0; i < N; i++)
        if (linear_tid * N + i < valid_items) items[i] = src[linear_tid * N + i];
}
template <class T, class D, int N, class It>
QL_FN void LoadDirectBlocked(int linear_tid, It src, T (&items)[N], int valid_items,
                             D oob_default) {
    for (int i = 0; i < N; i++) items[i] = oob_default;
    LoadDirectBlocked(linear_tid, src, items, valid_items);
}
template <class T, int N>
QL_FN void LoadDirectBlockedVectorized(int linear_tid, T *src, T (&items)[N]) {
    LoadDirectBlocked(linear_tid, src, items);
}
template <int THREADS, class T, int N, class It>
QL_FN void LoadDirectStriped(int linear_tid, It src, T (&items)[N]) {
    for (int i = 0; i < N; i++) items[i] = src[i * THREADS + linear_tid];
}
template <int THREADS, class T, int N, class It>
QL_FN void LoadDirectStriped(int linear_tid, It src, T (&items)[N], int valid_items) {
    for (int i = 0; i < N; i++)
        if (i * THREADS + linear_tid < valid_items) items[i] = src[i * THREADS + linear_tid];
}
template <int THREADS, class T, class D, int N, class It>
QL_FN void LoadDirectStriped(int linear_tid, It src, T (&items)[N], int valid_items,
                             D oob_default) {
    for (int i = 0; i < N; i++) items[i] = oob_default;
    LoadDirectStriped<THREADS>(linear_tid, src, items, valid_items);
}
template <class T, int N, class It>
QL_FN void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N]) {
    const int lane = linear_tid & 31, base = (linear_tid >> 5) * 32 * N;
    for (int i = 0; i < N; i++) items[i] = src[base + i * 32 + lane];
}
template <class T, int N, class It>
QL_FN void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N], int valid_items) {
    const int lane = linear_tid & 31, base = (linear_tid >> 5) * 32 * N;
    for (int i = 0; i < N; i++)
        if (base + i * 32 + lane < valid_items) items[i] = src[base + i * 32 + lane];
}
template <class T, class D, int N, class It>
QL_FN void LoadDirectWarpStriped(int linear_tid, It src, T (&items)[N], int valid_items,
                                 D oob_default) {
    for (int i = 0; i < N; i++) items[i] = oob_default;
    LoadDirectWarpStriped(linear_tid, src, items, valid_items);
}

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, int ItemsPerThread,
          BlockLoadAlgorithm Algorithm = BLOCK_LOAD_DIRECT, int BlockDimY = 1,
          int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockLoad {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int N = ItemsPerThread;
    static constexpr bool WARP = Algorithm == BLOCK_LOAD_WARP_TRANSPOSE ||
                                 Algorithm == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED;
    static_assert(!WARP || BLOCK_THREADS % 32 == 0,
                  "BLOCK_LOAD_WARP_TRANSPOSE needs a block of whole warps (as in CUB)");
    struct _TempStorage {
        T item[Algorithm == BLOCK_LOAD_TRANSPOSE || WARP ? BLOCK_THREADS * N : 1];
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

    /* Striped or warp-striped items to blocked ones, through the storage
     * (indexed by element number). */
    void to_blocked(T (&items)[N]) {
        if (Algorithm == BLOCK_LOAD_TRANSPOSE) {
            detail::check_block("cub::BlockLoad (BLOCK_LOAD_TRANSPOSE)", BLOCK_THREADS);
            for (int i = 0; i < N; i++) storage.item[i * BLOCK_THREADS + tid] = items[i];
            __syncthreads();
        } else {
            const int lane = tid & 31, base = (tid >> 5) * 32 * N;
            for (int i = 0; i < N; i++) storage.item[base + i * 32 + lane] = items[i];
            __syncwarp();
        }
        for (int i = 0; i < N; i++) items[i] = storage.item[tid * N + i];
        if (WARP) __syncwarp();
    }

    template <class It> void load(It src, T (&items)[N], int valid, bool guarded) {
        if (Algorithm == BLOCK_LOAD_STRIPED || Algorithm == BLOCK_LOAD_TRANSPOSE) {
            if (guarded) LoadDirectStriped<BLOCK_THREADS>(tid, src, items, valid);
            else LoadDirectStriped<BLOCK_THREADS>(tid, src, items);
            if (Algorithm == BLOCK_LOAD_TRANSPOSE) to_blocked(items);
        } else if (WARP) {
            if (guarded) LoadDirectWarpStriped(tid, src, items, valid);
            else LoadDirectWarpStriped(tid, src, items);
            to_blocked(items);
        } else {
            if (guarded) LoadDirectBlocked(tid, src, items, valid);
            else LoadDirectBlocked(tid, src, items);
        }
    }

  public:
    BlockLoad() : storage(private_storage()),
                  tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockLoad(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <class It> void Load(It src, T (&items)[N]) { load(src, items, 0, false); }
    template <class It> void Load(It src, T (&items)[N], int valid_items) {
        load(src, items, valid_items, true);
    }
    template <class It, class D>
    void Load(It src, T (&items)[N], int valid_items, D oob_default) {
        for (int i = 0; i < N; i++) items[i] = oob_default;
        load(src, items, valid_items, true);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_LOAD_CUH */

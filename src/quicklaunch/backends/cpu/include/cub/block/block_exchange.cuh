/* cub::BlockExchange for the quicklaunch CPU device (arrangements as in
 * block_load.cuh): each thread writes its items into TempStorage at their
 * element (or rank) positions, a __syncthreads, and reads back the items of
 * the arrangement asked for. The warp-striped forms take 32 lanes a warp, as
 * CUB does (a block of whole warps). Reuse the storage after a
 * __syncthreads, as in CUB. */
#ifndef QL_CUB_BLOCK_EXCHANGE_CUH
#define QL_CUB_BLOCK_EXCHANGE_CUH

#include "../ql_cub_core.cuh"

namespace cub {

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, int ItemsPerThread, bool WarpTimeSlicing = false,
          int BlockDimY = 1, int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockExchange {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int N = ItemsPerThread;
    struct _TempStorage {
        T item[BLOCK_THREADS * N];
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
    int blocked(int i) const { return tid * N + i; }
    int striped(int i) const { return i * BLOCK_THREADS + tid; }
    int warp_striped(int i) const { return (tid >> 5) * 32 * N + i * 32 + (tid & 31); }

    template <class From, class To>
    void exchange(const T (&in)[N], T (&out)[N], From from, To to) {
        detail::check_block("cub::BlockExchange", BLOCK_THREADS);
        for (int i = 0; i < N; i++) storage.item[(this->*from)(i)] = in[i];
        __syncthreads();
        for (int i = 0; i < N; i++) out[i] = storage.item[(this->*to)(i)];
    }
    template <class Offset, class To>
    void scatter(const T (&in)[N], T (&out)[N], const Offset (&ranks)[N], To to) {
        detail::check_block("cub::BlockExchange", BLOCK_THREADS);
        for (int i = 0; i < N; i++) storage.item[ranks[i]] = in[i];
        __syncthreads();
        for (int i = 0; i < N; i++) out[i] = storage.item[(this->*to)(i)];
    }

  public:
    BlockExchange() : storage(private_storage()),
                      tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockExchange(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <class OutT> void StripedToBlocked(const T (&in)[N], OutT (&out)[N]) {
        T tmp[N];
        exchange(in, tmp, &BlockExchange::striped, &BlockExchange::blocked);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    template <class OutT> void BlockedToStriped(const T (&in)[N], OutT (&out)[N]) {
        T tmp[N];
        exchange(in, tmp, &BlockExchange::blocked, &BlockExchange::striped);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    template <class OutT> void WarpStripedToBlocked(const T (&in)[N], OutT (&out)[N]) {
        T tmp[N];
        exchange(in, tmp, &BlockExchange::warp_striped, &BlockExchange::blocked);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    template <class OutT> void BlockedToWarpStriped(const T (&in)[N], OutT (&out)[N]) {
        T tmp[N];
        exchange(in, tmp, &BlockExchange::blocked, &BlockExchange::warp_striped);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    void StripedToBlocked(T (&items)[N]) { StripedToBlocked(items, items); }
    void BlockedToStriped(T (&items)[N]) { BlockedToStriped(items, items); }
    void WarpStripedToBlocked(T (&items)[N]) { WarpStripedToBlocked(items, items); }
    void BlockedToWarpStriped(T (&items)[N]) { BlockedToWarpStriped(items, items); }

    template <class OutT, class Offset>
    void ScatterToBlocked(const T (&in)[N], OutT (&out)[N], Offset (&ranks)[N]) {
        T tmp[N];
        scatter(in, tmp, ranks, &BlockExchange::blocked);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    template <class OutT, class Offset>
    void ScatterToStriped(const T (&in)[N], OutT (&out)[N], Offset (&ranks)[N]) {
        T tmp[N];
        scatter(in, tmp, ranks, &BlockExchange::striped);
        for (int i = 0; i < N; i++) out[i] = tmp[i];
    }
    template <class Offset> void ScatterToBlocked(T (&items)[N], Offset (&ranks)[N]) {
        ScatterToBlocked(items, items, ranks);
    }
    template <class Offset> void ScatterToStriped(T (&items)[N], Offset (&ranks)[N]) {
        ScatterToStriped(items, items, ranks);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_EXCHANGE_CUH */

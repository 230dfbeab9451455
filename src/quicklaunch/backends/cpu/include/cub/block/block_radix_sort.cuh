/* cub::BlockRadixSort for the quicklaunch CPU device (see ../ql_cub_core.cuh).
 *
 * CUB's results: a stable sort of the block's keys (and values with them)
 * by bits [begin_bit, end_bit) of CUB's order-preserving key bits (unsigned
 * integers as they are; signed ones with the sign bit flipped; float, double,
 * __half and __nv_bfloat16 with the sign bit flipped when positive and every
 * bit flipped when negative, -0.0 taken as +0.0, NaNs by their bits),
 * ascending or descending, equal keys keeping their order. The block's
 * threads write their items to TempStorage, a __syncthreads, thread 0 sorts
 * (least significant digit first, 8 bits a pass), a __syncthreads, each
 * thread reads its items: blocked (Sort, SortDescending: thread t holds
 * ranks t*N .. t*N+N-1) or striped (SortBlockedToStriped...: item i of
 * thread t is rank i*threads + t). RadixBits, MemoizeOuterScan,
 * InnerScanAlgorithm and SMemConfig are accepted and change nothing. */
#ifndef QL_CUB_BLOCK_RADIX_SORT_CUH
#define QL_CUB_BLOCK_RADIX_SORT_CUH

#include "../ql_cub_core.cuh"
#include "block_scan.cuh"   /* BlockScanAlgorithm */

#ifndef QL_CUDA_SHARED_MEM_CONFIG
#define QL_CUDA_SHARED_MEM_CONFIG 1
enum cudaSharedMemConfig {
    cudaSharedMemBankSizeDefault = 0,
    cudaSharedMemBankSizeFourByte = 1,
    cudaSharedMemBankSizeEightByte = 2
};
#endif

namespace cub {
namespace detail {

template <int Bytes> struct radix_bits_of;
template <> struct radix_bits_of<1> { typedef uint8_t type; };
template <> struct radix_bits_of<2> { typedef uint16_t type; };
template <> struct radix_bits_of<4> { typedef uint32_t type; };
template <> struct radix_bits_of<8> { typedef uint64_t type; };

/* CUB's order-preserving bits of a key. */
template <class K, bool Float> struct radix_key_base {
    typedef typename radix_bits_of<sizeof(K)>::type U;
    static constexpr U HIGH = (U)((U)1 << (sizeof(K) * 8 - 1));
    static U in(K k) {
        U u;
        memcpy(&u, &k, sizeof(K));
        if (Float) {
            if (u == HIGH) u = 0;                 // -0.0 sorts as +0.0
            return (u & HIGH) ? (U)~u : (U)(u ^ HIGH);
        }
        return (K)(-1) < (K)0 ? (U)(u ^ HIGH) : u;
    }
};
template <class K> struct radix_key : radix_key_base<K, false> {};
template <> struct radix_key<float> : radix_key_base<float, true> {};
template <> struct radix_key<double> : radix_key_base<double, true> {};
template <> struct radix_key<__half> : radix_key_base<__half, true> {};
template <> struct radix_key<__nv_bfloat16> : radix_key_base<__nv_bfloat16, true> {};

}  // namespace detail

#ifdef QL_CUB_COLLECTIVES
template <class KeyT, int BlockDimX, int ItemsPerThread, class ValueT = NullType,
          int RadixBits = 4, bool MemoizeOuterScan = true,
          BlockScanAlgorithm InnerScanAlgorithm = BLOCK_SCAN_WARP_SCANS,
          cudaSharedMemConfig SMemConfig = cudaSharedMemBankSizeFourByte, int BlockDimY = 1,
          int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockRadixSort {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    static constexpr int N = ItemsPerThread;
    static constexpr int M = BLOCK_THREADS * N;
    static constexpr bool KEYS_ONLY = __is_same(ValueT, NullType);
    typedef typename detail::radix_key<KeyT>::U U;
    typedef ValueT V;
    struct _TempStorage {
        KeyT key[2][M];
        V value[2][KEYS_ONLY ? 1 : M];
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

    QL_CUB_OUTLINE void sort_all(int begin_bit, int end_bit, bool descending) {
        int from = 0;
        for (int lo = begin_bit; lo < end_bit; lo += 8) {
            const int width = end_bit - lo < 8 ? end_bit - lo : 8;
            const U mask = (U)((1u << width) - 1u);
            unsigned start[256];
            for (int d = 0; d < 256; d++) start[d] = 0;
            for (int i = 0; i < M; i++) {
                U u = detail::radix_key<KeyT>::in(storage.key[from][i]);
                if (descending) u = (U)~u;
                start[(unsigned)((u >> lo) & mask)]++;
            }
            unsigned run = 0;
            for (int d = 0; d < 256; d++) {
                const unsigned c = start[d];
                start[d] = run;
                run += c;
            }
            for (int i = 0; i < M; i++) {
                U u = detail::radix_key<KeyT>::in(storage.key[from][i]);
                if (descending) u = (U)~u;
                const unsigned at = start[(unsigned)((u >> lo) & mask)]++;
                storage.key[1 - from][at] = storage.key[from][i];
                if (!KEYS_ONLY) storage.value[1 - from][at] = storage.value[from][i];
            }
            from = 1 - from;
        }
        if (from == 1) {
            for (int i = 0; i < M; i++) storage.key[0][i] = storage.key[1][i];
            if (!KEYS_ONLY)
                for (int i = 0; i < M; i++) storage.value[0][i] = storage.value[1][i];
        }
    }

    void sort(KeyT (&keys)[N], V *values, int begin_bit, int end_bit, bool descending,
              bool striped) {
        detail::check_block("cub::BlockRadixSort", BLOCK_THREADS);
        for (int i = 0; i < N; i++) {
            storage.key[0][tid * N + i] = keys[i];
            if (!KEYS_ONLY) storage.value[0][tid * N + i] = values[i];
        }
        __syncthreads();
        if (tid == 0) {
            if (begin_bit < 0) begin_bit = 0;
            if (end_bit > (int)sizeof(KeyT) * 8) end_bit = (int)sizeof(KeyT) * 8;
            sort_all(begin_bit, end_bit, descending);
        }
        __syncthreads();
        for (int i = 0; i < N; i++) {
            const int at = striped ? i * BLOCK_THREADS + tid : tid * N + i;
            keys[i] = storage.key[0][at];
            if (!KEYS_ONLY) values[i] = storage.value[0][at];
        }
    }

  public:
    BlockRadixSort() : storage(private_storage()),
                       tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockRadixSort(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    void Sort(KeyT (&keys)[N], int begin_bit = 0, int end_bit = sizeof(KeyT) * 8) {
        sort(keys, (V *)0, begin_bit, end_bit, false, false);
    }
    void Sort(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0,
              int end_bit = sizeof(KeyT) * 8) {
        sort(keys, values, begin_bit, end_bit, false, false);
    }
    void SortDescending(KeyT (&keys)[N], int begin_bit = 0, int end_bit = sizeof(KeyT) * 8) {
        sort(keys, (V *)0, begin_bit, end_bit, true, false);
    }
    void SortDescending(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0,
                        int end_bit = sizeof(KeyT) * 8) {
        sort(keys, values, begin_bit, end_bit, true, false);
    }
    void SortBlockedToStriped(KeyT (&keys)[N], int begin_bit = 0,
                              int end_bit = sizeof(KeyT) * 8) {
        sort(keys, (V *)0, begin_bit, end_bit, false, true);
    }
    void SortBlockedToStriped(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0,
                              int end_bit = sizeof(KeyT) * 8) {
        sort(keys, values, begin_bit, end_bit, false, true);
    }
    void SortDescendingBlockedToStriped(KeyT (&keys)[N], int begin_bit = 0,
                                        int end_bit = sizeof(KeyT) * 8) {
        sort(keys, (V *)0, begin_bit, end_bit, true, true);
    }
    void SortDescendingBlockedToStriped(KeyT (&keys)[N], V (&values)[N], int begin_bit = 0,
                                        int end_bit = sizeof(KeyT) * 8) {
        sort(keys, values, begin_bit, end_bit, true, true);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_RADIX_SORT_CUH */

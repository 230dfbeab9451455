/* cub::BlockDiscontinuity for the quicklaunch CPU device (see
 * ../ql_cub_core.cuh): FlagHeads sets item i's flag to flag_op(item before,
 * item i) in the block's blocked order (the first item of thread 0: 1, or
 * flag_op(tile_predecessor_item, it)), FlagTails to flag_op(item i, item
 * after) (the last item of the last thread: 1, or flag_op(it,
 * tile_successor_item)); flag_op may also take the second item's rank, as in
 * CUB. Each thread shares its first and last item through TempStorage (one
 * __syncthreads). */
#ifndef QL_CUB_BLOCK_DISCONTINUITY_CUH
#define QL_CUB_BLOCK_DISCONTINUITY_CUH

#include "../ql_cub_core.cuh"

namespace cub {
namespace detail {
template <class Op, class T>
QL_FN auto flag_apply(Op &op, const T &a, const T &b, int b_index, int)
    -> decltype(op(a, b, b_index)) {
    return op(a, b, b_index);
}
template <class Op, class T>
QL_FN auto flag_apply(Op &op, const T &a, const T &b, int, long) -> decltype(op(a, b)) {
    return op(a, b);
}
}  // namespace detail

#ifdef QL_CUB_COLLECTIVES
template <class T, int BlockDimX, int BlockDimY = 1, int BlockDimZ = 1, int LegacyPtxArch = 0>
class BlockDiscontinuity {
    static constexpr int BLOCK_THREADS = BlockDimX * BlockDimY * BlockDimZ;
    struct _TempStorage {
        T first[BLOCK_THREADS];
        T last[BLOCK_THREADS];
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
    template <int N> void share(T (&input)[N]) {
        detail::check_block("cub::BlockDiscontinuity", BLOCK_THREADS);
        storage.first[tid] = input[0];
        storage.last[tid] = input[N - 1];
        __syncthreads();
    }
    template <int N, class FlagT, class Op>
    void heads(FlagT (&flags)[N], T (&input)[N], Op &op, const T *pred) {
        for (int i = N - 1; i > 0; i--)
            flags[i] = detail::flag_apply(op, input[i - 1], input[i], tid * N + i, 0);
        if (tid > 0) flags[0] = detail::flag_apply(op, storage.last[tid - 1], input[0], tid * N, 0);
        else flags[0] = pred ? detail::flag_apply(op, *pred, input[0], 0, 0) : 1;
    }
    template <int N, class FlagT, class Op>
    void tails(FlagT (&flags)[N], T (&input)[N], Op &op, const T *succ) {
        for (int i = 0; i < N - 1; i++)
            flags[i] = detail::flag_apply(op, input[i], input[i + 1], tid * N + i + 1, 0);
        if (tid < BLOCK_THREADS - 1)
            flags[N - 1] = detail::flag_apply(op, input[N - 1], storage.first[tid + 1],
                                              (tid + 1) * N, 0);
        else
            flags[N - 1] = succ ? detail::flag_apply(op, input[N - 1], *succ, BLOCK_THREADS * N, 0)
                                : 1;
    }

  public:
    BlockDiscontinuity() : storage(private_storage()),
                           tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}
    BlockDiscontinuity(TempStorage &temp_storage)
        : storage(temp_storage.Alias()),
          tid(detail::block_tid<BlockDimX, BlockDimY, BlockDimZ>()) {}

    template <int N, class FlagT, class Op>
    void FlagHeads(FlagT (&head_flags)[N], T (&input)[N], Op flag_op) {
        share(input);
        heads(head_flags, input, flag_op, (const T *)0);
    }
    template <int N, class FlagT, class Op>
    void FlagHeads(FlagT (&head_flags)[N], T (&input)[N], Op flag_op, T tile_predecessor_item) {
        share(input);
        heads(head_flags, input, flag_op, &tile_predecessor_item);
    }
    template <int N, class FlagT, class Op>
    void FlagTails(FlagT (&tail_flags)[N], T (&input)[N], Op flag_op) {
        share(input);
        tails(tail_flags, input, flag_op, (const T *)0);
    }
    template <int N, class FlagT, class Op>
    void FlagTails(FlagT (&tail_flags)[N], T (&input)[N], Op flag_op, T tile_successor_item) {
        share(input);
        tails(tail_flags, input, flag_op, &tile_successor_item);
    }
    template <int N, class FlagT, class Op>
    void FlagHeadsAndTails(FlagT (&head_flags)[N], FlagT (&tail_flags)[N], T (&input)[N],
                           Op flag_op) {
        share(input);
        heads(head_flags, input, flag_op, (const T *)0);
        tails(tail_flags, input, flag_op, (const T *)0);
    }
};
#endif /* QL_CUB_COLLECTIVES */

}  // namespace cub

#endif /* QL_CUB_BLOCK_DISCONTINUITY_CUH */

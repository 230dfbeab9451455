/* CUDA's barrier and warp functions on the CPU device (tier 2): __syncthreads
 * and its _count/_and/_or forms, __activemask, __syncwarp, the __shfl*_sync
 * shuffles, __ballot/__any/__all_sync, __match_*_sync, __reduce_*_sync,
 * __nanosleep, and the pre-CUDA-9 unsynchronised forms. Each is a rendezvous
 * or a barrier of ql_fiber's scheduler (ql_fibers.h). Part of cuda_shim.h,
 * which includes it right after ql_fibers.h, for modules that use barriers,
 * warp functions or cooperative groups. */
#ifndef QL_WARP_H
#define QL_WARP_H

#include "ql_fibers.h"

/* --------------------------------------------------- CUDA's functions */
#define QL_SITE ((uintptr_t)__builtin_return_address(0))

QL_FN void __syncthreads(void) { ql_fiber::barrier(ql_fiber::BAR_PLAIN, 0); }
QL_FN int __syncthreads_count(int p) { return ql_fiber::barrier(ql_fiber::BAR_COUNT, p != 0); }
QL_FN int __syncthreads_and(int p) { return ql_fiber::barrier(ql_fiber::BAR_AND, p != 0); }
QL_FN int __syncthreads_or(int p) { return ql_fiber::barrier(ql_fiber::BAR_OR, p != 0); }

/* The lanes converged at a call are those at the same call site (its return
 * address): noinline keeps each call a call, and clang's nomerge keeps its
 * optimiser from sinking the calls of an if and its else into one call after
 * the join (GCC, with -fno-ipa-icf, does not merge them). */
#if defined(__clang__)
#define QL_NOMERGE __attribute__((nomerge))
#else
#define QL_NOMERGE
#endif
__attribute__((noinline)) QL_NOMERGE static unsigned __activemask(void) {
    return (unsigned)ql_fiber::warp_op(ql_fiber::OP_ACTIVEMASK, 0, 0, 0, 32, QL_SITE);
}
QL_FN void __syncwarp(unsigned mask = 0xffffffffu) {
    ql_fiber::warp_op(ql_fiber::OP_SYNCWARP, mask, 0, 0, 32, 0);
}

template <class T> QL_FN T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return ql_fiber::from_bits<T>(
        ql_fiber::warp_op(ql_fiber::OP_SHFL, mask, ql_fiber::bits(v), src, width, 0));
}
template <class T> QL_FN T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    return ql_fiber::from_bits<T>(ql_fiber::warp_op(ql_fiber::OP_SHFL_UP, mask,
                                                    ql_fiber::bits(v), (int)delta, width, 0));
}
template <class T> QL_FN T __shfl_down_sync(unsigned mask, T v, unsigned delta,
                                            int width = 32) {
    return ql_fiber::from_bits<T>(ql_fiber::warp_op(ql_fiber::OP_SHFL_DOWN, mask,
                                                    ql_fiber::bits(v), (int)delta, width, 0));
}
template <class T> QL_FN T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return ql_fiber::from_bits<T>(ql_fiber::warp_op(ql_fiber::OP_SHFL_XOR, mask,
                                                    ql_fiber::bits(v), lane_mask, width, 0));
}
QL_FN unsigned __ballot_sync(unsigned mask, int p) {
    return (unsigned)ql_fiber::warp_op(ql_fiber::OP_BALLOT, mask, p != 0, 0, 32, 0);
}
QL_FN int __any_sync(unsigned mask, int p) {
    return (int)ql_fiber::warp_op(ql_fiber::OP_ANY, mask, p != 0, 0, 32, 0);
}
QL_FN int __all_sync(unsigned mask, int p) {
    return (int)ql_fiber::warp_op(ql_fiber::OP_ALL, mask, p != 0, 0, 32, 0);
}
template <class T> QL_FN unsigned __match_any_sync(unsigned mask, T v) {
    return (unsigned)ql_fiber::warp_op(ql_fiber::OP_MATCH_ANY, mask, ql_fiber::bits(v), 0,
                                       32, 0);
}
template <class T> QL_FN unsigned __match_all_sync(unsigned mask, T v, int *pred) {
    unsigned r = (unsigned)ql_fiber::warp_op(ql_fiber::OP_MATCH_ALL, mask, ql_fiber::bits(v),
                                             0, 32, 0);
    *pred = ql_fiber::current->lanes[ql_fiber::current->cur].pred;
    return r;
}
#define QL_REDUCE(name, o, T)                                                              \
    QL_FN T name(unsigned mask, T v) {                                                   \
        return (T)ql_fiber::warp_op(ql_fiber::o, mask, (uint32_t)v, 0, 32, 0);          \
    }
QL_REDUCE(__reduce_add_sync, OP_ADD, unsigned)
QL_REDUCE(__reduce_add_sync, OP_ADD, int)
QL_REDUCE(__reduce_min_sync, OP_UMIN, unsigned)
QL_REDUCE(__reduce_min_sync, OP_MIN, int)
QL_REDUCE(__reduce_max_sync, OP_UMAX, unsigned)
QL_REDUCE(__reduce_max_sync, OP_MAX, int)
QL_REDUCE(__reduce_and_sync, OP_AND, unsigned)
QL_REDUCE(__reduce_or_sync, OP_OR, unsigned)
QL_REDUCE(__reduce_xor_sync, OP_XOR, unsigned)
#undef QL_REDUCE

/* A spin-wait's pause: the calling thread stays runnable and the block's
 * other threads get to run (a thread waiting on another's store would
 * otherwise spin forever: fibers switch only where the code lets them). */
QL_FN void __nanosleep(unsigned int) {
    ql_fiber::block *b = ql_fiber::current;
    ql_fiber::yield(b, b->cur);
}

/* The pre-CUDA-9 forms, over the lanes converged at the call. */
template <class T> QL_FN T __shfl(T v, int src, int width = 32) {
    return __shfl_sync(__activemask(), v, src, width);
}
template <class T> QL_FN T __shfl_up(T v, unsigned d, int width = 32) {
    return __shfl_up_sync(__activemask(), v, d, width);
}
template <class T> QL_FN T __shfl_down(T v, unsigned d, int width = 32) {
    return __shfl_down_sync(__activemask(), v, d, width);
}
template <class T> QL_FN T __shfl_xor(T v, int m, int width = 32) {
    return __shfl_xor_sync(__activemask(), v, m, width);
}
QL_FN unsigned __ballot(int p) { return __ballot_sync(__activemask(), p); }
QL_FN int __any(int p) { return __any_sync(__activemask(), p); }
QL_FN int __all(int p) { return __all_sync(__activemask(), p); }

#endif /* QL_WARP_H */

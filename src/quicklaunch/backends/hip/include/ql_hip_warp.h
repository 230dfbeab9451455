/* CUDA's warp functions on AMD wavefronts (quicklaunch.hip; docs/hip-device.md).
 *
 * A CUDA warp is 32 lanes. An AMD wavefront is 64 lanes on CDNA/GCN (gfx9:
 * MI100, MI200, MI300) and 32 on RDNA (gfx10, gfx11) unless compiled with
 * -mwavefrontsize64; warpSize is the wavefront size.
 *
 * Wave32: every function here has CUDA's exact semantics (the rules for
 * mask, width and out-of-range lanes of the CUDA C++ Programming Guide).
 *
 * Wave64: a lane mask needs 64 bits. A function that takes a mask
 * refuses, at compile time, one narrower than 64 bits (0xffffffff, an
 * `unsigned`): such code was written for 32-lane warps, and run on 64
 * lanes it would silently compute something else (a broadcast from lane 0
 * reaching 64 lanes, a ballot losing lanes 32-63). __ballot_sync,
 * __activemask and __match_*_sync return a 64-bit mask (ql_hip::wave_mask)
 * that refuses to narrow to 32 bits. __syncwarp takes any mask: it is a
 * barrier of the whole wavefront, which the lanes of any mask are part of.
 * Cooperative-group tiles of 1 to 32 threads behave as in CUDA on both.
 *
 * Lanes are the wavefront's own (__lane_id(): the linear thread index modulo
 * the wavefront size, as in CUDA modulo 32). */
#ifndef QL_HIP_WARP_H
#define QL_HIP_WARP_H

namespace ql_hip {

typedef unsigned long long u64;

/* ----------------------------------------------------- lane arithmetic
 * The lane a shuffle reads, as CUDA defines it (kind 0 idx, 1 up, 2 down,
 * 3 xor; width a power of two): constexpr so tests can check it offline. */
constexpr __host__ __device__ unsigned shfl_base(unsigned lane, unsigned width) {
    return lane & ~(width - 1u);
}
constexpr __host__ __device__ unsigned shfl_src(int kind, unsigned lane, unsigned arg,
                                                unsigned width) {
    return kind == 0 ? shfl_base(lane, width) + (arg & (width - 1u))
         : kind == 1 ? (lane - shfl_base(lane, width) >= arg ? lane - arg : lane)
         : kind == 2 ? (arg < width - (lane - shfl_base(lane, width)) ? lane + arg : lane)
         : ((lane ^ arg) < shfl_base(lane, width) + width ? (lane ^ arg) : lane);
}
/* The lanes of a tile of n (a power of two, at most 64) holding `lane`. */
constexpr __host__ __device__ u64 tile_lanes(unsigned lane, unsigned n) {
    return (n >= 64u ? ~0ull : ((1ull << n) - 1ull)) << (lane & ~(n - 1u) & 63u);
}

/* The integer a tile of N lanes reports masks in: 32 bits up to 32 lanes. */
template <unsigned N> struct tile_mask { typedef unsigned type; };
template <> struct tile_mask<64> { typedef u64 type; };

/* ----------------------------------------------------- wavefront primitives */
__device__ inline u64 ballot(int p) {   /* bit i: lane i is active and p != 0 */
    const u64 bits = __builtin_amdgcn_uicmp((unsigned)(p != 0), 0u, 33);   /* 33: ICMP_NE */
#if QL_HIP_WAVE == 64
    return bits;
#else
    return (unsigned)bits;
#endif
}

/* Type traits, spelled out (no standard library here). */
template <class QlT> struct is_int { enum { value = 0 }; };
#define QL_HIP_INT(T) template <> struct is_int<T> { enum { value = 1 }; };
QL_HIP_INT(char) QL_HIP_INT(signed char) QL_HIP_INT(unsigned char) QL_HIP_INT(short)
QL_HIP_INT(unsigned short) QL_HIP_INT(int) QL_HIP_INT(unsigned) QL_HIP_INT(long)
QL_HIP_INT(unsigned long) QL_HIP_INT(long long) QL_HIP_INT(unsigned long long)
QL_HIP_INT(char16_t) QL_HIP_INT(char32_t) QL_HIP_INT(wchar_t)
#undef QL_HIP_INT
template <class QlT> struct is_int<const QlT> : is_int<QlT> {};
template <class QlT> struct is_int<volatile QlT> : is_int<QlT> {};
template <class QlT> struct is_int<const volatile QlT> : is_int<QlT> {};

template <class T> struct words {
    enum { n = (sizeof(T) + 3) / 4 };
    int w[n];
};
template <class T> __device__ inline words<T> to_words(const T &v) {
    words<T> out = {};
    __builtin_memcpy(out.w, &v, sizeof(T));
    return out;
}
/* The value `v` holds in lane `src` (any trivially copyable T). */
template <class T> __device__ inline T permute(T v, unsigned src) {
    words<T> w = to_words(v);
    for (int i = 0; i < words<T>::n; ++i)
        w.w[i] = __builtin_amdgcn_ds_bpermute((int)(src << 2), w.w[i]);
    __builtin_memcpy(&v, w.w, sizeof(T));
    return v;
}
template <class T> __device__ inline bool same_bits(const T &a, const T &b) {
    words<T> x = to_words(a), y = to_words(b);
    bool same = true;
    for (int i = 0; i < words<T>::n; ++i) same = same && x.w[i] == y.w[i];
    return same;
}

/* ----------------------------------------------------- masks */
#if QL_HIP_WAVE == 64
template <class QlT> struct narrow {   /* integers that cannot hold a wave64 mask */
    enum { value = is_int<QlT>::value && sizeof(QlT) < 8 };
};
template <bool B, class QlT = void> struct enable_if {};
template <class QlT> struct enable_if<true, QlT> { typedef QlT type; };

/* A wave64 lane mask: converts to 64-bit integers and bool, never silently
 * to a narrower integer (which would drop lanes 32-63). */
struct wave_mask {
    u64 bits;
    __device__ operator u64() const { return bits; }
    __device__ explicit operator bool() const { return bits != 0; }
#define QL_HIP_MASK_ASSIGN(op) \
    template <class QlT> __device__ wave_mask &operator op(QlT v) { bits op (u64)v; return *this; }
    QL_HIP_MASK_ASSIGN(&=) QL_HIP_MASK_ASSIGN(|=) QL_HIP_MASK_ASSIGN(^=)
    QL_HIP_MASK_ASSIGN(<<=) QL_HIP_MASK_ASSIGN(>>=) QL_HIP_MASK_ASSIGN(+=) QL_HIP_MASK_ASSIGN(-=)
#undef QL_HIP_MASK_ASSIGN
    template <class QlT, class = typename enable_if<narrow<QlT>::value>::type>
    __device__ operator QlT() const {
        static_assert(sizeof(QlT) == 0,
                      "quicklaunch HIP, wave64: a lane mask from __ballot_sync, __activemask "
                      "or __match_*_sync has 64 bits here (warpSize is 64); store it in an "
                      "unsigned long long (and count it with __popcll, __ffsll), or use a "
                      "cooperative_groups tile of 32 for 32-bit masks");
        return QlT();
    }
};
#define QL_HIP_MASK_OP(op) \
    template <class QlT> __device__ inline u64 operator op(wave_mask a, QlT b) { return a.bits op (u64)b; } \
    template <class QlT> __device__ inline u64 operator op(QlT a, wave_mask b) { return (u64)a op b.bits; } \
    __device__ inline u64 operator op(wave_mask a, wave_mask b) { return a.bits op b.bits; }
QL_HIP_MASK_OP(&) QL_HIP_MASK_OP(|) QL_HIP_MASK_OP(^) QL_HIP_MASK_OP(+) QL_HIP_MASK_OP(-)
QL_HIP_MASK_OP(*) QL_HIP_MASK_OP(/) QL_HIP_MASK_OP(%)
#undef QL_HIP_MASK_OP
#define QL_HIP_MASK_CMP(op) \
    template <class QlT> __device__ inline bool operator op(wave_mask a, QlT b) { return a.bits op (u64)b; } \
    template <class QlT> __device__ inline bool operator op(QlT a, wave_mask b) { return (u64)a op b.bits; } \
    __device__ inline bool operator op(wave_mask a, wave_mask b) { return a.bits op b.bits; }
QL_HIP_MASK_CMP(==) QL_HIP_MASK_CMP(!=) QL_HIP_MASK_CMP(<) QL_HIP_MASK_CMP(>)
QL_HIP_MASK_CMP(<=) QL_HIP_MASK_CMP(>=)
#undef QL_HIP_MASK_CMP
template <class QlT> __device__ inline u64 operator>>(wave_mask a, QlT n) { return a.bits >> n; }
template <class QlT> __device__ inline u64 operator<<(wave_mask a, QlT n) { return a.bits << n; }
__device__ inline u64 operator~(wave_mask a) { return ~a.bits; }
__device__ inline bool operator!(wave_mask a) { return !a.bits; }

typedef wave_mask mask_result;
__device__ inline mask_result make_mask(u64 bits) { wave_mask m = {bits}; return m; }
template <class M> __device__ inline u64 mask_bits(M m) { return (u64)m; }
#define QL_HIP_CHECK_MASK(M, fn)                                                        \
    static_assert(sizeof(M) >= 8 || !is_int<M>::value,                                    \
                  "quicklaunch HIP, wave64: " fn " was given a mask narrower than 64 bits, " \
                  "but a wavefront here has 64 lanes (warpSize is 64). Code written for "    \
                  "32-lane warps (0xffffffff, lane = threadIdx.x % 32) would compute "       \
                  "something else on 64 lanes, so it is refused: pass a 64-bit mask (~0ull, " \
                  "__activemask()) and use warpSize, or use a cooperative_groups tile of 32, " \
                  "or compile for a wave32 GPU (gfx10/gfx11)")
#else
typedef unsigned mask_result;
__device__ inline mask_result make_mask(u64 bits) { return (unsigned)bits; }
template <class M> __device__ inline u64 mask_bits(M m) { return (unsigned)m; }
#define QL_HIP_CHECK_MASK(M, fn) \
    static_assert(is_int<M>::value, "quicklaunch HIP: the mask of " fn " must be an integer")
#endif

/* ----------------------------------------------------- shuffles */
#define QL_HIP_SHFL(name, kind, Arg)                                                     \
    template <class M, class T>                                                           \
    __device__ inline T name(M mask, T var, Arg arg, int width = warpSize) {              \
        QL_HIP_CHECK_MASK(M, "__" #name);                                                 \
        return permute(var, shfl_src(kind, __lane_id(), (unsigned)arg, (unsigned)width)); \
    }
QL_HIP_SHFL(shfl_sync, 0, int)
QL_HIP_SHFL(shfl_up_sync, 1, unsigned)
QL_HIP_SHFL(shfl_down_sync, 2, unsigned)
QL_HIP_SHFL(shfl_xor_sync, 3, int)
#undef QL_HIP_SHFL

/* ----------------------------------------------------- votes */
__device__ inline mask_result activemask() { return make_mask(ballot(1)); }

template <class M> __device__ inline mask_result ballot_sync(M mask, int p) {
    QL_HIP_CHECK_MASK(M, "__ballot_sync");
    return make_mask(ballot(p) & mask_bits(mask));
}
template <class M> __device__ inline int any_sync(M mask, int p) {
    QL_HIP_CHECK_MASK(M, "__any_sync");
    return (ballot(p) & mask_bits(mask)) != 0;
}
template <class M> __device__ inline int all_sync(M mask, int p) {
    QL_HIP_CHECK_MASK(M, "__all_sync");
    const u64 m = mask_bits(mask) & ballot(1);
    return (ballot(p) & m) == m;
}

/* ----------------------------------------------------- matches */
template <class M, class T> __device__ inline mask_result match_any_sync(M mask, T v) {
    QL_HIP_CHECK_MASK(M, "__match_any_sync");
    u64 left = mask_bits(mask) & ballot(1), mine = 0;
    while (left) {   /* uniform: every lane of the mask holds the same `left` */
        const unsigned leader = (unsigned)__builtin_ctzll(left);
        const bool same = same_bits(permute(v, leader), v);
        const u64 group = ballot(same) & left;
        if (same) mine = group;
        left &= ~group;
    }
    return make_mask(mine);
}
template <class M, class T> __device__ inline mask_result match_all_sync(M mask, T v, int *pred) {
    QL_HIP_CHECK_MASK(M, "__match_all_sync");
    const u64 m = mask_bits(mask) & ballot(1);
    const unsigned leader = m ? (unsigned)__builtin_ctzll(m) : __lane_id();
    const bool all = (ballot(same_bits(permute(v, leader), v)) & m) == m;
    *pred = all;
    return make_mask(all ? mask_bits(mask) : 0ull);
}

/* ----------------------------------------------------- reductions (sm_80) */
template <class M, class T, class Op> __device__ inline T reduce_over(M mask, T v, Op op) {
    u64 left = mask_bits(mask) & ballot(1);
    if (!left) return v;   /* an empty mask: undefined in CUDA */
    T acc = permute(v, (unsigned)__builtin_ctzll(left));
    left &= left - 1;
    while (left) {
        acc = op(acc, permute(v, (unsigned)__builtin_ctzll(left)));
        left &= left - 1;
    }
    return acc;
}
struct op_add { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct op_min { template <class T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
struct op_max { template <class T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct op_and { template <class T> __device__ T operator()(T a, T b) const { return a & b; } };
struct op_or { template <class T> __device__ T operator()(T a, T b) const { return a | b; } };
struct op_xor { template <class T> __device__ T operator()(T a, T b) const { return a ^ b; } };
#define QL_HIP_REDUCE(name, op, T)                                         \
    template <class M> __device__ inline T name(M mask, T v) {            \
        QL_HIP_CHECK_MASK(M, "__" #name);                                 \
        return reduce_over(mask, v, op());                                \
    }
QL_HIP_REDUCE(reduce_add_sync, op_add, int) QL_HIP_REDUCE(reduce_add_sync, op_add, unsigned)
QL_HIP_REDUCE(reduce_min_sync, op_min, int) QL_HIP_REDUCE(reduce_min_sync, op_min, unsigned)
QL_HIP_REDUCE(reduce_max_sync, op_max, int) QL_HIP_REDUCE(reduce_max_sync, op_max, unsigned)
QL_HIP_REDUCE(reduce_and_sync, op_and, unsigned)
QL_HIP_REDUCE(reduce_or_sync, op_or, unsigned)
QL_HIP_REDUCE(reduce_xor_sync, op_xor, unsigned)
#undef QL_HIP_REDUCE

/* ----------------------------------------------------- __syncwarp
 * The lanes of a wavefront run in lockstep; this orders their memory
 * accesses (a wavefront-scope release/acquire around a wave barrier).
 * Unlike CUDA (independent thread scheduling) lanes on divergent paths
 * cannot meet here: the lanes of the mask must be converged. */
__device__ inline void syncwarp(u64 = ~0ull) {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

}  // namespace ql_hip

#define __shfl_sync ql_hip::shfl_sync
#define __shfl_up_sync ql_hip::shfl_up_sync
#define __shfl_down_sync ql_hip::shfl_down_sync
#define __shfl_xor_sync ql_hip::shfl_xor_sync
#define __ballot_sync ql_hip::ballot_sync
#define __any_sync ql_hip::any_sync
#define __all_sync ql_hip::all_sync
#define __activemask ql_hip::activemask
#define __match_any_sync ql_hip::match_any_sync
#define __match_all_sync ql_hip::match_all_sync
#define __reduce_add_sync ql_hip::reduce_add_sync
#define __reduce_min_sync ql_hip::reduce_min_sync
#define __reduce_max_sync ql_hip::reduce_max_sync
#define __reduce_and_sync ql_hip::reduce_and_sync
#define __reduce_or_sync ql_hip::reduce_or_sync
#define __reduce_xor_sync ql_hip::reduce_xor_sync
#define __syncwarp ql_hip::syncwarp

#endif

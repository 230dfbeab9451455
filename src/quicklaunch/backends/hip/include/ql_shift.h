/* ql_shift.h: CUDA's shift semantics for the quicklaunch CPU device and
 * hiprtc (the same file in backends/cpu/include and backends/hip/include).
 *
 * On an NVIDIA GPU `x << n` and `x >> n` compile to PTX shl/shr, whose
 * count is an unsigned 32-bit value (a 64-bit count is truncated to its low
 * 32 bits) clamped to the operand's width: a 32-bit `x << 32` is 0, `x >> 40`
 * is 0 for an unsigned x and the sign (0 or -1) for a signed one; the same
 * for 64-bit operands at 64. x86 and AArch64 take the count modulo the width
 * instead (`x << 32 == x`), and C++ calls it undefined.
 *
 * The CPU compile (backends/cpu/shifts.py) rewrites each built-in shift of
 * an integer whose count is not a constant in range, `x << n`, into
 * `x << __ql_clamp(n)`: the count becomes a ql_shift::count, whose operators
 * below compute the GPU's result. Only the count is wrapped, so the
 * operator, its precedence and the line stay where the user wrote them.
 * The operators are constexpr and always inlined: a count known after
 * inlining (a template argument, a constant argument) folds to the plain
 * shift, and a run-time one costs a compare and a select, which vectorise.
 * A left operand that is not an integer (a class with its own operator<<
 * in a template) gets its own operator with the count unwrapped. */
#ifndef QL_SHIFT_H
#define QL_SHIFT_H

/* __host__ __device__: empty on the CPU device; on hiprtc (which gets the
 * same file and rewrite: backends/hip/clamp.py) device code calls these. */
#if defined(__clang__)
#define QL_SHIFT_FN __host__ __device__ constexpr inline __attribute__((always_inline))
#else
#define QL_SHIFT_FN __host__ __device__ constexpr inline __attribute__((always_inline, artificial))
#endif

namespace ql_shift {

template <class T> struct uns { typedef void type; };   /* integers: their unsigned type */
template <> struct uns<int> { typedef unsigned int type; };
template <> struct uns<unsigned int> { typedef unsigned int type; };
template <> struct uns<long> { typedef unsigned long type; };
template <> struct uns<unsigned long> { typedef unsigned long type; };
template <> struct uns<long long> { typedef unsigned long long type; };
template <> struct uns<unsigned long long> { typedef unsigned long long type; };
#ifdef __SIZEOF_INT128__
template <> struct uns<__int128> { typedef unsigned __int128 type; };
template <> struct uns<unsigned __int128> { typedef unsigned __int128 type; };
#endif
template <class T> struct strip { typedef T type; };
template <class T> struct strip<T &> { typedef T type; };
template <class T> struct strip<T &&> { typedef T type; };
template <class T> struct strip<const T> { typedef T type; };
template <class T> struct strip<volatile T> { typedef T type; };
template <class T> struct strip<const volatile T> { typedef T type; };
template <class T> T &&value();   /* declval, for unevaluated operands only */
template <class...> struct always_void { typedef void type; };
template <class T> struct is_void { static constexpr bool value = false; };
template <> struct is_void<void> { static constexpr bool value = true; };

/* promoted<A>::type: what `+a` is (the type a built-in shift computes in),
 * when that is an integer; `ok` false for anything else. */
template <class A, class = void> struct promoted { static constexpr bool ok = false; };
template <class A>
struct promoted<A, typename always_void<decltype(+value<A>())>::type> {
    typedef typename strip<decltype(+value<A>())>::type type;
    static constexpr bool ok = !is_void<typename uns<type>::type>::value;
};
template <bool C, class T> struct when {};
template <class T> struct when<true, T> { typedef T type; };

template <class B> struct count { B v; };

/* Branch-free (an all-ones or zero mask, not a conditional): a count that
 * is loop-invariant then gives GCC no condition to unswitch loops on, which
 * multiplied the loop's copies and cost 5x on a shift-heavy hash. */
template <class P> QL_SHIFT_FN P shl(P x, unsigned c) {
    typedef typename uns<P>::type U;
    const unsigned w = sizeof(P) * 8;
    const U keep = (U)0 - (U)(c < w);
    return (P)((U)((U)x << (c & (w - 1))) & keep);
}
template <class P> QL_SHIFT_FN P shr(P x, unsigned c) {
    typedef typename uns<P>::type U;
    const unsigned w = sizeof(P) * 8;
    const U keep = (U)0 - (U)(c < w);
    if ((P)-1 < (P)0) {             /* signed: the sign fills a clamped shift */
        const U sign = (U)0 - (U)(x < 0);
        return (P)(((U)(x >> (c & (w - 1))) & keep) | (sign & ~keep));
    }
    return (P)((U)(x >> (c & (w - 1))) & keep);
}
template <class B> QL_SHIFT_FN unsigned bits(const count<B> &c) {
    return (unsigned)c.v;           /* a 64-bit count: its low 32 bits, as PTX */
}

/* integers (and unscoped enums, through their promotion) */
template <class A, class B>
QL_SHIFT_FN typename when<promoted<A>::ok, typename promoted<A>::type>::type
operator<<(A a, count<B> c) { return shl<typename promoted<A>::type>(+a, bits(c)); }
template <class A, class B>
QL_SHIFT_FN typename when<promoted<A>::ok, typename promoted<A>::type>::type
operator>>(A a, count<B> c) { return shr<typename promoted<A>::type>(+a, bits(c)); }
template <class A, class B>
QL_SHIFT_FN typename when<promoted<A>::ok, A &>::type operator<<=(A &a, count<B> c) {
    return a = (A)shl<typename promoted<A>::type>(+a, bits(c));
}
template <class A, class B>
QL_SHIFT_FN typename when<promoted<A>::ok, A &>::type operator>>=(A &a, count<B> c) {
    return a = (A)shr<typename promoted<A>::type>(+a, bits(c));
}

/* anything else (a class in a template): its own operator, count unwrapped */
template <class A, class B>
QL_SHIFT_FN auto operator<<(A &&a, count<B> c)
    -> typename when<!promoted<A>::ok, decltype(static_cast<A &&>(a) << c.v)>::type {
    return static_cast<A &&>(a) << c.v;
}
template <class A, class B>
QL_SHIFT_FN auto operator>>(A &&a, count<B> c)
    -> typename when<!promoted<A>::ok, decltype(static_cast<A &&>(a) >> c.v)>::type {
    return static_cast<A &&>(a) >> c.v;
}
template <class A, class B>
QL_SHIFT_FN auto operator<<=(A &&a, count<B> c)
    -> typename when<!promoted<A>::ok, decltype(static_cast<A &&>(a) <<= c.v)>::type {
    return static_cast<A &&>(a) <<= c.v;
}
template <class A, class B>
QL_SHIFT_FN auto operator>>=(A &&a, count<B> c)
    -> typename when<!promoted<A>::ok, decltype(static_cast<A &&>(a) >>= c.v)>::type {
    return static_cast<A &&>(a) >>= c.v;
}

}  // namespace ql_shift

template <class B> QL_SHIFT_FN ql_shift::count<B> __ql_clamp(B n) { return {n}; }

#endif /* QL_SHIFT_H */

/* CUDA's cache-hint loads and stores (__ldcg, __ldca, __ldcs, __ldlu,
 * __ldcv; __stwb, __stcg, __stcs, __stwt) for every type, for hiprtc.
 * AMD GPUs have no per-access equivalent a kernel can name portably, so
 * each is an ordinary access (the results are the same; only caching
 * differs). HIP's own overloads (__ldg's, the __half ones)
 * stay: a non-template overload wins over these templates. */
#ifndef QL_HIP_CACHE_HINTS_H
#define QL_HIP_CACHE_HINTS_H
template <class T> struct ql_same_type { typedef T type; };
#define QL_HIP_LOAD(name)                                                         \
    template <class T> __device__ __forceinline__ T name(const T *p) { return *p; }
#define QL_HIP_STORE(name)                                                        \
    template <class T>                                                           \
    __device__ __forceinline__ void name(T *p, typename ql_same_type<T>::type v) { *p = v; }
QL_HIP_LOAD(__ldg)
QL_HIP_LOAD(__ldcg)
QL_HIP_LOAD(__ldca)
QL_HIP_LOAD(__ldcs)
QL_HIP_LOAD(__ldlu)
QL_HIP_STORE(__stwb)
QL_HIP_STORE(__stcg)
QL_HIP_STORE(__stcs)
QL_HIP_LOAD(__ldcv)
QL_HIP_STORE(__stwt)
#undef QL_HIP_LOAD
#undef QL_HIP_STORE
#endif

/* cub::ThreadLoad and cub::ThreadStore for the quicklaunch CPU device: the
 * cache modifiers are hints a CPU has no use for, so each is a plain load or
 * store (LOAD_VOLATILE / STORE_VOLATILE through a volatile access). */
#ifndef QL_CUB_THREAD_LOAD_CUH
#define QL_CUB_THREAD_LOAD_CUH

#include "../ql_cub_core.cuh"

namespace cub {

enum CacheLoadModifier {
    LOAD_DEFAULT, LOAD_CA, LOAD_CG, LOAD_CS, LOAD_CV, LOAD_LDG, LOAD_VOLATILE
};
enum CacheStoreModifier { STORE_DEFAULT, STORE_WB, STORE_CG, STORE_CS, STORE_WT, STORE_VOLATILE };

template <CacheLoadModifier M, class It> QL_FN auto ThreadLoad(It it) {
    typedef typename detail::value_of<It>::type V;
    if constexpr (M == LOAD_VOLATILE || M == LOAD_CV) {
        if constexpr (detail::value_of<It>::pointer) return (V) * (const volatile V *)&*it;
        else return (V)*it;
    } else {
        return (V)*it;
    }
}
template <CacheStoreModifier M, class It, class T> QL_FN void ThreadStore(It it, T v) {
    typedef typename detail::value_of<It>::type V;
    if constexpr ((M == STORE_VOLATILE || M == STORE_WT) && detail::value_of<It>::pointer)
        *(volatile V *)&*it = (V)v;
    else
        *it = v;
}

}  // namespace cub

#endif /* QL_CUB_THREAD_LOAD_CUH */

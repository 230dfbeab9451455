/* CUDA's atomic functions and memory fences for the quicklaunch CPU device.
 * Part of cuda_shim.h; include that instead.
 *
 * Blocks run concurrently on several OS threads, so these are real atomics
 * (GCC __atomic builtins, relaxed order like CUDA's atomics; the fences are
 * sequentially consistent). Each returns the old value. The _block and
 * _system variants are the same functions. */
#ifndef QL_ATOMICS_H
#define QL_ATOMICS_H

#define QL_RELAXED __ATOMIC_RELAXED
#ifdef QL_MEMCHECK   /* atomics touch the user's memory: checked (ql_memcheck.h) */
#pragma push_macro("QL_FN")
#undef QL_FN
#define QL_FN QL_FN_CHECKED
#endif

/* Read-modify-write by compare-and-swap: *p = op(*p), returning the old. */
template <typename T, typename Op>
QL_FN T ql_atomic_update(T *p, Op op) {
    T old, desired;
    __atomic_load(p, &old, QL_RELAXED);
    do {
        desired = op(old);
    } while (!__atomic_compare_exchange(p, &old, &desired, true, QL_RELAXED, QL_RELAXED));
    return old;
}

/* Integer operations the builtins do directly. */
#define QL_ATOMIC_INT(T)                                                              \
    QL_FN T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, QL_RELAXED); }     \
    QL_FN T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, QL_RELAXED); }     \
    QL_FN T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, QL_RELAXED); }       \
    QL_FN T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, QL_RELAXED); }     \
    QL_FN T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, QL_RELAXED); }   \
    QL_FN T atomicCAS(T *p, T compare, T v) {                                         \
        __atomic_compare_exchange_n(p, &compare, v, false, QL_RELAXED, QL_RELAXED);   \
        return compare;                                                               \
    }
QL_ATOMIC_INT(int)
QL_ATOMIC_INT(unsigned int)
QL_ATOMIC_INT(unsigned long long)
#undef QL_ATOMIC_INT

QL_FN int atomicSub(int *p, int v) { return __atomic_fetch_sub(p, v, QL_RELAXED); }
QL_FN unsigned int atomicSub(unsigned int *p, unsigned int v) {
    return __atomic_fetch_sub(p, v, QL_RELAXED);
}
QL_FN unsigned short atomicCAS(unsigned short *p, unsigned short compare, unsigned short v) {
    __atomic_compare_exchange_n(p, &compare, v, false, QL_RELAXED, QL_RELAXED);
    return compare;
}

#define QL_ATOMIC_MINMAX(T)                                                           \
    QL_FN T atomicMin(T *p, T v) {                                                    \
        return ql_atomic_update(p, [v](T o) { return v < o ? v : o; });               \
    }                                                                                 \
    QL_FN T atomicMax(T *p, T v) {                                                    \
        return ql_atomic_update(p, [v](T o) { return v > o ? v : o; });               \
    }
QL_ATOMIC_MINMAX(int)
QL_ATOMIC_MINMAX(unsigned int)
QL_ATOMIC_MINMAX(long long)
QL_ATOMIC_MINMAX(unsigned long long)
#undef QL_ATOMIC_MINMAX

/* CUDA's wrap-around counters. */
QL_FN unsigned int atomicInc(unsigned int *p, unsigned int v) {
    return ql_atomic_update(p, [v](unsigned int o) { return o >= v ? 0u : o + 1u; });
}
QL_FN unsigned int atomicDec(unsigned int *p, unsigned int v) {
    return ql_atomic_update(p, [v](unsigned int o) { return (o == 0u || o > v) ? v : o - 1u; });
}

/* Floating point: compare-and-swap on the value's bits. */
QL_FN float atomicAdd(float *p, float v) {
    return ql_atomic_update(p, [v](float o) { return o + v; });
}
QL_FN double atomicAdd(double *p, double v) {
    return ql_atomic_update(p, [v](double o) { return o + v; });
}
QL_FN float atomicExch(float *p, float v) {
    float old;
    __atomic_exchange(p, &v, &old, QL_RELAXED);
    return old;
}
QL_FN __half atomicAdd(__half *p, __half v) {
    return ql_atomic_update(p, [v](__half o) { return __hadd(o, v); });
}
QL_FN __half2 atomicAdd(__half2 *p, __half2 v) {
    return ql_atomic_update(p, [v](__half2 o) { return __hadd2(o, v); });
}
QL_FN __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
    return ql_atomic_update(p, [v](__nv_bfloat16 o) { return __hadd(o, v); });
}
QL_FN __nv_bfloat162 atomicAdd(__nv_bfloat162 *p, __nv_bfloat162 v) {
    return ql_atomic_update(p, [v](__nv_bfloat162 o) { return __hadd2(o, v); });
}
/* Vector adds (sm_90): atomic per element, as CUDA documents. */
QL_FN float2 atomicAdd(float2 *p, float2 v) {
    return make_float2(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y));
}
QL_FN float4 atomicAdd(float4 *p, float4 v) {
    return make_float4(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z),
                       atomicAdd(&p->w, v.w));
}

#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicSub_block atomicSub
#define atomicSub_system atomicSub
#define atomicExch_block atomicExch
#define atomicExch_system atomicExch
#define atomicMin_block atomicMin
#define atomicMin_system atomicMin
#define atomicMax_block atomicMax
#define atomicMax_system atomicMax
#define atomicInc_block atomicInc
#define atomicInc_system atomicInc
#define atomicDec_block atomicDec
#define atomicDec_system atomicDec
#define atomicCAS_block atomicCAS
#define atomicCAS_system atomicCAS
#define atomicAnd_block atomicAnd
#define atomicAnd_system atomicAnd
#define atomicOr_block atomicOr
#define atomicOr_system atomicOr
#define atomicXor_block atomicXor
#define atomicXor_system atomicXor

/* Fences. A block's threads share one OS thread (tier 1 loops, tier 2
 * fibers), so the block-scope fence only has to stop compiler reordering. */
QL_FN void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
QL_FN void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
QL_FN void __threadfence_block(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

#ifdef QL_MEMCHECK
#pragma pop_macro("QL_FN")
#endif

#endif /* QL_ATOMICS_H */

/* CUDA's built-in vector types (char1 .. double4, dim3) and make_<type>()
 * for the quicklaunch CPU device. Part of cuda_shim.h; include that instead.
 *
 * Sizes and alignments follow CUDA's vector_types.h on LP64 Linux:
 *   n == 1 and n == 3: the element's natural alignment;
 *   n == 2: 2 * sizeof(element);  n == 4: min(4 * sizeof(element), 16).
 * The types are plain aggregates (brace initialisation works, trivially
 * copyable), exactly as in CUDA; no arithmetic operators are defined, since
 * CUDA defines none either (helper_math.h is a user-side header). */
#ifndef QL_VECTOR_TYPES_H
#define QL_VECTOR_TYPES_H

#define QL_VEC_ALIGN(a) __attribute__((aligned(a)))

/* One family: name##1 .. name##4 of element type T, with the alignments of
 * the 2- and 4-element members, and their make_ functions. */
#define QL_VECTOR_FAMILY(name, T, align2, align4)                                  \
    struct name##1 { T x; };                                                       \
    struct QL_VEC_ALIGN(align2) name##2 { T x, y; };                               \
    struct name##3 { T x, y, z; };                                                 \
    struct QL_VEC_ALIGN(align4) name##4 { T x, y, z, w; };                         \
    static inline constexpr name##1 make_##name##1(T x) { return name##1{x}; }     \
    static inline constexpr name##2 make_##name##2(T x, T y) {                     \
        return name##2{x, y};                                                      \
    }                                                                              \
    static inline constexpr name##3 make_##name##3(T x, T y, T z) {                \
        return name##3{x, y, z};                                                   \
    }                                                                              \
    static inline constexpr name##4 make_##name##4(T x, T y, T z, T w) {           \
        return name##4{x, y, z, w};                                                \
    }

QL_VECTOR_FAMILY(char, signed char, 2, 4)
QL_VECTOR_FAMILY(uchar, unsigned char, 2, 4)
QL_VECTOR_FAMILY(short, short, 4, 8)
QL_VECTOR_FAMILY(ushort, unsigned short, 4, 8)
QL_VECTOR_FAMILY(int, int, 8, 16)
QL_VECTOR_FAMILY(uint, unsigned int, 8, 16)
QL_VECTOR_FAMILY(long, long int, 2 * sizeof(long int), 16)
QL_VECTOR_FAMILY(ulong, unsigned long int, 2 * sizeof(unsigned long int), 16)
QL_VECTOR_FAMILY(longlong, long long int, 16, 16)
QL_VECTOR_FAMILY(ulonglong, unsigned long long int, 16, 16)
QL_VECTOR_FAMILY(float, float, 8, 16)
QL_VECTOR_FAMILY(double, double, 16, 16)

#undef QL_VECTOR_FAMILY

/* dim3: uint3 with CUDA's constructors. The constructors are constexpr so a
 * `static thread_local dim3` is constant-initialised (no TLS init wrapper on
 * every access). */
struct dim3 {
    unsigned int x, y, z;
    QL_MEMBER constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    QL_MEMBER constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    QL_MEMBER constexpr operator uint3() const { return uint3{x, y, z}; }
};

#endif /* QL_VECTOR_TYPES_H */

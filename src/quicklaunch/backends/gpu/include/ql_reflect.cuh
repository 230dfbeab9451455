// Kernel parameter reflection for the GPU compilers: NVRTC (quicklaunch.cuda)
// and hiprtc (quicklaunch.hip).
//
// quicklaunch appends, after the user's source, this header and one line per
// kernel (or name expression) E:
//     QL_REFLECT(__ql_reflect_<i>, E)
// which defines a __device__ table initialised, by the compiler, with each
// parameter's size, alignment and kind (enum ql_kind of quicklaunch's one
// kind table, kinds.h, handed to the compiler as ql_kinds.h). The tables are
// read back from the compiled code (the PTX, or the AMDGPU code object's
// data), so nothing about a parameter's layout is guessed in Python.
//
// Table layout (32-bit words): QL_REFLECT_MAGIC, QL_REFLECT_VERSION, nparams,
// then (size, align, kind) per parameter, then a (0, 0, 0) sentinel row.
//
// A reference parameter is passed as a pointer by the ABI: it is reported
// with a pointer's size and alignment and kind QL_KIND_INVALID (quicklaunch
// refuses to launch it). __half and __nv_bfloat16 are recognised only when
// the user's source included cuda_fp16.h / cuda_bf16.h (their guards).
//
// Every name here starts with ql_ / QL_: the user's macros are in effect.
#ifndef QL_REFLECT_CUH
#define QL_REFLECT_CUH

#if __cplusplus < 201103L
#error "quicklaunch reflects kernel parameters with C++11: compile with -std=c++11 or later"
#define QL_REFLECT(var, ...)
#else

#include "ql_kinds.h"

#define QL_REFLECT_MAGIC 0x46524c51u  /* "QLRF" as little-endian bytes */
#define QL_REFLECT_VERSION 1u

namespace ql_reflect {

template <class QlT> struct ql_is_const { enum { ql_value = 0 }; };
template <class QlT> struct ql_is_const<const QlT> { enum { ql_value = 1 }; };

// Integers: the width and signedness the compiler gives the type.
template <unsigned QlSize, bool QlSigned> struct ql_int_kind { enum { ql_value = QL_KIND_STRUCT }; };
template <> struct ql_int_kind<1, true> { enum { ql_value = QL_KIND_I8 }; };
template <> struct ql_int_kind<2, true> { enum { ql_value = QL_KIND_I16 }; };
template <> struct ql_int_kind<4, true> { enum { ql_value = QL_KIND_I32 }; };
template <> struct ql_int_kind<8, true> { enum { ql_value = QL_KIND_I64 }; };
template <> struct ql_int_kind<1, false> { enum { ql_value = QL_KIND_U8 }; };
template <> struct ql_int_kind<2, false> { enum { ql_value = QL_KIND_U16 }; };
template <> struct ql_int_kind<4, false> { enum { ql_value = QL_KIND_U32 }; };
template <> struct ql_int_kind<8, false> { enum { ql_value = QL_KIND_U64 }; };

// The kind of one parameter type; anything unrecognised by value is a struct.
template <class QlT, bool QlEnum = __is_enum(QlT)> struct ql_kind_of {
    enum { ql_value = QL_KIND_STRUCT };
};
template <class QlT> struct ql_kind_of<QlT, true> {   // enums travel as their underlying type
    enum { ql_value = ql_kind_of<__underlying_type(QlT)>::ql_value };
};
template <class QlT> struct ql_kind_of<QlT *, false> {
    enum { ql_value = ql_is_const<QlT>::ql_value ? QL_KIND_PTR_CONST : QL_KIND_PTR };
};
template <class QlT> struct ql_kind_of<const QlT, false> {   // cv-qualified: as the plain type
    enum { ql_value = ql_kind_of<QlT>::ql_value };
};
template <class QlT> struct ql_kind_of<volatile QlT, false> {
    enum { ql_value = ql_kind_of<QlT>::ql_value };
};
template <class QlT> struct ql_kind_of<const volatile QlT, false> {
    enum { ql_value = ql_kind_of<QlT>::ql_value };
};
template <class QlT> struct ql_kind_of<QlT &, false> { enum { ql_value = QL_KIND_INVALID }; };
template <class QlT> struct ql_kind_of<QlT &&, false> { enum { ql_value = QL_KIND_INVALID }; };

#define QL_REFLECT_KIND(type, code) \
    template <> struct ql_kind_of<type, false> { enum { ql_value = code }; };
QL_REFLECT_KIND(bool, QL_KIND_BOOL)
QL_REFLECT_KIND(float, QL_KIND_F32)
QL_REFLECT_KIND(double, QL_KIND_F64)
#if defined(__CUDA_FP16_H__)
QL_REFLECT_KIND(__half, QL_KIND_F16)
#endif
#if defined(__CUDA_BF16_H__)
QL_REFLECT_KIND(__nv_bfloat16, QL_KIND_BF16)
#endif
#undef QL_REFLECT_KIND
#define QL_REFLECT_INT(type) \
    template <> struct ql_kind_of<type, false> { \
        enum { ql_value = ql_int_kind<sizeof(type), ((type)-1 < (type)0)>::ql_value }; \
    };
QL_REFLECT_INT(char) QL_REFLECT_INT(signed char) QL_REFLECT_INT(unsigned char)
QL_REFLECT_INT(short) QL_REFLECT_INT(unsigned short)
QL_REFLECT_INT(int) QL_REFLECT_INT(unsigned int)
QL_REFLECT_INT(long) QL_REFLECT_INT(unsigned long)
QL_REFLECT_INT(long long) QL_REFLECT_INT(unsigned long long)
QL_REFLECT_INT(char16_t) QL_REFLECT_INT(char32_t) QL_REFLECT_INT(wchar_t)
#undef QL_REFLECT_INT

// What the ABI passes: a reference travels as a pointer.
template <class QlT> struct ql_passed { typedef QlT ql_type; };
template <class QlT> struct ql_passed<QlT &> { typedef QlT *ql_type; };
template <class QlT> struct ql_passed<QlT &&> { typedef QlT *ql_type; };

struct ql_row { unsigned ql_size, ql_align, ql_kind; };

template <unsigned QlN> struct ql_table {
    unsigned ql_magic, ql_version, ql_count;
    ql_row ql_rows[QlN + 1];   // + the sentinel: a kernel may take no parameters
};

template <class QlF> struct ql_sig;   // only kernels (functions returning void)

template <class... QlA> struct ql_sig<void (*)(QlA...)> {
    typedef ql_table<sizeof...(QlA)> ql_type;
    static constexpr __host__ __device__ ql_type ql_make() {
        return ql_type{QL_REFLECT_MAGIC, QL_REFLECT_VERSION, (unsigned)sizeof...(QlA),
                       {{(unsigned)sizeof(typename ql_passed<QlA>::ql_type),
                         (unsigned)alignof(typename ql_passed<QlA>::ql_type),
                         (unsigned)ql_kind_of<QlA>::ql_value}...,
                        {0u, 0u, 0u}}};
    }
};

}  // namespace ql_reflect

// One table, named `var` (C linkage: its PTX name is `var`), for the kernel
// or name expression given as the remaining arguments (they may hold commas).
#define QL_REFLECT(var, ...)                                                     \
    extern "C" __device__ ::ql_reflect::ql_sig<decltype(&__VA_ARGS__)>::ql_type var = \
        ::ql_reflect::ql_sig<decltype(&__VA_ARGS__)>::ql_make();

#endif  // C++11
#endif

/* quicklaunch: the one parameter-kind table.
 *
 * Every parameter of a kernel has a kind: the compiler reflects it (the CPU
 * shim's ql_cpu_export.h, the GPU reflection ql_reflect.cuh), the C launcher
 * reads it as the parameter's type code (_launch.c), and Python names it
 * (quicklaunch/kinds.py parses the X(...) rows below). Nothing else defines
 * kind numbers. The numbers are part of the CPU ABI (ql_cpu_abi.h's
 * QL_CPU_ABI_VERSION): append, never renumber.
 *
 * Plain C, no includes: it is compiled by the host C compiler, the host C++
 * compiler (CPU kernels), NVRTC and hiprtc.
 *
 *      tag         code  name            */
#ifndef QL_KINDS_H
#define QL_KINDS_H

#define QL_KINDS(X)                                                            \
    X(PTR,          1,  "pointer")        /* pointer to writable memory */     \
    X(PTR_CONST,    2,  "const pointer")  /* pointer to const memory */        \
    X(I8,           3,  "int8")                                                \
    X(I16,          4,  "int16")                                               \
    X(I32,          5,  "int32")                                               \
    X(I64,          6,  "int64")                                               \
    X(U8,           7,  "uint8")                                               \
    X(U16,          8,  "uint16")                                              \
    X(U32,          9,  "uint32")                                              \
    X(U64,          10, "uint64")                                              \
    X(F16,          11, "half")                                                \
    X(BF16,         12, "bfloat16")                                            \
    X(F32,          13, "float32")                                             \
    X(F64,          14, "float64")                                             \
    X(BOOL,         15, "bool")                                                \
    X(STRUCT,       16, "struct")   /* anything else by value: `size` bytes */ \
    X(INVALID,      17, "invalid")  /* a reference or array: not a parameter */

enum ql_kind {
#define QL_KIND_ENUM_ROW(tag, code, name) QL_KIND_##tag = code,
    QL_KINDS(QL_KIND_ENUM_ROW)
#undef QL_KIND_ENUM_ROW
    QL_KIND_COUNT
};

/* The kinds whose C type the launcher's messages spell otherwise than the
 * kind's name above ("expects a real number (C type float)"): the CUDA
 * spelling. Every other kind is shown by its name. */
#define QL_KIND_C_SPELLINGS(X)                                                 \
    X(F16,  "__half")                                                          \
    X(BF16, "__nv_bfloat16")                                                   \
    X(F32,  "float")                                                           \
    X(F64,  "double")

#endif /* QL_KINDS_H */

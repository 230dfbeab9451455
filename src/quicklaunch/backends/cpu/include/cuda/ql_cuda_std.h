/* What quicklaunch's <cuda/std/...> headers for the CPU device share: libcu++'s
 * cuda::std is the host C++ library's std (the same types and functions:
 * exact where libcu++ follows the standard), with the names C++17's library
 * lacks (atomic_ref) defined in <cuda/std/atomic>. Each header includes its
 * host counterpart between these macros, which take out the shim's
 * __noinline__ (libstdc++ spells __attribute__((__noinline__)) in places). */
#ifndef QL_CUDA_STD_H
#define QL_CUDA_STD_H
#include "cuda_shim.h"
namespace cuda {
namespace std {
using namespace ::std;
}
}
#define QL_CUDA_STD_HOST_BEGIN _Pragma("push_macro(\"__noinline__\")")
#define QL_CUDA_STD_HOST_END _Pragma("pop_macro(\"__noinline__\")")
#endif

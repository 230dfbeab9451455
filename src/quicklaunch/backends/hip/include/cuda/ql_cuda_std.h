/* What quicklaunch's <cuda/std/...> headers for hiprtc share: cuda::std is the
 * std of the stand-in headers both GPU devices share (backends/gpu/include:
 * <cstdint>, <limits>, <utility>, <type_traits>, ...), and the headers that
 * have no such stand-in (<cuda/std/array>, <functional>, <complex>, <atomic>)
 * define cuda::std's names themselves (docs/cccl.md). */
#ifndef QL_HIP_CUDA_STD_H
#define QL_HIP_CUDA_STD_H
#include <cstddef>
namespace std {}
namespace cuda {
namespace std {
using namespace ::std;
}
}
#endif

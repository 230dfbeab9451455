/* cuda.h for hiprtc (quicklaunch.hip): hiprtc pre-includes HIP's device
 * runtime, and quicklaunch its CUDA prelude (ql_hip_prelude.h), so this
 * stand-in only defines CUDA_VERSION (as CUDART_VERSION, which the compile
 * defines: quicklaunch/cuda_version.py). It lets a source that includes it
 * compile unchanged. */
#ifndef QL_HIP_CUDA_H
#define QL_HIP_CUDA_H
#ifndef CUDA_VERSION
#define CUDA_VERSION CUDART_VERSION
#endif
#endif

/* cuda_runtime.h for NVRTC and hiprtc (quicklaunch.cuda, quicklaunch.hip):
 * NVRTC declares the CUDA runtime's device built-ins implicitly; hiprtc
 * pre-includes HIP's device runtime, and quicklaunch its CUDA prelude
 * (hip/include/ql_hip_prelude.h). So this stand-in is empty: it lets a source
 * that includes it (for nvcc or the quicklaunch CPU device) compile unchanged. */
#ifndef QL_GPU_CUDA_RUNTIME_H
#define QL_GPU_CUDA_RUNTIME_H
#endif

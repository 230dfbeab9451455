/* cuda_runtime_api.h for NVRTC (quicklaunch.cuda): NVRTC declares the CUDA runtime's device
 * built-ins implicitly, so this stand-in is empty. It lets a source that
 * includes it (for nvcc or the quicklaunch CPU device) compile unchanged. */
#ifndef QL_NVRTC_CUDA_RUNTIME_API_H
#define QL_NVRTC_CUDA_RUNTIME_API_H
#endif

/* cuda.h for NVRTC (quicklaunch.cuda): NVRTC has no cuda.h of its own; a
 * kernel source that includes it for CUDA_VERSION compiles unchanged, with
 * CUDA_VERSION equal to the CUDART_VERSION NVRTC defines (as in the
 * toolkit, where both name the same release). The driver API's host
 * declarations are not here: kernels do not call them. */
#ifndef QL_NVRTC_CUDA_H
#define QL_NVRTC_CUDA_H
#ifndef CUDA_VERSION
#define CUDA_VERSION CUDART_VERSION
#endif
#endif

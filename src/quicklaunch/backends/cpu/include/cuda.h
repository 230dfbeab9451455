/* cuda.h for the quicklaunch CPU device: everything is in cuda_shim.h, but
 * CUDA_VERSION, which is cuda.h's (CUDART_VERSION comes from the compile:
 * quicklaunch/cuda_version.py). */
#ifndef QL_CUDA_H
#define QL_CUDA_H
#include "cuda_shim.h"
#ifndef CUDA_VERSION
#define CUDA_VERSION CUDART_VERSION
#endif

#endif

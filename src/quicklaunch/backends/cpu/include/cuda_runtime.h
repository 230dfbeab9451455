/* cuda_runtime.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_CUDA_RUNTIME_H
#define QL_CUDA_RUNTIME_H
#include "cuda_shim.h"

#endif

/* cuda_runtime_api.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_CUDA_RUNTIME_API_H
#define QL_CUDA_RUNTIME_API_H
#include "cuda_shim.h"

#endif

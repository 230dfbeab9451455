/* cuda.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_CUDA_H
#define QL_CUDA_H
#include "cuda_shim.h"

#endif

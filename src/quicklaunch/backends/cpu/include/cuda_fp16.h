/* cuda_fp16.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_CUDA_FP16_H
#define QL_CUDA_FP16_H
#include "cuda_shim.h"
#define __CUDA_FP16_H__
typedef __half half;
typedef __half2 half2;
#endif

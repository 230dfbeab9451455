/* cuda_bf16.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_CUDA_BF16_H
#define QL_CUDA_BF16_H
#include "cuda_shim.h"
#define __CUDA_BF16_H__
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
#endif

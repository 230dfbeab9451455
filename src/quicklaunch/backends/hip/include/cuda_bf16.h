/* cuda_bf16.h for hiprtc (quicklaunch.hip): __nv_bfloat16 comes with the
 * prelude (ql_hip_bf16.h). */
#ifndef QL_HIP_CUDA_BF16_H
#define QL_HIP_CUDA_BF16_H
#endif

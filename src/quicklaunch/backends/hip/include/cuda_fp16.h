/* cuda_fp16.h for hiprtc (quicklaunch.hip): HIP's __half and __half2 (with
 * CUDA's conversions and arithmetic, and the `half` / `half2` names) are
 * part of the device runtime hiprtc pre-includes. */
#ifndef QL_HIP_CUDA_FP16_H
#define QL_HIP_CUDA_FP16_H
#endif

/* vector_types.h for hiprtc (quicklaunch.hip): hiprtc pre-includes HIP's device
 * runtime, and quicklaunch its CUDA prelude (ql_hip_prelude.h), so this
 * stand-in is empty. It lets a source that includes it compile unchanged. */
#ifndef QL_HIP_VECTOR_TYPES_H
#define QL_HIP_VECTOR_TYPES_H
#endif

/* CUDA's texture-object names for hiprtc (part of ql_hip_prelude.h). HIP has
 * the fetch functions (tex1Dfetch<T>, tex1D<T>, tex2D<T>, tex3D<T> on a
 * hipTextureObject_t) under the same names; CUDA's type and enumerators are
 * its spellings here. A cudaTextureObject_t parameter is a pointer on HIP
 * (struct __hip_texture *): ql.Texture's handle goes into it. */
#ifndef QL_HIP_TEXTURE_H
#define QL_HIP_TEXTURE_H

typedef hipTextureObject_t cudaTextureObject_t;
#define cudaAddressModeWrap hipAddressModeWrap
#define cudaAddressModeClamp hipAddressModeClamp
#define cudaAddressModeMirror hipAddressModeMirror
#define cudaAddressModeBorder hipAddressModeBorder
#define cudaFilterModePoint hipFilterModePoint
#define cudaFilterModeLinear hipFilterModeLinear
#define cudaReadModeElementType hipReadModeElementType
#define cudaReadModeNormalizedFloat hipReadModeNormalizedFloat

#endif /* QL_HIP_TEXTURE_H */

/* texture_types.h for the quicklaunch CPU device: texture objects are ql_texture.h, part of cuda_shim.h. */
#ifndef QL_TEXTURE_TYPES_H
#define QL_TEXTURE_TYPES_H
#include "cuda_shim.h"
#endif

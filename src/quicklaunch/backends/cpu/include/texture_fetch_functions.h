/* texture_fetch_functions.h for the quicklaunch CPU device: texture objects are ql_texture.h, part of cuda_shim.h. */
#ifndef QL_TEXTURE_FETCH_FUNCTIONS_H
#define QL_TEXTURE_FETCH_FUNCTIONS_H
#include "cuda_shim.h"
#endif

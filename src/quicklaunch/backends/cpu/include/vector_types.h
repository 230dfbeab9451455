/* vector_types.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_VECTOR_TYPES_FWD_H
#define QL_VECTOR_TYPES_FWD_H
#include "cuda_shim.h"

#endif

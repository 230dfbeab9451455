/* vector_functions.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_VECTOR_FUNCTIONS_H
#define QL_VECTOR_FUNCTIONS_H
#include "cuda_shim.h"

#endif

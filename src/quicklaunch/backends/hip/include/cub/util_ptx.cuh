/* CUB's PTX utilities for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "CUB's PTX utilities"
#define QL_CUB_HEADER "<cub/util_ptx.cuh>"
#include "ql_cub_refused.h"

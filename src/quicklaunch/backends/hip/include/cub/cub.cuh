/* CUB's block and warp collectives for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "CUB's block and warp collectives"
#define QL_CUB_HEADER "<cub/cub.cuh>"
#include "ql_cub_refused.h"

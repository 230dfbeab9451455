/* cub::WarpReduce for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::WarpReduce"
#define QL_CUB_HEADER "<cub/warp/warp_reduce.cuh>"
#include "../ql_cub_refused.h"

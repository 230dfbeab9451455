/* cub::BlockAdjacentDifference for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::BlockAdjacentDifference"
#define QL_CUB_HEADER "<cub/block/block_adjacent_difference.cuh>"
#include "../ql_cub_refused.h"

/* cub::BlockLoad for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::BlockLoad"
#define QL_CUB_HEADER "<cub/block/block_load.cuh>"
#include "../ql_cub_refused.h"

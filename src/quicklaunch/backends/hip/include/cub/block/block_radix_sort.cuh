/* cub::BlockRadixSort for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::BlockRadixSort"
#define QL_CUB_HEADER "<cub/block/block_radix_sort.cuh>"
#include "../ql_cub_refused.h"

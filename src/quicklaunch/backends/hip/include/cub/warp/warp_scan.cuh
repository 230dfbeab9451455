/* cub::WarpScan for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::WarpScan"
#define QL_CUB_HEADER "<cub/warp/warp_scan.cuh>"
#include "../ql_cub_refused.h"

/* cub::ThreadLoad for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::ThreadLoad"
#define QL_CUB_HEADER "<cub/thread/thread_load.cuh>"
#include "../ql_cub_refused.h"

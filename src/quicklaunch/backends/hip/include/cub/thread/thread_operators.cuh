/* CUB's thread operators for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "CUB's thread operators"
#define QL_CUB_HEADER "<cub/thread/thread_operators.cuh>"
#include "../ql_cub_refused.h"

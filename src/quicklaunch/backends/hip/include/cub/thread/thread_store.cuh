/* cub::ThreadStore for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::ThreadStore"
#define QL_CUB_HEADER "<cub/thread/thread_store.cuh>"
#include "../ql_cub_refused.h"

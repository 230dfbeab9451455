/* CUB's configuration for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "CUB's configuration"
#define QL_CUB_HEADER "<cub/config.cuh>"
#include "ql_cub_refused.h"

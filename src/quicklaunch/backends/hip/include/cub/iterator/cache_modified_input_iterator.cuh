/* cub::CacheModifiedInputIterator for hiprtc: a compile error naming it (ql_cub_refused.h). */
#undef QL_CUB_PRIMITIVE
#undef QL_CUB_HEADER
#define QL_CUB_PRIMITIVE "cub::CacheModifiedInputIterator"
#define QL_CUB_HEADER "<cub/iterator/cache_modified_input_iterator.cuh>"
#include "../ql_cub_refused.h"

/* cg::inclusive_scan and cg::exclusive_scan live in cooperative_groups.h. */
#include "../cooperative_groups.h"

/* cg::reduce and its operators live in cooperative_groups.h. */
#include "../cooperative_groups.h"

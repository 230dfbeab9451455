/* cg::reduce and its operators live in cooperative_groups.h (quicklaunch.hip). */
#include "../cooperative_groups.h"

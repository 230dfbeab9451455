/* <string.h> for NVRTC and hiprtc: see ql_libc.h. */
#include "ql_libc.h"

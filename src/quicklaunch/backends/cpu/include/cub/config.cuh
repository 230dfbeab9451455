/* <cub/config.cuh> for the quicklaunch CPU device: the shared core. */
#include "ql_cub_core.cuh"

/* <cub/thread/thread_store.cuh> for the quicklaunch CPU device (thread_load.cuh). */
#include "thread_load.cuh"

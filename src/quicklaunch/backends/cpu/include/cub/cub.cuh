/* <cub/cub.cuh> for the quicklaunch CPU device: the block- and warp-level
 * collectives quicklaunch provides (docs/cccl.md). CUB's device-wide
 * algorithms (cub::DeviceReduce, ...) are host-launched and not here. */
#ifndef QL_CUB_CUB_CUH
#define QL_CUB_CUB_CUH
#include "ql_cub_core.cuh"
#include "block/block_reduce.cuh"
#include "block/block_scan.cuh"
#include "block/block_load.cuh"
#include "block/block_store.cuh"
#include "block/block_radix_sort.cuh"
#include "block/block_exchange.cuh"
#include "block/block_histogram.cuh"
#include "block/block_discontinuity.cuh"
#include "thread/thread_load.cuh"
#include "iterator/cache_modified_input_iterator.cuh"
#include "warp/warp_reduce.cuh"
#include "warp/warp_scan.cuh"
#endif

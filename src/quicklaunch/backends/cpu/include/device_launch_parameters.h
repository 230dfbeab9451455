/* device_launch_parameters.h for the quicklaunch CPU device: everything is in cuda_shim.h. */
#ifndef QL_DEVICE_LAUNCH_PARAMETERS_H
#define QL_DEVICE_LAUNCH_PARAMETERS_H
#include "cuda_shim.h"

#endif

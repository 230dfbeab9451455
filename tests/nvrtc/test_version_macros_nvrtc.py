"""The version macros NVRTC defines are the ones the CPU device and hiprtc
get (quicklaunch/cuda_version.py): NVRTC's own, from the wheel installed."""
import quicklaunch as ql
from quicklaunch import cuda_version
from quicklaunch.backends.cuda import nvrtc

CHECK_TEMPLATE = r"""
#include <cuda.h>
static_assert(CUDART_VERSION == %d, "CUDART_VERSION");
static_assert(CUDA_VERSION == CUDART_VERSION, "CUDA_VERSION");
static_assert(__CUDACC_VER_MAJOR__ == %d && __CUDACC_VER_MINOR__ == %d, "__CUDACC_VER_*__");
extern "C" __global__ void k(int *o) { *o = CUDART_VERSION; }
"""


def test_nvrtc_defines_what_the_cpu_device_defines():
    lib = nvrtc.load()
    major, minor, _ = cuda_version.target()
    # the wheel the CPU device reads is the NVRTC quicklaunch loads
    assert tuple(lib.version[:2]) == (major, minor)
    ql.cuda.compile(CHECK_TEMPLATE % (major * 1000 + minor * 10, major, minor), arch="sm_90")

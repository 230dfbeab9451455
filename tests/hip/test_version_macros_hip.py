"""hiprtc gets the CUDA version macros NVRTC has (quicklaunch/cuda_version.py),
and a user's own -D wins."""
import pytest

import quicklaunch as ql
from quicklaunch import cuda_version

CHECK_TEMPLATE = r"""
#include <cuda.h>
static_assert(CUDART_VERSION == %d, "CUDART_VERSION");
static_assert(CUDA_VERSION == CUDART_VERSION, "CUDA_VERSION");
static_assert(__CUDACC_VER_MAJOR__ == %d && __CUDACC_VER_MINOR__ == %d, "__CUDACC_VER_*__");
extern "C" __global__ void k(int *o) { *o = CUDART_VERSION; }
"""


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_hiprtc_has_the_version_macros(arch):
    major, minor, _ = cuda_version.target()
    ql.hip.compile(CHECK_TEMPLATE % (major * 1000 + minor * 10, major, minor), arch=arch)


def test_users_define_wins():
    ql.hip.compile(CHECK_TEMPLATE % (11020, 11, 2), arch="gfx90a",
                   options=["-DCUDART_VERSION=11020", "-D__CUDACC_VER_MAJOR__=11",
                            "-D__CUDACC_VER_MINOR__=2"])

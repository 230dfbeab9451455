"""The CPU device compiles as the device pass of an architecture:
__CUDA_ARCH__ is defined (default 900) and chosen with NVRTC's options."""
import numpy as np
import pytest

import quicklaunch as ql

ARCH_SOURCE = r"""
#include <cmath>
#include <algorithm>
__global__ void which_arch(int *out) {
#ifdef __CUDA_ARCH__
    out[threadIdx.x] = __CUDA_ARCH__;
#else
    out[threadIdx.x] = -1;
#endif
}
"""

WARP_SUM = r"""
__global__ void warp_sums(const int *x, int *out, int *path) {
    int v = x[blockIdx.x * 32 + threadIdx.x];
#if __CUDA_ARCH__ >= 800
    int s = __reduce_add_sync(0xffffffffu, v);
    if (threadIdx.x == 0) path[blockIdx.x] = 1;
#else
    int s = v;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) path[blockIdx.x] = 2;
#endif
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""


def _arch(options):
    mod = ql.compile(ARCH_SOURCE, device="cpu", options=options)
    out = np.full(8, -7, np.int32)
    mod.which_arch[1, 8](out)
    ql.device("cpu").synchronize()
    return set(out.tolist())


@pytest.mark.parametrize("options, arch", [
    ((), 900), (("-arch=sm_80",), 800), (("--gpu-architecture=sm_86",), 860),
    (("-arch=compute_75",), 750), (("-arch", "sm_90"), 900)])
def test_cuda_arch_defined(options, arch):
    assert _arch(options) == {arch}


@pytest.mark.parametrize("option", ["-arch=sm_20", "-arch=foo", "--gpu-architecture=gfx90a"])
def test_bad_arch_is_compile_error(option):
    with pytest.raises(ql.CompileError, match=repr(option).replace("[", r"\[")):
        ql.compile(ARCH_SOURCE, device="cpu", options=(option,))


@pytest.mark.parametrize("options, path", [(("-arch=sm_80",), 1), (("-arch=sm_70",), 2)])
def test_arch_paths_match_numpy(options, path):
    rng = np.random.default_rng(13)
    blocks = 5
    x = rng.integers(-1000, 1000, size=blocks * 32, dtype=np.int32)
    out = np.full(blocks, 0x5A5A5A5A, np.int32)
    taken = np.full(blocks, -1, np.int32)
    mod = ql.compile(WARP_SUM, device="cpu", options=options)
    mod.warp_sums[blocks, 32](x, out, taken)
    ql.device("cpu").synchronize()
    np.testing.assert_array_equal(out, x.reshape(blocks, 32).sum(axis=1))
    assert set(taken.tolist()) == {path}

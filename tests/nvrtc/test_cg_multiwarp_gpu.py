"""The multi-warp tile kernels of tests/cpu/test_cg_multiwarp.py compile with
NVRTC for sm_80 and sm_90, with and without block_tile_memory (CUDA needs it
only before sm_80); hiprtc has neither block_tile_memory nor tiles of more
than one wavefront, so HIP gets the one-wavefront tile (64 on gfx90a)."""
import pytest

import quicklaunch as ql
from quicklaunch.errors import CompileError
from tests.cpu.test_cg_multiwarp import SOURCE

KERNELS = ["mem64", "mem128", "mem256", "mem512", "mem1024", "plain64", "plain128", "pairs",
           "nested", "small_memory", "leavers", "split_sync"]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_multiwarp_tiles_compile_with_nvrtc(arch):
    prog = ql.cuda.compile(SOURCE, arch=arch)
    assert set(KERNELS) <= set(prog.kernels)


HIP_ONE_WAVE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void wave64(const float *in, float *out) {
    auto tile = cg::tiled_partition<64>(cg::this_thread_block());
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    out[g] = tile.shfl(in[g], 5) + tile.any(in[g] > 0) + tile.thread_rank();
    tile.sync();
}
"""


def _hiprtc():
    try:
        ql.hip.compile("__global__ void k() {}", arch="gfx90a")
    except Exception as exc:  # no hiprtc here
        pytest.skip(f"hiprtc unusable: {exc}")


def test_hip_one_wavefront_tile_compiles_for_gfx90a():
    _hiprtc()
    prog = ql.hip.compile(HIP_ONE_WAVE, arch="gfx90a")
    assert "wave64" in prog.kernels


def test_hip_has_no_multi_wavefront_tiles():
    _hiprtc()
    with pytest.raises(CompileError) as info:
        ql.hip.compile(SOURCE, arch="gfx90a")
    if "block_tile_memory" not in str(info.value) and "scan.h" not in str(info.value):
        raise AssertionError(str(info.value)[:2000])
    pytest.skip("HIP's cooperative groups have no block_tile_memory and no tiles larger "
                "than a wavefront (tiled_partition<N> needs N <= warpSize), so the "
                "multi-warp kernels are CUDA-only; see the one-wavefront test")

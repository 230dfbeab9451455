"""Multi-warp tiles and cooperative launches on a real GPU: the CPU device's
kernels (tests/cpu/test_cg_multiwarp.py, tests/cpu/test_cg_grid.py) give the
same NumPy-checked results under CUDA's own cooperative groups, and the
co-residency limit the CUDA device reports is the driver's occupancy."""
import numpy as np
import pytest

import quicklaunch as ql
from tests.cpu import test_cg_grid as grid_case
from tests.cpu import test_cg_multiwarp as tile_case


@pytest.fixture(scope="module")
def tiles(gpu):
    return ql.compile(tile_case.SOURCE, device=gpu)


@pytest.fixture(scope="module")
def grids(gpu):
    return ql.compile(grid_case.SOURCE, device=gpu)


def on_gpu(gpu, *arrays):
    return [ql.asarray(a, device=gpu) for a in arrays]


@pytest.mark.parametrize("n,block", [(64, 128), (128, 384), (256, 1024), (512, 1024),
                                     (1024, 1024)])
@pytest.mark.parametrize("memory", ["mem", "plain"])
def test_tiles_match_numpy(gpu, tiles, rng, n, block, memory):
    if memory == "plain" and n > 128:
        pytest.skip("the CPU tests' plain kernels are for 64 and 128")
    grid, total = 3, 3 * block
    x = rng.standard_normal(total).astype(np.float32)
    ints = rng.integers(-50, 50, total).astype(np.int32)
    outs = {name: ql.asarray(tile_case.poisoned(total, dt), device=gpu)
            for name, dt in tile_case.OUTS}
    tiles[f"{memory}{n}"][grid, block](*on_gpu(gpu, x, ints), *outs.values())
    tile_case.check_tiles(n, block, x, ints, {k: v.numpy() for k, v in outs.items()})


def test_two_phase_cooperative(gpu, grids, rng):
    grid, block = 2 * gpu.backend.attrs["sms"], 256
    n = grid * block
    x = rng.standard_normal(n).astype(np.float32)
    mid, out = (ql.asarray(grid_case.poisoned(n, np.float32), device=gpu) for _ in range(2))
    ranks = ql.asarray(grid_case.poisoned(n, np.uint64), device=gpu)
    info = ql.asarray(grid_case.poisoned(5, np.uint64), device=gpu)
    grids["two_phase"].configure(grid, block, cooperative=True)(
        ql.asarray(x, device=gpu), mid, out, ranks, info)
    want = x * np.float32(2) + 1
    np.testing.assert_array_equal(out.numpy(), np.roll(want, -block) - x)
    np.testing.assert_array_equal(info.numpy()[:4], [grid, n, n, 1])


def test_over_the_occupancy_is_refused(gpu, grids):
    with pytest.raises(ql.LaunchError, match=r"cannot be co-resident .* multiprocessors = "
                                             r"(\d+) blocks"):
        grids["two_phase"].configure(1000 * gpu.backend.attrs["sms"], 1024, cooperative=True)(
            *(ql.empty(1, np.float32, device=gpu) for _ in range(3)),
            ql.empty(1, np.uint64, device=gpu), ql.empty(5, np.uint64, device=gpu))

"""Debug stubs take a kernel's default arguments as Python defaults: left-out
trailing arguments, and ones skipped by a keyword call, get the kernel's
defaults, as the fast path does."""
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
__global__ void offset_fill(int *d, int n, const int *add = NULL, int base = 7 * 3) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = base + (add ? add[i] : 0);
}
"""


@pytest.fixture(scope="module")
def mods():
    return {dbg: ql.compile(SOURCE, device="cpu", debug=dbg) for dbg in (False, True)}


@pytest.mark.parametrize("n", [1, 31, 100])
def test_left_out_and_keyword_skipped_defaults(mods, n):
    rng = np.random.default_rng(n)
    add = rng.integers(-1000, 1000, n, dtype=np.int32)
    grid = (n + 31) // 32
    for dbg, mod in mods.items():
        d = np.full(n, -12345, np.int32)
        mod.offset_fill[grid, 32](d, n)
        np.testing.assert_array_equal(d, np.full(n, 21), err_msg=f"debug={dbg}")
        d[:] = -12345
        mod.offset_fill[grid, 32](d, n, add)
        np.testing.assert_array_equal(d, add + 21)
    d = np.full(n, -12345, np.int32)
    mods[True].offset_fill[grid, 32](d, n, base=-4)   # skips `add`: its default, NULL
    np.testing.assert_array_equal(d, np.full(n, -4))


def test_a_required_argument_is_still_required(mods):
    with pytest.raises(TypeError, match="offset_fill.*missing 2 required"):
        mods[True].offset_fill[1, 32]()

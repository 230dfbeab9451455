"""Cooperative-groups tile shuffles and reduce on any trivially copyable type
(CUDA moves the bytes): uint4, a struct of three floats, a 2-byte struct,
double, against NumPy on full and edge block sizes."""
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

struct f3 { float x, y, z; };
struct b2 { unsigned char a, b; };

template <int N>
__global__ void moves(const uint4 *in, uint4 *x_out, uint4 *d_out, f3 *s_out, b2 *b_out,
                      f3 *sum_out) {
    auto tile = cg::tiled_partition<N>(cg::this_thread_block());
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const uint4 v = in[g];
    x_out[g] = tile.shfl_xor(v, 1);
    d_out[g] = tile.shfl(v, N - 1);
    f3 s = {(float)v.x, (float)v.y, (float)v.z};
    s_out[g] = tile.shfl_down(s, 1);
    b2 b = {(unsigned char)v.x, (unsigned char)v.w};
    b_out[g] = tile.shfl_up(b, 1);
    sum_out[g] = cg::reduce(tile, s, [](f3 a, f3 c) { return f3{a.x + c.x, a.y + c.y, a.z + c.z}; });
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu, name_expressions=["moves<4>", "moves<32>"])


@pytest.mark.parametrize("n", [4, 32])
@pytest.mark.parametrize("block", [32, 64, 128])
def test_moves(mod, rng, n, block):
    grid = 2
    total = grid * block
    v = rng.integers(0, 1000, (total, 4)).astype(np.uint32)
    x = np.zeros((total, 4), np.uint32)
    d = np.zeros((total, 4), np.uint32)
    s = np.zeros((total, 3), np.float32)
    b = np.zeros((total, 2), np.uint8)
    sm = np.zeros((total, 3), np.float32)
    mod[f"moves<{n}>"][grid, block](v, x, d, s, b, sm)
    t = np.arange(total)
    rank = t % n
    base = t - rank
    np.testing.assert_array_equal(x, v[t ^ 1])
    np.testing.assert_array_equal(d, v[base + n - 1])
    f = v[:, :3].astype(np.float32)
    np.testing.assert_array_equal(s, np.where((rank + 1 < n)[:, None], f[np.minimum(t + 1, total - 1)], f))
    bb = np.stack([v[:, 0], v[:, 3]], 1).astype(np.uint8)
    np.testing.assert_array_equal(b, np.where((rank >= 1)[:, None], bb[t - 1], bb))
    want = f.reshape(-1, n, 3).sum(1).repeat(n, 0)
    np.testing.assert_allclose(sm, want, rtol=1e-5)

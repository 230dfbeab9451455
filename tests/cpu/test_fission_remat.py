"""Region fission's rematerialised locals (fission_remat.py): a local
computed from the thread's coordinates and unmodified parameters is declared
again in each region instead of stored and loaded back. Kernels where that
is right, and ones where it would be wrong (the local or its input changes,
or it reads memory), run as fission and on fibers with the same bits, and
match NumPy."""
import numpy as np
import pytest

from .conftest import both_tiers, run_as_fission, compile_tier_ahead, tier_prefetch

SOURCE = r"""
// tid, i and j chain: each is rebuilt in every region from the coordinates
// and the unmodified parameter `stride`
__global__ void chained(const float *in, float *out, int n, int stride) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    int j = (int)i * stride + 1;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (i < n) out[i] = s[0] + (float)j;
}

// `t` changes after the first barrier: it must be carried, not recomputed
__global__ void changed(const int *in, int *out, int n) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 128 + t];
    __syncthreads();
    t = 127 - t;
    __syncthreads();
    out[blockIdx.x * 128 + threadIdx.x] = s[t] * 2 + t;
}

// `v` reads memory that the kernel overwrites before using `v`: carried
__global__ void from_memory(int *buf, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int v = g < n ? buf[g] : 0;
    __syncthreads();
    if (g < n) buf[g] = -1;
    __syncthreads();
    if (g < n) buf[g] = v + 1;
}
"""

KERNELS = ["chained", "changed", "from_memory"]


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, SOURCE)


@pytest.mark.parametrize("n, stride", [(1, 3), (255, -2), (256 * 5 + 17, 7)])
def test_chained_locals(mods, rng, n, stride):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    grid = -(-n // 256)
    _, out, _, _ = run_as_fission(mods, "chained", grid, 256, x, out, n, stride)
    pad = np.zeros(grid * 256, np.float32)
    pad[:n] = x
    sums = pad.reshape(grid, 256).astype(np.float64).sum(axis=1)
    i = np.arange(n)
    np.testing.assert_allclose(out, sums[i // 256] + (i * stride + 1), rtol=1e-4, atol=1e-3)


def test_a_changed_local_is_carried(mods, rng):
    grid = 3
    x = rng.integers(-1000, 1000, grid * 128).astype(np.int32)
    out = np.full(grid * 128, -7, np.int32)
    _, out, _ = run_as_fission(mods, "changed", grid, 128, x, out, grid * 128)
    t = 127 - np.arange(128)
    want = (x.reshape(grid, 128)[:, t] * 2 + t).reshape(-1)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("n, block", [(1, 32), (1000, 96)])
def test_a_local_read_from_memory_is_carried(mods, rng, n, block):
    buf = rng.integers(-1000, 1000, n).astype(np.int32)
    want = buf + 1
    (buf, _) = run_as_fission(mods, "from_memory", -(-n // block), block, buf, n)
    np.testing.assert_array_equal(buf, want)


def test_which_locals_are_rebuilt():
    pytest.importorskip("clang.cindex")
    from quicklaunch.backends.cpu import fission
    res = fission.plan(SOURCE, KERNELS, {k: 2 for k in KERNELS}, "k.cu", 1,
                       ("-D__CUDA_ARCH__=900",), "g++")
    code = res.code
    assert all(res.tiers[k][0] == "fission" for k in KERNELS), res.tiers
    chained = code[code.index("__ql_fission_chained"):code.index("__ql_fission_changed")]
    # rebuilt in later regions, never stored back
    assert chained.count("__ql_T0 tid = (threadIdx.x);") == 3, chained   # 3 regions
    assert "__ql_T2 j = ((int)i * stride + 1);" in chained
    assert "] = tid;" not in chained and "] = j;" not in chained
    changed = code[code.index("__ql_fission_changed"):code.index("__ql_fission_from_memory")]
    assert "t = __ql_r" in changed          # carried through the scratch
    from_memory = code[code.index("__ql_fission_from_memory"):]
    assert "v = __ql_r" in from_memory

"""Region fission through the user's helper functions: warp and block
reductions written as `__device__` functions (the way most kernels spell
them) are inlined into the kernel before the pass, so their barriers and
shuffles become thread-loop boundaries of the kernel. Each kernel runs both
ways, fission and fibers: same bits, same errors; and against NumPy. What
the inliner cannot keep exact stays on fibers, with the reason."""
import re

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, poisoned, run_both_tiers, compile_tier_ahead, tier_prefetch

INLINE_SOURCE = r"""
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    return v;
}

template <typename T, int W = 32>
__device__ T warp_max(T v) {
    for (int o = W / 2; o > 0; o /= 2) v = max(v, __shfl_xor_sync(FULL, v, o, W));
    return v;
}

// The block's sum, valid in thread 0; the partials through a function's
// __shared__ array (one per block, whichever call uses it).
__device__ float block_sum(float v) {
    static __shared__ float part[32];
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    __syncthreads();                  // a previous call's readers are done
    v = warp_sum(v);
    if (lane == 0) part[wid] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? part[lane] : 0.f;
    if (wid == 0) v = warp_sum(v);
    return v;
}

__device__ void add_warp_total(float &acc, float v) {
    for (int i = 16; i > 0; i /= 2)   // the kernel has an `i` of its own
        v += __shfl_xor_sync(FULL, v, i);
    acc += v;
}

__global__ void block_sums(const float *x, float *out, int n) {
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += x[i];
    float s = block_sum(acc);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// One block per row: mean, then variance around it, two calls of block_sum.
__global__ void layer_norm(const float *x, float *y, int cols) {
    __shared__ float stat;
    const float *xr = x + blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    s = block_sum(s);
    if (threadIdx.x == 0) stat = s / cols;
    __syncthreads();
    const float mean = stat;
    float q = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) q += (xr[c] - mean) * (xr[c] - mean);
    q = block_sum(q);
    if (threadIdx.x == 0) stat = rsqrtf(q / cols + 1e-5f);
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[blockIdx.x * cols + c] = (xr[c] - mean) * stat;
}

// A template helper: its type deduced, its width defaulted or given.
__global__ void seg_max(const float *x, float *whole, float *eighths) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    whole[i] = warp_max(v);
    eighths[i] = warp_max<float, 8>(x[i]) * 2.f;
}

// A macro-spelled type in front of a parameter and of a __shared__ array
// (their own tokens start in the macro); the kernel has a `v` of its own.
#define REAL float
__device__ REAL block_max(REAL v) {
    __shared__ REAL top[32];
    v = warp_max(v);
    if (threadIdx.x % 32 == 0) top[threadIdx.x / 32] = v;
    __syncthreads();
    v = top[0];
    for (int w = 1; w < blockDim.x / 32; ++w) v = max(v, top[w]);
    return v;
}
__global__ void block_maxes(const REAL *x, REAL *out) {
    REAL v = x[blockIdx.x * blockDim.x + threadIdx.x];
    out[blockIdx.x * blockDim.x + threadIdx.x] = block_max(v) - v;
}

// A void helper writing through a reference, under a block-uniform branch.
__global__ void warp_totals(const float *x, float *out, int twice) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float t = 1.f;
    if (twice) add_warp_total(t, x[i]);
    add_warp_total(t, x[i]);
    out[i] = t;
}

// A void helper whose `return` is a call of another void helper.
__device__ void add_twice(float &acc, float v) {
    add_warp_total(acc, v);
    return add_warp_total(acc, 2.f * v);
}
__global__ void void_return(const float *x, float *out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float t = 0.5f;
    add_twice(t, x[i]);
    out[i] = t;
}
"""

REFUSED_SOURCE = r"""
#define FULL 0xffffffffu
#define ADD_DOWN(o) v += __shfl_down_sync(FULL, v, o)
__constant__ float bias = 0.5f;

__device__ float wsum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    return v;
}
__device__ float early(float v) {
    if (threadIdx.x >= 1024) return 0.f;
    return wsum(v);
}
__device__ float biased(float v) { return wsum(v) + bias; }
__device__ float by_macro(float v) {
    ADD_DOWN(16); ADD_DOWN(8); ADD_DOWN(4); ADD_DOWN(2); ADD_DOWN(1);
    return v;
}
__device__ float checked(float v) {
    assert(v == v);
    return wsum(v);
}
namespace detail {
__device__ float nsum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(FULL, v, o);
    return v;
}
}

__global__ void returns_early(const float *x, float *y) { y[threadIdx.x] = early(x[threadIdx.x]); }
__global__ void conditional(const float *x, float *y, int f) {
    float v = x[threadIdx.x];
    y[threadIdx.x] = f ? wsum(v) : v;
}
__global__ void short_circuit(const float *x, float *y, int f) {
    float v = x[threadIdx.x];
    if (f && wsum(v) > 0.f) v = 0.f;
    y[threadIdx.x] = v;
}
__global__ void loop_header(const float *x, float *y) {
    float v = x[threadIdx.x];
    while (wsum(v) > 1.f) v *= 0.5f;
    y[threadIdx.x] = v;
}
__global__ void captured(const float *x, float *y) {
    float bias = x[threadIdx.x];
    y[threadIdx.x] = biased(bias);
}
__global__ void macro_local(const float *x, float *y) { y[threadIdx.x] = by_macro(x[threadIdx.x]); }
__global__ void asserts(const float *x, float *y) { y[threadIdx.x] = checked(x[threadIdx.x]); }
__global__ void other_namespace(const float *x, float *y) {
    y[threadIdx.x] = detail::nsum(x[threadIdx.x]);
}
__device__ float lane_sum(float v) {
    const int rounds = threadIdx.x % 2 + 1;
    for (int k = 0; k < rounds; ++k)
        __syncthreads();
    return wsum(v);
}
__global__ void bad_barrier(const float *x, float *y) { y[threadIdx.x] = lane_sum(x[threadIdx.x]); }
"""

REFUSED = {"returns_early": "'early' returns early",
           "conditional": "in a branch of ?:",
           "short_circuit": "on the right of &&",
           "loop_header": "in a loop or switch header",
           "captured": "uses 'bias', which the kernel declares too",
           "macro_local": "uses its 'v' through a macro",
           "asserts": "asserts",
           "other_namespace": "another namespace"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(INLINE_SOURCE, plain=(REFUSED_SOURCE,))
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, INLINE_SOURCE)


@pytest.fixture(scope="module")
def refused(cpu):
    return ql.compile(REFUSED_SOURCE, device=cpu)


def _warp_groups(x, size):
    return x.reshape(-1, size)


@pytest.mark.parametrize("name", ["block_sums", "layer_norm", "seg_max", "warp_totals",
                                  "block_maxes", "void_return"])
def test_inlined_kernels_run_as_fission(mods, name):
    k = mods[0][name]
    assert k.tier == "fission", k.attributes["tier_reason"]
    assert "inlined" in k.attributes["tier_reason"]
    assert mods[1][name].tier == "fibers"


@pytest.mark.parametrize("grid,block,n", [(1, 32, 1), (3, 64, 1000), (4, 96, 31 * 97),
                                          (2, 1024, 5000)])
def test_block_sums(mods, rng, grid, block, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = run_both_tiers(mods, "block_sums", grid, block, x, poisoned(grid, np.float32),
                         np.int32(n))[1]
    assert abs(out.sum() - x.astype(np.float64).sum()) < 1e-3 * (1 + np.abs(x).sum())
    stride = grid * block
    for b in range(grid):
        idx = np.concatenate([np.arange(b * block + t, n, stride) for t in range(block)])
        np.testing.assert_allclose(out[b], x[idx].astype(np.float64).sum(), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("block,cols", [(32, 7), (64, 768), (160, 333)])
def test_layer_norm(mods, rng, block, cols):
    rows = 5
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    y = run_both_tiers(mods, "layer_norm", rows, block, x, poisoned((rows, cols), np.float32),
                       np.int32(cols))[1]
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("grid,block", [(1, 32), (3, 64), (2, 96)])
def test_seg_max(mods, rng, grid, block):
    n = grid * block
    x = rng.standard_normal(n).astype(np.float32)
    whole, eighths = run_both_tiers(mods, "seg_max", grid, block, x, poisoned(n, np.float32),
                                    poisoned(n, np.float32))[1:]
    np.testing.assert_array_equal(whole, np.repeat(_warp_groups(x, 32).max(1), 32))
    np.testing.assert_array_equal(eighths, np.repeat(_warp_groups(x, 8).max(1), 8) * 2)


@pytest.mark.parametrize("grid,block", [(1, 32), (2, 128), (3, 96)])
def test_block_maxes(mods, rng, grid, block):
    n = grid * block
    x = rng.standard_normal(n).astype(np.float32)
    out = run_both_tiers(mods, "block_maxes", grid, block, x, poisoned(n, np.float32))[1]
    np.testing.assert_array_equal(out, np.repeat(x.reshape(grid, block).max(1), block) - x)


@pytest.mark.parametrize("twice", [0, 1])
def test_warp_totals(mods, rng, twice):
    x = rng.standard_normal(128).astype(np.float32)
    out = run_both_tiers(mods, "warp_totals", 2, 64, x, poisoned(128, np.float32),
                         np.int32(twice))[1]
    totals = np.repeat(_warp_groups(x.astype(np.float64), 32).sum(1), 32)
    np.testing.assert_allclose(out, 1 + (1 + twice) * totals, rtol=1e-4, atol=1e-4)


def test_void_return_of_a_void_call(mods, rng):
    x = rng.standard_normal(96).astype(np.float32)
    out = run_both_tiers(mods, "void_return", 3, 32, x, poisoned(96, np.float32))[1]
    totals = np.repeat(_warp_groups(x.astype(np.float64), 32).sum(1), 32)
    np.testing.assert_allclose(out, 0.5 + 3 * totals, rtol=1e-4, atol=1e-4)


def test_partial_warp_error_is_the_same(mods, rng):
    """A block that is not whole warps: both tiers raise the shuffle's error."""
    x = rng.standard_normal(48).astype(np.float32)
    for m in mods:
        with pytest.raises(ql.LaunchError, match=r"__shfl_down_sync"):
            m.block_sums[1, 48](x, poisoned(1, np.float32), np.int32(48))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_stays_on_fibers(refused, name):
    k = refused[name]
    assert k.tier == "fibers", k.attributes["tier_reason"]
    assert REFUSED[name] in k.attributes["tier_reason"], k.attributes["tier_reason"]


def test_refused_kernels_still_run(refused, rng):
    x = rng.standard_normal(64).astype(np.float32)
    y = poisoned(64, np.float32)
    refused.conditional[1, 64](x, y, np.int32(1))
    sums = [x[w * 32 + t:(w + 1) * 32].astype(np.float64).sum() for w in range(2)
            for t in range(32)]
    np.testing.assert_allclose(y[[0, 32]], [sums[0], sums[32]], rtol=1e-4, atol=1e-5)


def test_reason_names_the_helpers_line(refused):
    """A barrier the pass refuses inside an inlined helper is reported at the
    helper's own line (the #line directives of the inlined body)."""
    reason = refused.bad_barrier.attributes["tier_reason"]
    line = REFUSED_SOURCE.splitlines().index("    for (int k = 0; k < rounds; ++k)") + 1
    assert re.search(rf"'rounds', line {line}\b", reason), (reason, line)

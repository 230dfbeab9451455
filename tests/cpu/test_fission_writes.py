"""What the fission pass counts as a write, and what it reads as a literal:
a local or parameter changed in any way C++ allows (through a reference, a
cast to a reference, a conditional or comma lvalue, a macro) is not a
warp-uniform local, not rematerialised and not an unmodified parameter; a
literal seen through a narrowing cast is not its spelled value. Each kernel
here would be wrong on fission if the pass missed that, so each must stay on
fibers with the reason; those it may accept must match fibers bit for bit."""
import numpy as np
import pytest

from .conftest import both_tiers, poisoned, run_both_tiers, compile_tier_ahead, tier_prefetch

WRITES_SOURCE = r"""
#define FULL 0xffffffffu
#define SET(a, b) a = b
#define INC(a) a++
#define ZERO(a) a = 0
#define WARP_SIZE 32

// (bool)32 is 1: `threadIdx.x < 1` is not warp-uniform.
__global__ void bool_literal(const int *x, int *y) {
    int v = x[threadIdx.x];
    if (threadIdx.x < (bool)32) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// The warp index changed through a reference bound in parentheses.
__global__ void paren_reference(const int *x, int *y) {
    int v = x[threadIdx.x];
    int wid = threadIdx.x / 32;
    int &r = (wid);
    r += threadIdx.x & 1;
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// ... through a cast to a reference.
__global__ void cast_reference(const int *x, int *y) {
    int v = x[threadIdx.x];
    int wid = threadIdx.x / 32;
    static_cast<int &>(wid) = threadIdx.x & 1;
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// ... through decltype(auto), which deduces a reference from (wid).
__global__ void deduced_reference(const int *x, int *y) {
    int v = x[threadIdx.x];
    int wid = threadIdx.x / 32;
    decltype(auto) r = (wid);
    r += threadIdx.x & 1;
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// ... as a conditional's lvalue, and as a comma's.
__global__ void conditional_lvalue(const int *x, int *y, int n) {
    int v = x[threadIdx.x];
    int wid = threadIdx.x / 32, other = 0;
    (n > 0 ? wid : other) = threadIdx.x & 1;
    (n, wid) += threadIdx.x & 2;
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// ... by a macro's increment.
__global__ void macro_increment(const int *x, int *y) {
    int v = x[threadIdx.x];
    int wid = threadIdx.x / 32;
    if (threadIdx.x & 1) INC(wid);
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// A local assigned by a macro is not its initialiser after the barrier.
__global__ void macro_assigned_local(const int *x, int *y) {
    __shared__ int s[1024];
    int i = threadIdx.x;
    SET(i, (i + 1) % blockDim.x);
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[i];
}

// A parameter assigned by a macro is per thread, not one per block.
__global__ void macro_assigned_param(const int *x, int *y, int n) {
    __shared__ int s[1024];
    if (threadIdx.x == 0) ZERO(n);
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x] + n;
}

// C's octal 040 is 32: warp-uniform, so this one may run as fission.
__global__ void octal_warps(const int *x, int *y) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 040) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// The warp size spelled by the module's own macro: warp-uniform too.
__global__ void macro_warp_size(const int *x, int *y) {
    int v = x[threadIdx.x];
    const int wid = threadIdx.x / WARP_SIZE;
    if (wid == 0) v = __shfl_down_sync(FULL, v, 1);
    y[threadIdx.x] = v;
}

// ... and by a constexpr integer.
constexpr unsigned kWarp = 32;
__global__ void constexpr_warp_size(const int *x, int *y) {
    int v = x[threadIdx.x];
    if (threadIdx.x / kWarp == 1) v = __shfl_xor_sync(FULL, v, 5);
    y[threadIdx.x] = v;
}
"""

FIBERS = {"bool_literal": "thread-dependent condition",
          "paren_reference": "names 'wid'",
          "cast_reference": "names 'wid'",
          "deduced_reference": "names 'wid'",
          "conditional_lvalue": "names 'wid'",
          "macro_increment": "names 'wid'",
          "macro_assigned_local": "function-like macro's arguments",
          "macro_assigned_param": "modifies its parameter 'n'"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(WRITES_SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, WRITES_SOURCE)


@pytest.mark.parametrize("name", sorted(FIBERS))
def test_written_stays_on_fibers(mods, name):
    fis, _ = mods
    k = fis[name]
    assert k.tier == "fibers", (name, k.attributes["tier_reason"])
    assert FIBERS[name] in k.attributes["tier_reason"]


@pytest.mark.parametrize("name", ["macro_assigned_local", "macro_assigned_param"])
def test_written_matches_fibers(mods, name):
    rng = np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    y = run_both_tiers(mods, name, 1, 64, x, poisoned(64, np.int32), *(
        [np.int32(5)] if name.endswith("param") else []))[1]
    want = np.roll(x, -1) if name.endswith("local") else x[::-1] + np.where(
        np.arange(64) == 0, 0, 5)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("name", ["octal_warps", "macro_warp_size", "constexpr_warp_size"])
def test_literal_is_read(mods, name):
    fis, _ = mods
    assert fis[name].tier == "fission", fis[name].attributes["tier_reason"]
    rng = np.random.default_rng(8)
    for block in (64, 96):
        x = rng.integers(-1000, 1000, block).astype(np.int32)
        y = run_both_tiers(mods, name, 1, block, x, poisoned(block, np.int32))[1]
        want = x.copy()
        if name == "constexpr_warp_size":
            want[32:64] = x[32:64][np.arange(32) ^ 5]
        else:
            want[:31] = x[1:32]
        np.testing.assert_array_equal(y, want)

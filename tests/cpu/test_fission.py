"""Region fission (issue 15): which kernels run as loops between barriers,
why the others stay on fibers, and that both tiers give the same bits and the
same errors."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import compile_tier_ahead, tier_prefetch

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Shared-memory tree reduction, 256 threads.
__global__ void tree(const float *in, float *out, int n) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

// The CUDA samples' reduce, unrolled by blockSize, a barrier per step
// (9 barriers per thread at 512 threads).
template <unsigned blockSize>
__global__ void samples(const float *g_idata, float *g_odata, unsigned n) {
    __shared__ float sdata[blockSize];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    unsigned gridSize = blockSize * 2 * gridDim.x;
    float mySum = 0;
    while (i < n) {
        mySum += g_idata[i];
        if (i + blockSize < n) mySum += g_idata[i + blockSize];
        i += gridSize;
    }
    sdata[tid] = mySum;
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) sdata[tid] = mySum = mySum + sdata[tid + 256]; __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) sdata[tid] = mySum = mySum + sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] = mySum = mySum + sdata[tid + 64]; __syncthreads(); }
    if (blockSize >= 64) { if (tid < 32) sdata[tid] = mySum = mySum + sdata[tid + 32]; __syncthreads(); }
    if (blockSize >= 32) { if (tid < 16) sdata[tid] = mySum = mySum + sdata[tid + 16]; __syncthreads(); }
    if (blockSize >= 16) { if (tid < 8) sdata[tid] = mySum = mySum + sdata[tid + 8]; __syncthreads(); }
    if (blockSize >= 8) { if (tid < 4) sdata[tid] = mySum = mySum + sdata[tid + 4]; __syncthreads(); }
    if (blockSize >= 4) { if (tid < 2) sdata[tid] = mySum = mySum + sdata[tid + 2]; __syncthreads(); }
    if (blockSize >= 2) { if (tid < 1) sdata[tid] = mySum = mySum + sdata[tid + 1]; }
    if (tid == 0) g_odata[blockIdx.x] = mySum;
}
template __global__ void samples<512>(const float *, float *, unsigned);

#define TILE 16
__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = row < M && t * TILE + threadIdx.x < K
            ? A[row * K + t * TILE + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = t * TILE + threadIdx.y < K && col < N
            ? B[(t * TILE + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

// Threads past n return before the barriers; the others go on.
__global__ void early(const int *x, int *out, int *alive, int n) {
    __shared__ int s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = x[i];
    int live = __syncthreads_count(1);
    out[i] = s[(threadIdx.x + 1) % live] * 10 + live;
    if (threadIdx.x == 0) alive[blockIdx.x] = live;
}

__global__ void votes(const int *x, int *out) {
    int v = x[blockIdx.x * blockDim.x + threadIdx.x];
    int c = __syncthreads_count(v > 3);
    int a = __syncthreads_and(v >= 0);
    int o = __syncthreads_or(v == 7);
    out[blockIdx.x * blockDim.x + threadIdx.x] = c * 100 + a * 10 + o;
}

// A barrier in a uniform loop, a cg block barrier, a value kept across it.
__global__ void rounds(const int *x, int *out, int steps) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ int s[64];
    int mine = x[block.thread_rank()];
    for (int r = 0; r < steps; ++r) {
        s[threadIdx.x] = mine;
        block.sync();
        mine += s[(threadIdx.x + r + 1) % blockDim.x];
        __syncthreads();
    }
    out[threadIdx.x] = mine;
}

__global__ void checked(const int *x, int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    assert(s[threadIdx.x] >= 0);
    out[threadIdx.x] = s[63 - threadIdx.x];
}

__global__ void faulting(int **p, int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = *p[s[threadIdx.x]];
}

// A shuffle reached by the whole block: a boundary like a barrier.
__global__ void shuffled(int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, s[threadIdx.x], 1);
}

// Must stay on fibers:
__global__ void under_tid(int *out) {
    if (threadIdx.x < 16) __syncthreads();
    out[threadIdx.x] = 1;
}
__global__ void divergent(int *out) {
    if (threadIdx.x < 16) __syncthreads();   // half the block at the barrier,
    else __syncwarp();                        // the other half waiting for it
    out[threadIdx.x] = 1;
}
__device__ void helper_sync() { __syncthreads(); }
__global__ void in_callee(int *out) {      // fission: the helper is inlined
    out[threadIdx.x] = 1;
    helper_sync();
}
__device__ void helper_sync_unless(const int *skip) {
    if (*skip) return;                      // an early return: not inlined
    __syncthreads();
}
__global__ void in_callee_early(int *out, const int *skip) {
    out[threadIdx.x] = 1;
    helper_sync_unless(skip);
}
"""

FISSION = ["tree", "samples<512>", "matmul", "early", "votes", "rounds", "checked", "faulting",
           "shuffled", "in_callee"]
FIBERS = {"under_tid": "thread-dependent condition (threadIdx)",
          "divergent": "thread-dependent condition",
          "in_callee_early": "called function 'helper_sync_unless' returns early"}


# both tiers' builds, compiled ahead on the second core (tests/prefetch.py)
prefetch_job = tier_prefetch(SOURCE, exprs=[*FISSION, *FIBERS])
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "1")
        fis = ql.compile(SOURCE, device=cpu, name_expressions=[*FISSION, *FIBERS])
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "0")
        fib = ql.compile(SOURCE, device=cpu, name_expressions=[*FISSION, *FIBERS])
    finally:
        mp.undo()
    return fis, fib


def test_tiers_and_reasons(mods):
    fis, fib = mods
    for e in FISSION:
        assert fis[e].tier == "fission", (e, fis[e].attributes)
        assert fis[e].attributes["tier"] == "fission"
        assert "barrier" in fis[e].attributes["tier_reason"]
        assert fib[e].tier == "fibers"
        assert "QUICKLAUNCH_CPU_FISSION=0" in fib[e].attributes["tier_reason"]
    for e, why in FIBERS.items():
        assert fis[e].tier == "fibers"
        assert why in fis[e].attributes["tier_reason"], fis[e].attributes


def test_loop_kernels_say_so(cpu):
    m = ql.compile("__global__ void add(float *x) { x[threadIdx.x] += 1; }", device=cpu)
    assert m.add.tier == "loop" and "no barrier" in m.add.attributes["tier_reason"]


def test_debug_builds_stay_on_fibers(cpu):
    m = ql.compile(SOURCE, device=cpu, name_expressions=["tree"], debug=True)
    assert m.tree.tier == "fibers" and "debug" in m.tree.attributes["tier_reason"]


def _both(mods, expr, grid, block, *args, shared=0):
    fis, fib = mods
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    fib[expr][grid, block, shared](*a)
    fis[expr][grid, block, shared](*b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), expr
    return b


def test_tree_reduction(mods, rng):
    n = 256 * 40 + 17
    x = rng.standard_normal(n).astype(np.float32)
    out = _both(mods, "tree", 41, 256, x, np.zeros(41, np.float32), n)[1]
    np.testing.assert_allclose(out.sum(), x.sum(dtype=np.float64), rtol=1e-4)


def test_samples_reduction(mods, rng):
    n = 1 << 16
    x = rng.standard_normal(n).astype(np.float32)
    out = _both(mods, "samples<512>", 16, 512, x, np.zeros(16, np.float32), n)[1]
    np.testing.assert_allclose(out.sum(), x.sum(dtype=np.float64), rtol=1e-4)


def test_tiled_matmul(mods, rng):
    M, N, K = 48, 40, 56
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = _both(mods, "matmul", (3, 3), (16, 16), A, B, np.zeros((M, N), np.float32), M, N, K)[2]
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


def test_early_return_before_a_barrier(mods, rng):
    n = 128 * 2 + 50
    x = rng.integers(0, 100, 3 * 128).astype(np.int32)
    out, alive = _both(mods, "early", 3, 128, x, np.full(3 * 128, -1, np.int32),
                       np.zeros(3, np.int32), n)[1:3]
    assert alive.tolist() == [128, 128, 50]     # exited threads do not count
    assert (out[n:] == -1).all()


def test_syncthreads_count_and_or(mods, rng):
    x = rng.integers(0, 8, 4 * 64).astype(np.int32)
    out = _both(mods, "votes", 4, 64, x, np.zeros(4 * 64, np.int32))[1]
    for b in range(4):
        v = x[b * 64:(b + 1) * 64]
        assert (out[b * 64:(b + 1) * 64] == (v > 3).sum() * 100 + 10 + (v == 7).any()).all()


def test_barrier_in_a_uniform_loop(mods, rng):
    x = rng.integers(0, 100, 64).astype(np.int32)
    out = _both(mods, "rounds", 1, 64, x, np.zeros(64, np.int32), 5)[1]
    ref = x.copy()
    for r in range(5):
        ref = ref + ref[(np.arange(64) + r + 1) % 64]
    np.testing.assert_array_equal(out, ref)


def test_assert_names_block_and_thread(mods):
    fis, fib = mods
    x = np.arange(64, dtype=np.int32)
    x[37] = -1
    msgs = []
    for m in (fis, fib):
        with pytest.raises(ql.LaunchError, match=r"device-side assert failed: .*block \(0, 0, 0\), "
                                                 r"thread \(37, 0, 0\)") as info:
            m.checked[1, 64](x, np.zeros(64, np.int32))
        msgs.append(str(info.value))
    # the compiler's own __PRETTY_FUNCTION__ spelling: g++ "const int*",
    # clang "const int *"
    from quicklaunch.backends.cpu import toolchain
    spelled = ("const int *, int *" if "clang" in toolchain.find_compiler().version
               else "const int*, int*")
    assert msgs[0] == msgs[1] and f"in void checked({spelled})" in msgs[0]


def test_fault_names_block_and_thread(mods):
    fis, _ = mods
    good = np.zeros(1, np.int32)
    p = np.full(64, good.ctypes.data, np.uint64)
    p[21] = 8   # a null page address
    with pytest.raises(ql.LaunchError, match=r"block \(0, 0, 0\), thread \(21, 0, 0\)"):
        fis.faulting[1, 64](ql.reinterpret(p), np.zeros(64, np.int32))


def test_divergent_barrier_is_still_a_deadlock(mods):
    fis, _ = mods
    with pytest.raises(ql.LaunchError, match=r"deadlock in block \(0, 0, 0\)"):
        fis.divergent[1, 32](np.zeros(32, np.int32))

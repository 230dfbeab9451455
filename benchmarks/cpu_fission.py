"""Region fission vs fibers on the CPU device (issue 15): barrier and warp kernels,
each side by side with its reference in one process, medians of several runs.

    python benchmarks/cpu_fission.py [--runs 7]

Rows: the 256-thread shared tree reduction over 2^22 floats (reference: the
same block sums without barriers, a tier-1 kernel), the 16x16 tiled
shared-memory matmul 512^3 (reference: NumPy's matmul), the samples-style
reduction with 9 barriers per thread over 2^22 floats (reference: NumPy's
sum), and two warp-shuffle kernels with one warp per row over 1024x768
floats: layernorm and an online softmax (references: the same in NumPy), and
block sums by warp shuffles whose last step runs in the first warp only (a
warp-uniform branch; reference: the barrier-free sums), and the same block
sums through `__device__` helpers (warp_reduce, block_reduce: inlined before
fission) and through cooperative groups (cg::reduce over 32-thread tiles,
lowered to shuffles before fission). Fibers are forced with QUICKLAUNCH_CPU_FISSION=0 at compile time.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy: no BLAS threads spinning
import numpy as np  # noqa: E402

import quicklaunch as ql  # noqa: E402

SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

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

// The same block sums without barriers: one thread per block of 256.
__global__ void plain_sums(const float *in, float *out, int blocks) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= blocks) return;
    float acc = 0.0f;
    for (int j = 0; j < 256; ++j) acc += in[b * 256 + j];
    out[b] = acc;
}

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

// One warp per row (blockDim (32, 4)): mean and variance by xor butterflies.
__global__ void layernorm_rows(const float *x, const float *g, const float *b, float *y,
                               int cols, float eps) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;
    float s = 0.f, ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) { float v = xr[c]; s += v; ss += v * v; }
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffff, s, o);
        ss += __shfl_xor_sync(0xffffffff, ss, o);
    }
    const float mean = s / cols;
    const float rstd = rsqrtf(ss / cols - mean * mean + eps);
    for (int c = threadIdx.x; c < cols; c += 32) yr[c] = (xr[c] - mean) * rstd * g[c] + b[c];
}

// One warp per row: the running max and sum of one pass, merged across
// lanes by xor butterflies, then the normalised exponentials.
__global__ void softmax_online(const float *x, float *y, int cols) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;
    float m = -3.402823466e+38f, d = 0.f;   // -FLT_MAX: no inf - inf
    for (int c = threadIdx.x; c < cols; c += 32) {
        const float v = xr[c], mn = fmaxf(m, v);
        d = d * expf(m - mn) + expf(v - mn);
        m = mn;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffff, m, o);
        const float dn = __shfl_xor_sync(0xffffffff, d, o);
        const float mn = fmaxf(m, mo);
        d = d * expf(m - mn) + dn * expf(mo - mn);
        m = mn;
    }
    for (int c = threadIdx.x; c < cols; c += 32) yr[c] = expf(xr[c] - m) / d;
}

// Block sums by warp shuffles: partials through shared memory, then the
// first warp alone (a warp-uniform branch) reduces them.
__global__ void warp_block_sums(const float *in, float *out, int n) {
    __shared__ float part[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    float v = i < n ? in[i] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) part[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = lane < (int)(blockDim.x / 32) ? part[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// The same block sums the way most code spells them: a warp helper and a
// block helper with its own __shared__ partials (inlined before fission).
__device__ __forceinline__ float warp_reduce(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    return v;
}
__device__ float block_reduce(float v) {
    static __shared__ float part[32];
    const int lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    v = warp_reduce(v);
    if (lane == 0) part[wid] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? part[lane] : 0.f;
    if (wid == 0) v = warp_reduce(v);
    return v;
}
__global__ void helper_block_sums(const float *in, float *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float s = block_reduce(i < n ? in[i] : 0.f);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// Again with cooperative groups: cg::reduce over 32-thread tiles (lowered to
// shuffles before fission).
__global__ void tile_block_sums(const float *in, float *out, int n) {
    __shared__ float part[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = cg::reduce(warp, i < n ? in[i] : 0.f, cg::plus<float>());
    if (warp.thread_rank() == 0) part[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < warp.meta_group_size() ? part[warp.thread_rank()] : 0.f;
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) out[blockIdx.x] = v;
    }
}
"""
EXPRS = ["tree", "plain_sums", "samples<512>", "matmul", "layernorm_rows", "softmax_online",
         "warp_block_sums", "helper_block_sums", "tile_block_sums"]


def compile_tier(fission: bool):
    old = os.environ.get("QUICKLAUNCH_CPU_FISSION")
    os.environ["QUICKLAUNCH_CPU_FISSION"] = "1" if fission else "0"
    try:
        return ql.compile(SOURCE, device="cpu", name_expressions=EXPRS)
    finally:
        if old is None:
            del os.environ["QUICKLAUNCH_CPU_FISSION"]
        else:
            os.environ["QUICKLAUNCH_CPU_FISSION"] = old


def median_s(fn, runs: int) -> float:
    fn()   # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    fis, fib = compile_tier(True), compile_tier(False)
    for e in EXPRS:
        if e != "plain_sums":
            assert fis[e].tier == "fission", (e, fis[e].attributes)
            assert fib[e].tier == "fibers"
    rng = np.random.default_rng(0)
    rows = []

    n = 1 << 22
    x = rng.standard_normal(n).astype(np.float32)
    blocks = n // 256
    out = np.zeros(blocks, np.float32)
    ref = median_s(lambda: fis.plain_sums[(blocks + 255) // 256, 256](x, out, blocks), args.runs)
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.tree[blocks, 256](x, out, n), args.runs)
        rows.append(("tree reduction 256 thr, 2^22 floats", name, t, "same sums, no barriers", ref))
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.warp_block_sums[blocks, 256](x, out, n), args.runs)
        np.testing.assert_allclose(out, x.reshape(blocks, 256).sum(1), rtol=1e-3, atol=1e-3)
        rows.append(("warp-shuffle block sums 256 thr, 2^22", name, t, "same sums, no barriers",
                     ref))
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.helper_block_sums[blocks, 256](x, out, n), args.runs)
        np.testing.assert_allclose(out, x.reshape(blocks, 256).sum(1), rtol=1e-3, atol=1e-3)
        rows.append(("helper block sums (inlined), 2^22", name, t, "same sums, no barriers",
                     ref))
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.tile_block_sums[blocks, 256](x, out, n), args.runs)
        np.testing.assert_allclose(out, x.reshape(blocks, 256).sum(1), rtol=1e-3, atol=1e-3)
        rows.append(("cg::reduce tile block sums, 2^22", name, t, "same sums, no barriers",
                     ref))

    M = N = K = 512
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    ref = median_s(lambda: A @ B, args.runs)
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.matmul[(N // 16, M // 16), (16, 16)](A, B, C, M, N, K),
                     max(3, args.runs // 2) if name == "fibers" else args.runs)
        np.testing.assert_allclose(C, A @ B, rtol=1e-3, atol=1e-3)
        rows.append(("tiled matmul 16x16, 512^3", name, t, "numpy matmul", ref))

    grid = 64
    part = np.zeros(grid, np.float32)
    ref = median_s(lambda: x.sum(), args.runs)
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m["samples<512>"][grid, 512](x, part, n), args.runs)
        np.testing.assert_allclose(part.sum(), x.sum(dtype=np.float64), rtol=1e-3)
        rows.append(("samples reduction (9 barriers), 2^22", name, t, "numpy sum", ref))

    R, COLS = 1024, 768
    X = rng.standard_normal((R, COLS)).astype(np.float32)
    gam = rng.standard_normal(COLS).astype(np.float32)
    bet = rng.standard_normal(COLS).astype(np.float32)
    Y = np.zeros_like(X)

    def np_layernorm():
        mu = X.mean(1, keepdims=True)
        return (X - mu) / np.sqrt(X.var(1, keepdims=True) + 1e-5) * gam + bet
    ref = median_s(np_layernorm, args.runs)
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.layernorm_rows[R // 4, (32, 4)](X, gam, bet, Y, COLS, 1e-5),
                     args.runs)
        np.testing.assert_allclose(Y, np_layernorm(), rtol=1e-3, atol=1e-3)
        rows.append(("warp layernorm rows 1024x768", name, t, "numpy layernorm", ref))

    def np_softmax():
        e = np.exp(X - X.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    ref = median_s(np_softmax, args.runs)
    for name, m in (("fibers", fib), ("fission", fis)):
        t = median_s(lambda: m.softmax_online[R // 4, (32, 4)](X, Y, COLS), args.runs)
        np.testing.assert_allclose(Y, np_softmax(), rtol=1e-4, atol=1e-6)
        rows.append(("warp online softmax rows 1024x768", name, t, "numpy softmax", ref))

    print(f"{'kernel':40s} {'tier':8s} {'median ms':>10s} {'reference':>24s} {'ref ms':>8s} "
          f"{'ratio':>7s}")
    for what, tier, t, refname, r in rows:
        print(f"{what:40s} {tier:8s} {t * 1e3:10.3f} {refname:>24s} {r * 1e3:8.3f} "
              f"{t / r:6.1f}x")
    by = {(w, tier): t for w, tier, t, _, _ in rows}
    for w in dict.fromkeys(w for w, *_ in rows):
        print(f"{w:40s} fission is {by[(w, 'fibers')] / by[(w, 'fission')]:.1f}x faster "
              f"than fibers")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CUDA semantics on the CPU device: what barriers and warp functions cost.

    python benchmarks/cpu_semantics.py [--out FILE]
    OPENBLAS_NUM_THREADS=1 python -m quicklaunch.bench.cpu.semantics [--out FILE]

Rows (median of repeats, all in this process):
  fiber switch      ns per CUDA thread per __syncthreads() (256-thread blocks)
  tree reduction    256-thread shared-memory tree reduction, 2^22 floats (tier 2)
  per-block sums    the same sums without barriers: one thread sums 256 floats (tier 1)
  warp shuffle      __shfl_down_sync reduction of the same sums (tier 2)
  matmul 1024^2     16x16 shared-memory tiled matmul (tier 2) against NumPy's BLAS
                    (with OPENBLAS_NUM_THREADS=1, set before NumPy is imported: idle
                    OpenBLAS threads spin on the same two cores and slow the fibers
                    down; benchmarks/cpu_semantics.py sets it unless it is set)
Every kernel's result is checked against NumPy first. Writes the result as
JSON to --out (benchmarks/cpu_semantics.py: benchmarks/results/cpu-semantics.json).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import quicklaunch as ql

from ..harness.results import save
from ..harness.timing import median, ns_per_call

BARRIERS = r"""
extern "C" __global__ void barriers(int *out, int n) {
    for (int i = 0; i < n; ++i) __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = n;
}
extern "C" __global__ void tree(const float *x, float *out) {
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void shuffle(const float *x, float *out) {
    __shared__ float partial[8];
    unsigned t = threadIdx.x;
    float v = x[blockIdx.x * 256 + t];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((t & 31) == 0) partial[t / 32] = v;
    __syncthreads();
    if (t < 32) {
        v = t < 8 ? partial[t] : 0.0f;
        for (int o = 4; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (t == 0) out[blockIdx.x] = v;
    }
}
#define TILE 16
extern "C" __global__ void matmul(const float *a, const float *b, float *c, int n) {
    __shared__ float as[TILE][TILE], bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        as[threadIdx.y][threadIdx.x] = row < n && k0 + threadIdx.x < n ? a[row * n + k0 + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = col < n && k0 + threadIdx.y < n ? b[(k0 + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[row * n + col] = acc;
}
"""

FLAT = r"""
extern "C" __global__ void block_sums(const float *x, float *out, int blocks) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= blocks) return;
    float s = 0.0f;
    for (int j = 0; j < 256; ++j) s += x[b * 256 + j];
    out[b] = s;
}
"""


def median_s(fn, repeats: int) -> float:
    """Seconds of one ``fn()``, median of ``repeats`` after a warm-up call."""
    return median(ns_per_call(fn), repeats) / 1e9


def main(argv=None, results_dir=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.cpu.semantics",
                                description="what barriers and warp functions cost on the "
                                            "CPU device")
    p.add_argument("--out", default=None, help="the JSON file")
    args = p.parse_args(argv)
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        print("note: OPENBLAS_NUM_THREADS is not set; idle BLAS threads may slow the fibers "
              "down (set it to 1 before starting Python)", file=sys.stderr)
    fibers = ql.compile(BARRIERS, device="cpu")
    flat = ql.compile(FLAT, device="cpu")
    rng = np.random.default_rng(3)
    rows = {}

    out = np.zeros(1, np.int32)
    n_bar = 4000
    t = median_s(lambda: fibers.barriers[1, 256](out, n_bar), 5)
    rows["fiber switch (ns per thread per barrier)"] = t / (256 * n_bar) * 1e9

    n = 1 << 22
    x = rng.standard_normal(n).astype(np.float32)
    ref = x.reshape(-1, 256).sum(1)
    sums = np.full(n // 256, np.nan, np.float32)
    fibers.tree[n // 256, 256](x, sums)
    np.testing.assert_allclose(sums, ref, rtol=1e-3, atol=1e-3)
    sums[:] = np.nan
    fibers.shuffle[n // 256, 256](x, sums)
    np.testing.assert_allclose(sums, ref, rtol=1e-3, atol=1e-3)
    sums[:] = np.nan
    blocks = n // 256
    flat.block_sums[(blocks + 255) // 256, 256](x, sums, blocks)
    np.testing.assert_allclose(sums, ref, rtol=1e-3, atol=1e-3)
    tree = median_s(lambda: fibers.tree[n // 256, 256](x, sums), 3)
    shuffle = median_s(lambda: fibers.shuffle[n // 256, 256](x, sums), 3)
    plain = median_s(lambda: flat.block_sums[(blocks + 255) // 256, 256](x, sums, blocks), 9)
    rows["tree reduction, 2^22 floats (ms)"] = tree * 1e3
    rows["per-block sums without barriers (ms)"] = plain * 1e3
    rows["warp-shuffle reduction (ms)"] = shuffle * 1e3
    rows["tree / barrier-free"] = tree / plain
    rows["shuffle / tree"] = shuffle / tree

    m = 1024
    a = rng.standard_normal((m, m)).astype(np.float32)
    b = rng.standard_normal((m, m)).astype(np.float32)
    c = np.full((m, m), np.nan, np.float32)
    grid = ((m + 15) // 16, (m + 15) // 16)
    fibers.matmul[grid, (16, 16)](a, b, c, m)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-2)
    tiled = median_s(lambda: fibers.matmul[grid, (16, 16)](a, b, c, m), 1)
    blas = median_s(lambda: a @ b, 5)
    rows["matmul 1024^2 tiled, shared memory (ms)"] = tiled * 1e3
    rows["matmul 1024^2 NumPy (ms)"] = blas * 1e3
    rows["tiled / NumPy"] = tiled / blas

    for k, v in rows.items():
        print(f"{k:<45}{v:>12.2f}")
    save({"device": ql.device("cpu").description, "rows": rows}, args.out, results_dir,
         "cpu-semantics.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

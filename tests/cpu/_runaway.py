"""Helpers for the tests of runaway kernels: each runs in a child Python (a
failure must not hang the suite), with the module compiled once in the test
process so the child finds it in the session's compile cache."""
import os
import subprocess
import sys

import quicklaunch as ql

# flag[0]: set to release the spinners (never, here); flag[1]: set by each
# block when it starts, so the test knows the kernel is running.
SOURCE = r"""
#include <stdlib.h>
#include <cooperative_groups.h>
extern "C" __global__ void spin(int *flag) {
    if (threadIdx.x == 0) __atomic_store_n(&flag[1], 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == 0) {}
}
// Block 0 waits for block 1, which waits for a flag no one sets.
extern "C" __global__ void pair(int *flag) {
    if (blockIdx.x == 0) while (__atomic_load_n(&flag[2], __ATOMIC_ACQUIRE) == 0) {}
    else while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == 0) {}
    flag[2] = 1;
}
extern "C" __global__ void one(int *o) { o[blockIdx.x * blockDim.x + threadIdx.x] += 1; }
extern "C" __global__ void ends(int *o, int how, int at) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == at) {
        if (how == 0) abort();
        if (how == 1) exit(3);
        if (how == 2) _Exit(4);
        if (how == 3) quick_exit(5);
    }
    o[i] = 1;
}
extern "C" __global__ void ends_fiber(int *o, int at) {
    __shared__ int tile[64];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == at) exit(7);
    o[i] = tile[63 - threadIdx.x];
}
// Tier 2 (fibers): a barrier, then a spin.
extern "C" __global__ void fiber_spin(int *flag) {
    __shared__ int tile[64];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == tile[0] - 0) {}
}
// Cooperative: every block waits at grid.sync() for block 1, which spins.
extern "C" __global__ void grid_spin(int *flag) {
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    if (blockIdx.x == 1) while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == 0) {}
    g.sync();
}
extern "C" __global__ void wild(float *o) { *(float *)((char *)o + (1L << 62)) = 1.0f; }
"""

PRELUDE = f"""
import os, sys, time
import numpy as np
import quicklaunch as ql
m = ql.compile({SOURCE!r}, device="cpu")
"""


def warm_cache():
    ql.compile(SOURCE, device="cpu")


def child(code: str, **env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PRELUDE + code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **{k: str(v) for k, v in env.items()}})


def run(code: str, timeout: float = 60, **env) -> tuple[int, str, str]:
    p = child(code, **env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"the child hung; stdout:\n{out}\nstderr:\n{err}")
    return p.returncode, out, err

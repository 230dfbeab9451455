"""Tier-2 execution details: spin-waits that yield, the stack size setting,
dynamic shared memory limits."""
import os
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void handoff(volatile int *flag, int *out) {
    if (threadIdx.x == 0) {            // waits for thread 5's store
        while (!*flag) __nanosleep(100);
        out[0] = 1;
    }
    if (threadIdx.x == 5) *flag = 1;
    __syncthreads();
}
extern "C" __global__ void reverse(const int *x, int *out) {
    extern __shared__ int buf[];
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_nanosleep_lets_the_other_threads_run(mod):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    mod.handoff[1, 32](flag, out)
    assert out[0] == 1 and flag[0] == 1


def test_dynamic_shared_memory_and_its_limit(mod, cpu, rng):
    x = rng.integers(-100, 100, 256).astype(np.int32)
    out = np.full(256, -999, np.int32)
    mod.reverse[1, 256, 256 * 4](x, out)
    np.testing.assert_array_equal(out, x[::-1])
    limit = cpu.limits.max_shared_per_block
    with pytest.raises(ql.LaunchValueError, match=f"shared_mem is {limit + 1} bytes"):
        mod.reverse[1, 256, limit + 1](x, out)


def test_stack_size_setting(tmp_path):
    # 128 KiB of locals per CUDA thread: too big for the default 64 KiB fiber
    # stack, fine with QUICKLAUNCH_CPU_STACK=512k.
    code = r"""
import numpy as np, quicklaunch as ql
m = ql.compile('''extern "C" __global__ void big(int *out) {
    volatile int local[32768];
    for (int i = 0; i < 32768; ++i) local[i] = i + threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = local[32767];
}''', device="cpu")
out = np.zeros(64, np.int32)
m.big[1, 64](out)
print("ok", (out == 32767 + np.arange(64)).all())
"""
    env = {**os.environ, "QUICKLAUNCH_CPU_STACK": "512k"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert "ok True" in out.stdout, out.stdout + out.stderr

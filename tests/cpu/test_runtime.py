"""The CPU runtime's worker pool: blocks really run in parallel, launches
from several Python threads are each correct, the GIL is released around
large launches, and QUICKLAUNCH_CPU_THREADS sizes the pool."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void count(unsigned long long *counter, int *owner, int work) {
    atomicAdd(counter, 1ull);
    for (volatile int k = 0; k < work; ++k) {}  // keep a block busy for a while
    // Record which OS thread ran each block (by the address of a thread-local).
    static thread_local int tag;
    if (threadIdx.x == 0) owner[blockIdx.x] = (int)((size_t)&tag >> 4);
}
extern "C" __global__ void add_rows(const float *x, float *y, int rows, int cols) {
    int r = blockIdx.x, c = threadIdx.x;
    for (; c < cols; c += blockDim.x) y[r * cols + c] += x[r * cols + c];
}
// Thread 0 spins until Python sets *flag (bounded), then reports what it saw.
extern "C" __global__ void wait_for_python(volatile int *flag, int *seen, long long spins) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long i = 0;
        while (!*flag && i < spins) ++i;
        *seen = *flag;
    }
}
// The same, then writes 7 into out[0]: an output that must stay where it was.
extern "C" __global__ void wait_for_python_into(volatile int *flag, int *seen, int *out,
                                                long long spins) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        long long i = 0;
        while (!*flag && i < spins) ++i;
        *seen = *flag;
        out[0] = 7;
    }
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_blocks_spread_over_workers(mod):
    blocks = 4096
    counter = np.zeros(1, np.uint64)
    owner = np.zeros(blocks, np.int32)
    mod.count[blocks, 64](counter, owner, 200)
    assert counter[0] == blocks * 64
    if ql.device("cpu").description.startswith("host CPU, 1 "):
        pytest.skip("one worker thread on this machine")
    assert len(np.unique(owner)) > 1, "a large launch should use more than one thread"


def test_tiny_launch_runs_on_the_caller(mod):
    owner = np.zeros(1, np.int32)
    counter = np.zeros(1, np.uint64)
    mod.count[1, 32](counter, owner, 0)
    first = owner[0]
    for _ in range(5):
        mod.count[1, 32](counter, owner, 0)
        assert owner[0] == first
    assert counter[0] == 6 * 32


def test_concurrent_launches_from_python_threads(mod, rng):
    rows, cols = 512, 300
    xs = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(4)]
    ys = [np.zeros((rows, cols), np.float32) for _ in range(4)]
    run = mod.add_rows.configure(rows, 128)
    errors = []

    def work(i):
        try:
            for _ in range(20):
                run(xs[i], ys[i], rows, cols)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(y, 20 * x, rtol=1e-5)


def test_gil_is_released_around_large_launches(mod):
    flag = np.zeros(1, np.int32)
    seen = np.full(1, -1, np.int32)
    setter = threading.Timer(0.05, lambda: flag.__setitem__(0, 1))
    setter.start()
    # 64 blocks x 1024 threads is far above the inline threshold, so the
    # launch drops the GIL and the timer thread can set the flag.
    mod.wait_for_python[64, 1024](flag, seen, 20_000_000_000)
    setter.join()
    assert seen[0] == 1


def test_thread_count_from_environment(tmp_path):
    code = "import quicklaunch as ql; print(ql.device('cpu').description)"
    env = {**os.environ, "QUICKLAUNCH_CPU_THREADS": "3"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert "3 worker threads" in out.stdout, out.stderr


def test_every_pooled_launch_has_finished_when_it_returns(mod):
    counter = np.zeros(1, np.uint64)
    owner = np.zeros(64, np.int32)
    run = mod.count.configure(64, 512)  # pooled: 32768 threads
    for i in range(1, 301):
        run(counter, owner, 0)
        assert counter[0] == i * 64 * 512


def test_a_forked_child_gets_a_pool_of_its_own(tmp_path):
    code = r"""
import os, signal, numpy as np, quicklaunch as ql
mod = ql.compile('extern "C" __global__ void inc(unsigned long long *c) '
                 '{ if (threadIdx.x == 0) atomicAdd(c, 1ull); }', device="cpu")
c = np.zeros(1, np.uint64)
mod.inc[64, 512](c)             # starts the parent's pool
pid = os.fork()
if pid == 0:
    signal.alarm(20)            # a hang kills the child
    mod.inc[64, 512](c)
    os._exit(0 if c[0] == 128 else 1)
_, status = os.waitpid(pid, 0)
print("child", os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "child True" in out.stdout, out.stdout + out.stderr


def test_buffer_arguments_stay_pinned_while_the_gil_is_released(mod):
    # While a large launch runs (GIL released), another thread must not be
    # able to resize a bytearray the kernel writes into.
    data = bytearray(1 << 16)
    flag = np.zeros(1, np.int32)
    seen = np.full(1, -1, np.int32)
    outcome = []

    def resize_then_release():
        try:
            data.extend(b"\0" * (1 << 20))
            outcome.append("resized")
        except BufferError:
            outcome.append("refused")
        flag[0] = 1

    timer = threading.Timer(0.05, resize_then_release)
    timer.start()
    mod.wait_for_python_into[64, 1024](flag, seen, data, 20_000_000_000)
    timer.join()
    assert outcome == ["refused"] and seen[0] == 1
    assert data[:4] == b"\x07\x00\x00\x00"

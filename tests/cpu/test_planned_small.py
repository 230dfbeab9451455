"""The small entry of a planned launch: a configured launch of one block of
fewer than 32 threads, in a module that cannot stop a thread (no assert or
trap), calls the module's `small` row entry (ql_cpu_small_fn) straight from
the runtime's plan, past the block loop. It must behave as the general entry
does: every coordinate, dynamic shared memory, faults reported and
recovered from, order against queued streams."""
import ctypes
import threading

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import loader

from .conftest import poisoned

SOURCE = r"""
extern "C" __global__ void coords(float a, const float *x, float *y, int *dims) {
    unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    unsigned i = b * blockDim.x * blockDim.y * blockDim.z + t;
    y[i] = a * x[i] + (float)(blockIdx.x + threadIdx.y + threadIdx.z);
    if (i == 0) {   // the first thread of the first block
        dims[0] = gridDim.x; dims[1] = gridDim.y; dims[2] = gridDim.z;
        dims[3] = blockDim.x; dims[4] = blockDim.y; dims[5] = blockDim.z;
    }
}
extern "C" __global__ void flip(const int *x, int *y) {
    extern __shared__ int tile[];
    tile[threadIdx.x] = x[threadIdx.x];
    y[threadIdx.x] = tile[threadIdx.x] + 1;
    y[blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] * 0 + (int)blockDim.x;
}
extern "C" __global__ void poke(int *p, int at) { if (threadIdx.x == at) p[1 << 28] = 1; }
extern "C" __global__ void add_one(int *x) { x[0] += 1; }
extern "C" __global__ void slow_then_store(const int *in, int *out, long long iters) {
    volatile float v = 0;
    for (long long k = 0; k < iters; ++k) v = v * 0.5f + 1.0f;
    out[0] = in[0] + 1;
}
"""
ASSERTS = r"""
extern "C" __global__ void check(const int *x) { assert(x[threadIdx.x] >= 0); }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def small_entry(kernel) -> int:
    return loader._Kernel.from_address(kernel.handle).small or 0


def test_tier_one_rows_have_a_small_entry_and_modules_that_stop_threads_do_not(mod, cpu):
    assert all(small_entry(getattr(mod, k)) for k in ("coords", "flip", "poke", "add_one"))
    assert small_entry(ql.compile(ASSERTS, device=cpu).check) == 0   # run keeps the setjmp
    assert small_entry(ql.compile(SOURCE, device=cpu, debug=True).add_one) == 0


@pytest.mark.parametrize("bx", [1, 2, 31])
def test_small_launch_equals_the_general_entry(mod, rng, bx):
    x = rng.standard_normal(bx).astype(np.float32)
    run = mod.coords.configure(1, bx)
    assert run.__self__.planned
    planned, general = poisoned(bx + 3, np.float32), poisoned(bx + 3, np.float32)
    dp, dg = np.full(6, -7, np.int32), np.full(6, -9, np.int32)
    for _ in range(3):
        run(-2.5, x, planned, dp)
    mod.coords.launch(1, bx, -2.5, x, general, dg)
    np.testing.assert_array_equal(planned, general)
    np.testing.assert_array_equal(planned[:bx], np.float32(-2.5) * x)
    assert np.isnan(planned[bx:]).all()
    np.testing.assert_array_equal(dp, [1, 1, 1, bx, 1, 1])
    np.testing.assert_array_equal(dg, dp)


def test_shapes_the_small_entry_does_not_take_still_run_right(mod, rng):
    for grid, block, extra in (((1, 1, 1), (4, 2, 1), [0, 0, 0, 0, 1, 1, 1, 1]),
                               (2, 3, [0, 0, 0, 1, 1, 1]), (1, 32, [0] * 32)):
        n = len(extra)
        x = rng.standard_normal(n).astype(np.float32)
        y, d = poisoned(n + 1, np.float32), np.full(6, -1, np.int32)
        g = poisoned(n + 1, np.float32)
        mod.coords.configure(grid, block)(1.5, x, y, d)
        mod.coords.launch(grid, block, 1.5, x, g, d)
        np.testing.assert_array_equal(y, g)
        np.testing.assert_allclose(y[:n], np.float32(1.5) * x + np.float32(extra), rtol=1e-6)
        assert np.isnan(y[n])


def test_small_launch_with_dynamic_shared_memory(mod, rng):
    for bx in (1, 7, 31):
        x = rng.integers(-1000, 1000, bx).astype(np.int32)
        y = poisoned(2 * bx, np.int32)
        mod.flip.configure(1, bx, shared_mem=4 * bx)(x, y)
        np.testing.assert_array_equal(y[:bx], x + 1)
        np.testing.assert_array_equal(y[bx:], bx)


def test_small_launch_fault_is_reported_and_the_launcher_carries_on(mod):
    assert small_entry(mod.poke)
    p = np.zeros(4, np.int32)
    run = mod.poke.configure(1, 16)
    with pytest.raises(ql.LaunchError, match=r"'poke'.*write to address.*in block \(0, 0, 0\)"):
        run(p, 5)
    run(p, 99)
    np.testing.assert_array_equal(p, 0)
    x = np.array([1], np.int32)
    add = mod.add_one.configure(1, 1)
    for _ in range(5):
        add(x)
    assert x[0] == 6


def test_small_launch_first_on_a_new_thread(mod):
    """A launcher planned on one thread and first called on another: that
    thread's first launch sets up its fault handling (launch_planned), so a
    fault there is still reported and the thread carries on."""
    run, add = mod.poke.configure(1, 16), mod.add_one.configure(1, 1)
    p, x, seen = np.zeros(4, np.int32), np.array([1], np.int32), []

    def work():
        try:
            run(p, 3)
        except ql.LaunchError as e:
            seen.append(str(e))
        add(x)

    for _ in range(3):
        t = threading.Thread(target=work)
        t.start()
        t.join(timeout=60)
    assert len(seen) == 3 and all("'poke'" in s and "write to address" in s for s in seen)
    assert x[0] == 4 and not p.any()


def test_small_launch_keeps_order_after_queued_work(mod, cpu):
    x, y = np.array([6], np.int32), poisoned(1, np.int32)
    run = mod.add_one.configure(1, 1)
    with ql.Stream(device=cpu) as s:
        mod.slow_then_store[1, 1, 0, s](x, y, 5_000_000)
        run(y)
        s.synchronize()
    assert y[0] == 8

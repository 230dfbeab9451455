"""Planned launches on the CPU device: a configured launcher (k[grid, block],
k.configure) whose configuration runs on the caller, on the default stream,
is checked once and then launched with only its parameters per call
(runtime.c's ql_cpu_plan_launch). Planning changes cost, never behaviour:
the same results as the general entry, the same order against queued
streams, the same fault and trap reports."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
extern "C" __global__ void axpb(float a, const float *x, float *y, int n) {
    int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y
            + threadIdx.y * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + (float)threadIdx.y;
}
// Dynamic shared memory, reversed within the block.
extern "C" __global__ void flip(const int *x, int *y) {
    extern __shared__ int tile[];
    tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void poke(int *p, int at) { if (threadIdx.x == at) p[1 << 28] = 1; }
extern "C" __global__ void check(const int *x) { assert(x[threadIdx.x] >= 0); }
extern "C" __global__ void slow_then_store(const int *in, int *out, long long iters) {
    volatile float v = 0;
    for (long long k = 0; k < iters; ++k) v = v * 0.5f + 1.0f;
    out[0] = in[0] + 1;
}
extern "C" __global__ void add_one(int *x) { x[0] += 1; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


@pytest.mark.parametrize("grid, block", [(1, 1), (1, 31), (1, 32), (3, (8, 2)), ((2, 3), 5),
                                         (1, 1024)])
def test_planned_equals_the_general_entry(mod, rng, grid, block):
    n = 3 * 1024 + 7
    x = rng.standard_normal(n).astype(np.float32)
    run = mod.axpb.configure(grid, block)
    assert run.__self__.planned
    planned, general = poisoned(n, np.float32), poisoned(n, np.float32)
    for _ in range(3):              # a plan is reused, not consumed
        run(1.5, x, planned, n)
    mod.axpb.launch(grid, block, 1.5, x, general, n)
    np.testing.assert_array_equal(planned, general)
    bx, by = (block, 1) if isinstance(block, int) else block
    gx, gy = (grid, 1) if isinstance(grid, int) else grid
    m = min(n, gx * gy * bx * by)
    ty = (np.arange(m) % (bx * by)) // bx
    np.testing.assert_array_equal(planned[:m], np.float32(1.5) * x[:m] + ty.astype(np.float32))
    assert np.isnan(planned[m:]).all()


def test_planned_dynamic_shared_memory(mod, rng):
    for bx in (1, 31, 33, 256):
        x = rng.integers(-1000, 1000, 2 * bx).astype(np.int32)
        y = poisoned(2 * bx, np.int32)
        run = mod.flip.configure(2, bx, shared_mem=4 * bx)
        assert run.__self__.planned
        run(x, y)
        np.testing.assert_array_equal(y, x.reshape(2, bx)[:, ::-1].ravel())


def test_what_is_not_planned(mod, cpu):
    with ql.Stream(device=cpu) as s:
        assert not mod.axpb.configure(1, 32, stream=s).__self__.planned
    # a grid too large for the caller goes to the pool, through the general entry
    inline = cpu.backend.inline_threads
    assert not mod.axpb.configure(inline // 256 + 2, 256).__self__.planned
    assert mod.axpb.configure(1, 1024).__self__.planned   # one block: always the caller's


def test_stub_and_debug_builds_take_their_own_entry(cpu):
    for opts in ({"stub": True}, {"debug": True}):
        try:
            m = ql.compile(SOURCE, device=cpu, **opts)
        except ql.CompileError as exc:      # no host compiler for the stub
            pytest.skip(str(exc))
        run = m.add_one.configure(1, 1)
        x = np.array([41], np.int32)
        run(x)
        assert x[0] == 42
        if "stub" in opts:
            assert not run.__self__.planned   # the stub's trampoline is the entry


def test_planned_launch_keeps_order_after_queued_work(mod, cpu):
    x, y = np.array([6], np.int32), poisoned(1, np.int32)
    run = mod.add_one.configure(1, 1)        # planned before anything was queued
    assert run.__self__.planned
    with ql.Stream(device=cpu) as s:
        mod.slow_then_store[1, 1, 0, s](x, y, 5_000_000)
        run(y)                               # the default stream waits for s
        s.synchronize()
    assert y[0] == 8


def test_planned_fault_names_the_thread_and_the_launcher_carries_on(mod):
    p = np.zeros(4, np.int32)
    run = mod.poke.configure(1, 16)
    assert run.__self__.planned
    with pytest.raises(ql.LaunchError, match=r"'poke'.*write to address.*in block \(0, 0, 0\), "
                       r"thread \(\?, 0, 0\)"):
        run(p, 5)
    run(p, 99)                               # no thread faults: the same launcher works
    np.testing.assert_array_equal(p, 0)


def test_planned_assert_is_reported(mod):
    run = mod.check.configure(1, 8)
    assert run.__self__.planned
    x = np.arange(8, dtype=np.int32)
    run(x)
    x[3] = -1
    with pytest.raises(ql.LaunchError, match="assert"):
        run(x)
    x[3] = 3
    run(x)


def test_planned_arguments_are_still_checked(mod):
    run = mod.axpb.configure(1, 4)
    y = poisoned(4, np.float32)
    with pytest.raises(ql.LaunchTypeError, match="axpb.*parameter 2 'x'"):
        run(1.0, [1.0, 2.0], y, 4)
    with pytest.raises(ql.LaunchValueError, match="axpb.*parameter 3 'y'.*read-only"):
        ro = np.zeros(4, np.float32)
        ro.flags.writeable = False
        run(1.0, ro, ro, 4)
    assert np.isnan(y).all()


DEFAULTS = r"""
extern "C" __global__ void scale_n(float *y, float a = 3.0f, int n = 5) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
"""


def test_planned_launcher_hands_the_rest_to_the_general_path(mod, cpu, rng):
    """A planned launcher's own function takes only positional calls with
    every argument and no hooks; keywords, a wrong count, defaults and
    ql.trace go to the general path and behave as there."""
    run = mod.axpb.configure(1, 7)
    assert run.__self__.planned
    x = rng.standard_normal(7).astype(np.float32)
    y = poisoned(7, np.float32)
    with pytest.raises(ql.LaunchTypeError, match="axpb.*by position"):
        run(2.0, x, y, n=7)
    with pytest.raises(ql.LaunchTypeError, match="axpb.*takes 4 arguments.*got 3"):
        run(2.0, x, y)
    assert np.isnan(y).all()
    with ql.trace() as t:
        run(2.0, x, y, 7)
    assert [e["name"] for e in t.events] == ["axpb"]
    np.testing.assert_array_equal(y, np.float32(2.0) * x)
    run(0.5, x, y, 7)              # after the trace: the planned path again
    np.testing.assert_array_equal(y, np.float32(0.5) * x)

    dmod = ql.compile(DEFAULTS, device=cpu)
    drun = dmod.scale_n.configure(1, 8)
    assert drun.__self__.planned
    base = rng.standard_normal(8).astype(np.float32)
    y = base.copy()
    drun(y)                        # a and n from their defaults
    np.testing.assert_array_equal(y, np.where(np.arange(8) < 5, base * np.float32(3), base))
    y = base.copy()
    drun(y, 2.0, 8)
    np.testing.assert_array_equal(y, base * np.float32(2))


def test_planned_arguments_the_fast_pass_leaves(mod, rng):
    """The planned function packs the common arguments itself and hands the
    first other one, and everything after it, to the general pass: NumPy
    scalars, a bytearray (a buffer view, released after the launch), an
    error after such an argument. Every mix gives the general entry's
    result, and a view is never left held."""
    run = mod.axpb.configure(1, 7)
    assert run.__self__.planned
    x = rng.standard_normal(7).astype(np.float32)
    raw = bytearray(x.tobytes())
    for a, xs, n in [(np.float32(2.0), x, 7), (2.0, raw, 7), (2.0, x, np.int32(7)),
                     (np.float64(2.0), raw, np.int64(7))]:
        y = poisoned(7, np.float32)
        run(a, xs, y, n)
        np.testing.assert_array_equal(y, np.float32(2.0) * x)
    raw.extend(b"\0" * 4)   # no view of it is held any more
    del raw[-4:]
    y = poisoned(7, np.float32)
    with pytest.raises(ql.LaunchOverflowError, match="axpb.*parameter 4 'n'"):
        run(np.float32(2.0), raw, y, 2**40)
    with pytest.raises(ql.LaunchTypeError, match="axpb.*parameter 3 'y'"):
        run(2.0, raw, "y", 7)
    raw.extend(b"\0" * 4)   # released after the failed launches too
    assert np.isnan(y).all()

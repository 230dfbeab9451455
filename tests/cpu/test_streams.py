"""Streams, events and graphs on the CPU device: ordering within a stream,
overlap across streams, events (timing, waits), the legacy default stream,
errors of queued work, graph replay and argument updates, misuse, and
QUICKLAUNCH_LAUNCH_BLOCKING."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
// Each launch appends its tag to a log: the order launches ran in.
extern "C" __global__ void append(int *log, int *count, int tag) {
    log[atomicAdd(count, 1)] = tag;
}
// Busy for `iters` steps, then stores 1 + what `in` held.
extern "C" __global__ void slow_then_store(const int *in, int *out, long long iters) {
    volatile float v = 0;
    for (long long k = 0; k < iters; ++k) v = v * 0.5f + 1.0f;
    out[0] = in[0] + 1;
}
// Two of these on two streams meet only if they run at the same time: each
// raises its own flag and waits (bounded) for the other's.
extern "C" __global__ void rendezvous(int *mine, int *other, int *saw) {
    atomicExch(mine, 1);
    for (long long k = 0; k < 4000000000LL; ++k)
        if (atomicAdd(other, 0)) { saw[0] = 1; return; }
    saw[0] = 0;
}
extern "C" __global__ void heat(const float *u, float *v, int n, float k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= n || y >= n) return;
    int i = y * n + x;
    float c = u[i];
    float l = x > 0 ? u[i - 1] : c, r = x < n - 1 ? u[i + 1] : c;
    float d = y > 0 ? u[i - n] : c, t = y < n - 1 ? u[i + n] : c;
    v[i] = c + k * (l + r + d + t - 4 * c);
}
extern "C" __global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" __global__ void null_write(int *p) { p[threadIdx.x] = 1; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_order_within_a_stream(mod):
    log, count = poisoned(200, np.int32), np.zeros(1, np.int32)
    with ql.Stream("cpu") as s:
        run = mod.append.configure(1, 1, stream=s)
        for tag in range(200):
            run(log, count, tag)
        s.synchronize()
        assert s.query()
    np.testing.assert_array_equal(log, np.arange(200))


def test_streams_overlap(mod):
    flags, saw = np.zeros(2, np.int32), poisoned(2, np.int32)
    with ql.Stream("cpu") as a, ql.Stream("cpu") as b:
        mod.rendezvous[1, 1, 0, a](flags[0:], flags[1:], saw[0:])
        mod.rendezvous[1, 1, 0, b](flags[1:], flags[0:], saw[1:])
        a.synchronize()
        b.synchronize()
    np.testing.assert_array_equal(saw, [1, 1])  # each saw the other running


def test_launch_returns_before_the_kernel_ran(mod):
    x, y = np.zeros(1, np.int32), poisoned(1, np.int32)
    with ql.Stream("cpu") as s:
        mod.slow_then_store[1, 1, 0, s](x, y, 20_000_000)
        assert not s.query()  # queued or running
        s.synchronize()
    assert y[0] == 1


def test_events_time_and_order(mod):
    x, y = np.zeros(1, np.int32), poisoned(1, np.int32)
    with ql.Stream("cpu") as s:
        start, mid, end = ql.Event("cpu"), ql.Event("cpu"), ql.Event("cpu")
        t0 = time.perf_counter()
        start.record(s)
        mod.slow_then_store[1, 1, 0, s](x, y, 2_000_000)
        mid.record(s)
        mod.slow_then_store[1, 1, 0, s](y, x, 2_000_000)
        s.record(end)
        end.synchronize()
        wall_ms = (time.perf_counter() - t0) * 1e3
    first, both = start.elapsed_time(mid), start.elapsed_time(end)
    assert 0 < first <= both <= wall_ms
    assert mid.elapsed_time(end) == pytest.approx(both - first, abs=1e-3)
    assert end.query() and (y[0], x[0]) == (1, 2)


def test_wait_on_event_across_streams(mod):
    x, y, z = np.zeros(1, np.int32), poisoned(1, np.int32), poisoned(1, np.int32)
    with ql.Stream("cpu") as producer, ql.Stream("cpu") as consumer:
        mod.slow_then_store[1, 1, 0, producer](x, y, 20_000_000)
        done = producer.record()
        consumer.wait(done)
        mod.slow_then_store[1, 1, 0, consumer](y, z, 0)  # reads y after the producer
        consumer.synchronize()
    assert (y[0], z[0]) == (1, 2)


def test_default_stream_waits_for_streams(mod):
    x, y, z = np.zeros(1, np.int32), poisoned(1, np.int32), poisoned(1, np.int32)
    with ql.Stream("cpu") as s:
        mod.slow_then_store[1, 1, 0, s](x, y, 20_000_000)
        mod.slow_then_store[1, 1](y, z, 0)  # default stream: after the queued work
        assert z[0] == 2
        ql.device("cpu").synchronize()


def test_failure_surfaces_at_the_next_synchronisation(mod):
    log, count = poisoned(10, np.int32), np.zeros(1, np.int32)
    with ql.Stream("cpu") as bad, ql.Stream("cpu") as good:
        mod.null_write[1, 4, 0, bad](None)
        mod.append[1, 1, 0, good](log, count, 7)
        good.synchronize()  # an unrelated stream is not poisoned
        with pytest.raises(ql.LaunchError, match=r"Stream.synchronize\(\): an earlier launch "
                           r"failed: kernel 'null_write' \(status 700\): invalid memory "
                           r"access: write to address 0x0"):
            bad.synchronize()
        bad.synchronize()  # reported once
        mod.append[1, 1, 0, bad](log, count, 8)  # and the stream still works
        bad.synchronize()
        mod.null_write[1, 4, 0, bad](None)
        with pytest.raises(ql.LaunchError, match="kernel 'null_write'"):
            ql.device("cpu").synchronize()
    assert list(log[:2]) == [7, 8]


def test_closed_or_forged_streams_are_refused(mod):
    s = ql.Stream("cpu")
    handle = s.handle
    s.close()
    x = np.zeros(1, np.int32)
    with pytest.raises(ql.LaunchError, match="closed"):
        mod.append[1, 1, 0, s](x, x, 0)
    with pytest.raises(ql.LaunchError, match=r"invalid handle.*stream handle is not valid"):
        mod.append[1, 1, 0, handle](x, x, 0)
    with pytest.raises(ql.LaunchError, match="invalid handle"):
        mod.append[1, 1, 0, 12345](x, x, 0)


def heat_steps(mod, u0, steps, n):
    u, v = u0.copy(), np.empty_like(u0)
    grid = ((n + 31) // 32, n)
    for _ in range(steps):
        mod.heat[grid, 32](u, v, n, 0.2)
        u, v = v, u
    return u


def test_graph_replay_equals_eager(mod, rng):
    n, steps = 64, 20
    u0 = rng.random((n, n), dtype=np.float32)
    eager = heat_steps(mod, u0, steps, n)
    u, v = u0.copy(), np.empty_like(u0)
    with ql.graph(device="cpu") as g:
        for step in range(steps):
            a, b = (u, v) if step % 2 == 0 else (v, u)
            mod.heat[((n + 31) // 32, n), 32](a, b, n, 0.2)
    np.testing.assert_array_equal(u, u0)  # recorded, not run
    assert len(g) == steps and g.nodes[3].kernel is mod.heat and g.nodes[3].grid == (2, 64, 1)
    g.replay()
    np.testing.assert_array_equal(u, eager)
    with ql.Stream("cpu") as s:  # replayed as queued work
        u[...] = u0
        g.replay(s)
        s.synchronize()
    np.testing.assert_array_equal(u, eager)


def test_graph_node_update(mod, rng):
    x0 = rng.standard_normal(1000).astype(np.float32)
    x = x0.copy()
    with ql.graph(device="cpu") as g:
        mod.scale[4, 256](x, 2.0, 1000)
        mod.scale[4, 256](x, 3.0, 1000)
    g.replay()
    np.testing.assert_allclose(x, x0 * 6)
    g.nodes[1].update(x, 0.5, 1000)
    g.replay()
    np.testing.assert_allclose(x, x0 * 6)  # * 2 * 0.5
    other = x0.copy()
    g.nodes[0].update(other, 10.0, 500)
    g.replay()
    np.testing.assert_allclose(other[:500], x0[:500] * 10)
    np.testing.assert_allclose(other[500:], x0[500:])
    with pytest.raises(ql.LaunchTypeError, match="kernel 'scale' takes 3 arguments"):
        g.nodes[0].update(x, 1.0)
    with pytest.raises(ql.LaunchOverflowError, match="'n'"):
        g.nodes[0].update(x, 1.0, 2**40)


def test_graph_with_event_wait(mod):
    a, b, c = np.full(1, 5, np.int32), poisoned(1, np.int32), poisoned(1, np.int32)
    with ql.Stream("cpu") as producer, ql.Stream("cpu") as s:
        done = ql.Event("cpu")
        with ql.graph(stream=s) as g:
            s.wait(done)
            mod.slow_then_store[1, 1, 0, s](b, c, 0)  # c = b + 1, once b is written
        assert [n.kernel for n in g.nodes] == [None, mod.slow_then_store]
        mod.slow_then_store[1, 1, 0, producer](a, b, 20_000_000)  # b = 6, slowly
        done.record(producer)
        g.replay(s)
        s.synchronize()
    assert (b[0], c[0]) == (6, 7)


def test_graph_misuse(mod):
    x = np.zeros(4, np.int32)
    with pytest.raises(ql.LaunchError, match=r"synchronize\(\) while a graph is being recorded"):
        with ql.graph(device="cpu"):
            mod.append[1, 1](x, x[1:], 0)
            ql.device("cpu").synchronize()
    with ql.Stream("cpu") as s:
        with pytest.raises(ql.LaunchError, match="while a graph is being recorded"):
            with ql.graph(device="cpu"):
                s.synchronize()
        with pytest.raises(ql.LaunchError, match="cannot nest"):
            with ql.graph(device="cpu"):
                with ql.graph(device="cpu"):
                    pass
        g = ql.graph(device="cpu")
        with pytest.raises(ql.LaunchError, match="not been recorded"):
            g.replay()


def test_debug_launch_on_another_stream_during_a_recording(cpu):
    dbg = ql.compile(SOURCE, device=cpu, debug=True)
    x = np.zeros(4, np.int32)
    with ql.Stream("cpu") as s:
        with pytest.raises(ql.LaunchValueError, match=r"kernel 'append' is launched on stream "
                           r"0x[0-9a-f]+ while a graph is being recorded on stream 0x0"):
            with ql.graph(device="cpu"):
                dbg.append[1, 1, 0, s](x, x[3:], 1)
        with ql.graph(device="cpu") as g:  # on the graph's stream: recorded
            dbg.append[1, 1](x, x[3:], 1)
        assert len(g) == 1


def test_debug_stream_launches_are_synchronous(cpu):
    dbg = ql.compile(SOURCE, device=cpu, debug=True)
    with ql.Stream("cpu") as s:
        with pytest.raises(ql.LaunchError, match="kernel 'null_write'"):
            dbg.null_write[1, 4, 0, s](None)


def test_blocking_mode_raises_at_the_launch():
    code = """
import numpy as np, quicklaunch as ql
m = ql.compile('extern "C" __global__ void w(int *p) { p[threadIdx.x] = 1; }')
s = ql.Stream()
try:
    m.w[1, 4, 0, s](None)
except ql.LaunchError as e:
    print("raised at launch:", e)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "QUICKLAUNCH_LAUNCH_BLOCKING": "1"})
    assert "raised at launch: kernel 'w' failed on the CPU device: (status 700): invalid " \
           "memory access" in out.stdout, out.stderr

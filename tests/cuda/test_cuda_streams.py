"""Streams, events and graphs on a real GPU, checked against NumPy: order
within a stream, waits on events across streams, blocking streams and the
legacy default stream, event timing, graph replay against eager execution,
and node updates.

Ordering tests put a kernel that spins for tens of milliseconds first, so
work that did not wait for it would see the old data."""
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void axpb(float *x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
extern "C" __global__ void spin_set(float *x, float v, long long cycles, int n) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
extern "C" __global__ void copy(const float *src, float *dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"""
N = 1 << 16
GRID, BLOCK = N // 256, 256
SPIN = 50_000_000  # clock64 cycles: about 25 ms at 2 GHz
STEPS = [(2.0, 1.0), (-1.0, 5.0), (0.5, 0.25), (3.0, -2.0), (1.5, 0.0), (-0.5, 1.0)]


@pytest.fixture(scope="module")
def mod(gpu):
    return ql.compile(SOURCE, device=gpu)


@pytest.fixture
def host(rng):
    return rng.standard_normal(N).astype(np.float32)


def numpy_steps(x, steps):
    x = x.copy()
    for a, b in steps:
        x = np.float32(a) * x + np.float32(b)
    return x


def test_order_within_a_stream(mod, gpu, host):
    x = ql.asarray(host, device=gpu)
    with ql.Stream(device=gpu) as s:
        mod.spin_set[GRID, BLOCK, 0, s](x, 3.0, 4 * SPIN, N)
        assert s.query() is False  # queued: the launch returned before the kernel ran
        for a, b in STEPS:
            mod.axpb[GRID, BLOCK, 0, s](x, a, b, N)
        s.synchronize()
        assert s.query() is True
    np.testing.assert_allclose(x.numpy(), numpy_steps(np.full(N, 3, np.float32), STEPS),
                               rtol=1e-5)


def test_wait_on_an_event_orders_two_streams(mod, gpu):
    x, y = ql.zeros(N, np.float32, device=gpu), ql.zeros(N, np.float32, device=gpu)
    s1, s2 = ql.Stream(device=gpu), ql.Stream(device=gpu)
    mod.spin_set[GRID, BLOCK, 0, s1](x, 42.0, SPIN, N)
    done = s1.record()
    s2.wait(done)
    mod.copy[GRID, BLOCK, 0, s2](x, y, N)
    s2.synchronize()
    assert done.query() is True
    np.testing.assert_array_equal(y.numpy(), np.full(N, 42, np.float32))
    s1.close()
    s2.close()


def test_a_stream_and_the_default_stream(mod, gpu):
    """Streams are blocking: the legacy default stream waits for their work."""
    x, y = ql.zeros(N, np.float32, device=gpu), ql.zeros(N, np.float32, device=gpu)
    s = ql.Stream(device=gpu)
    mod.spin_set[GRID, BLOCK, 0, s](x, 7.0, SPIN, N)
    mod.copy[GRID, BLOCK](x, y, N)  # the default stream
    gpu.synchronize()
    np.testing.assert_array_equal(y.numpy(), np.full(N, 7, np.float32))
    s.close()


def test_event_timing(mod, gpu):
    x = ql.zeros(N, np.float32, device=gpu)
    s = ql.Stream(device=gpu)
    start, end = ql.Event(gpu), ql.Event(gpu)
    start.record(s)
    mod.spin_set[GRID, BLOCK, 0, s](x, 1.0, SPIN, N)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 1.0 < ms < 10_000  # the spin alone takes milliseconds
    untimed = ql.Event(gpu, timing=False).record(s)
    untimed.synchronize()
    with pytest.raises(ql.LaunchError, match="timing=True"):
        start.elapsed_time(untimed)
    s.close()


def record_steps(mod, x, stream=None):
    with ql.graph(device=x.device, stream=stream) as g:
        for a, b in STEPS:
            mod.axpb[GRID, BLOCK, 0, stream](x, a, b, N)
    return g


def test_graph_replay_equals_eager_execution(mod, gpu, host):
    eager = ql.asarray(host, device=gpu)
    for a, b in STEPS:
        mod.axpb[GRID, BLOCK](eager, a, b, N)
    x = ql.asarray(host, device=gpu)
    g = record_steps(mod, x)
    gpu.synchronize()
    np.testing.assert_array_equal(x.numpy(), host)  # recorded, not run
    g.replay()
    gpu.synchronize()
    np.testing.assert_array_equal(x.numpy(), eager.numpy())
    np.testing.assert_allclose(x.numpy(), numpy_steps(host, STEPS), rtol=1e-5, atol=1e-6)
    g.replay()
    gpu.synchronize()
    np.testing.assert_allclose(x.numpy(), numpy_steps(host, STEPS + STEPS), rtol=1e-5,
                               atol=1e-5)


def test_graph_replay_on_a_stream_after_an_event(mod, gpu, host):
    x = ql.asarray(host, device=gpu)
    s, other = ql.Stream(device=gpu), ql.Stream(device=gpu)
    ready = ql.Event(gpu)
    with ql.graph(stream=s) as g:
        s.wait(ready)
        for a, b in STEPS:
            mod.axpb[GRID, BLOCK, 0, s](x, a, b, N)
    mod.spin_set[GRID, BLOCK, 0, other](x, 2.0, SPIN, N)  # x = 2, slowly
    ready.record(other)
    g.replay(s)  # waits for the spin: its steps start from 2
    s.synchronize()
    np.testing.assert_allclose(x.numpy(), numpy_steps(np.full(N, 2, np.float32), STEPS),
                               rtol=1e-5)
    s.close()
    other.close()


def test_node_update_takes_effect(mod, gpu, host):
    x = ql.asarray(host, device=gpu)
    g = record_steps(mod, x)
    g.replay()
    gpu.synchronize()
    x.copy_from(host)
    g.nodes[3].update(x, 10.0, -1.0, N)  # a new scalar
    g.replay()
    gpu.synchronize()
    steps = list(STEPS)
    steps[3] = (10.0, -1.0)
    np.testing.assert_allclose(x.numpy(), numpy_steps(host, steps), rtol=1e-5, atol=1e-5)
    # a new pointer: node 0 now works on another buffer, the rest on x
    other = ql.asarray(host, device=gpu)
    x.copy_from(host)
    g.nodes[0].update(other, STEPS[0][0], STEPS[0][1], N)
    g.replay()
    gpu.synchronize()
    np.testing.assert_allclose(other.numpy(), numpy_steps(host, steps[:1]), rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), numpy_steps(host, steps[1:]), rtol=1e-5, atol=1e-5)


def test_synchronising_inside_a_recording_raises(mod, gpu):
    x = ql.zeros(N, np.float32, device=gpu)
    with pytest.raises(ql.LaunchError, match="while a graph is being recorded"):
        with ql.graph(device=gpu):
            mod.axpb[GRID, BLOCK](x, 1.0, 1.0, N)
            gpu.synchronize()
    gpu.synchronize()
    np.testing.assert_array_equal(x.numpy(), np.zeros(N, np.float32))  # nothing ran

"""The HIP device with the real HIP runtime. Without an AMD GPU: the device
reports itself unavailable with the reason, and the default device stays
the CPU. With one (tests marked ``gpu``; benchmarks/hip_check.sh runs them):
kernels compile for the GPU's own architecture, run, and agree with CUDA's
rules (the same Python model the CPU device's warp tests use)."""
import os
import pickle

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.hip import driver
from tests.cpu.test_warp_semantics import DOWN, IDX, UP, XOR, shfl_source

HAVE_GPU = driver.probe()[0] > 0


@pytest.mark.no_hiprtc
@pytest.mark.skipif(HAVE_GPU, reason="this machine has an AMD GPU")
def test_without_a_gpu_the_device_says_why():
    with pytest.raises(ql.DeviceError, match=r"HIP runtime|AMD GPU") as info:
        ql.device("hip")
    assert "device='cpu'" in str(info.value)
    count, why = driver.probe()
    assert count == 0 and why
    with pytest.raises(ql.DeviceError):
        ql.compile("__global__ void k() {}", device="hip:0")


@pytest.mark.no_hiprtc
def test_the_default_device_is_never_hip_unless_asked(monkeypatch):
    from quicklaunch import devices
    monkeypatch.delenv("QUICKLAUNCH_DEVICE", raising=False)
    assert ql.device().kind in ("cpu", "cuda")
    assert devices._usable_default() in ("cpu", "cuda")


@pytest.mark.no_hiprtc
def test_hip_errors_are_cuda_errors_and_pickle():
    err = driver.HipError("hipMalloc failed: hipErrorOutOfMemory (2): out of memory",
                          "hipErrorOutOfMemory", 2)
    assert isinstance(err, ql.CudaError)
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.name, back.code) == (str(err), "hipErrorOutOfMemory", 2)


@pytest.mark.no_hiprtc
def test_an_unloadable_runtime_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("QUICKLAUNCH_LIBHIP", str(tmp_path / "libamdhip64.so"))
    driver._reset_for_tests()
    try:
        with pytest.raises(ql.DeviceError, match=r"no usable HIP runtime: the HIP runtime could "
                                                 r"not be opened"):
            driver.runtime()
        assert driver.probe()[0] == 0
    finally:
        driver._reset_for_tests()


@pytest.mark.no_hiprtc
def test_graph_operations_say_they_are_not_built():
    from quicklaunch.backends.hip.streams import HipStreamOps

    class Backend:
        runtime = None
        ordinal = 0

    ops = HipStreamOps(Backend())
    for call in (lambda: ops.graph_create(1), lambda: ops.graph_launch(1, 0)):
        with pytest.raises(ql.LaunchError, match="graphs on HIP are not built yet"):
            call()


# ------------------------------------------------------------------ on a GPU
@pytest.fixture(scope="module")
def gpu():
    return ql.device(os.environ.get("QUICKLAUNCH_HIP_TEST_DEVICE", "hip:0"))


@pytest.mark.gpu
def test_saxpy(gpu):
    mod = ql.compile("""extern "C" __global__ void saxpy(float a, const float *x, float *y,
                                                         int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }""", device=gpu)
    n = 100_001
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y = np.ones(n, np.float32)
    dx, dy = ql.asarray(x, device=gpu), ql.asarray(y, device=gpu)
    mod.saxpy[(n + 255) // 256, 256](2.0, dx, dy, n)
    np.testing.assert_allclose(dy.numpy(), 2.0 * x + 1.0, rtol=1e-6)


SHUFFLES = r"""
extern "C" __global__ void shuffles(const int *in, int *out, int kind, int arg, int width) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x, v = in[g];
    const unsigned long long m = __activemask();
    int r;
    switch (kind) {
    case 0: r = __shfl_sync(m, v, arg, width); break;
    case 1: r = __shfl_up_sync(m, v, (unsigned)arg, width); break;
    case 2: r = __shfl_down_sync(m, v, (unsigned)arg, width); break;
    default: r = __shfl_xor_sync(m, v, arg, width); break;
    }
    out[g] = r;
}
extern "C" __global__ void votes(const int *pred, unsigned long long *ballot, int *any,
                                 int *all, unsigned long long *match) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long m = __activemask();
    ballot[g] = __ballot_sync(m, pred[g]);
    any[g] = __any_sync(m, pred[g]);
    all[g] = __all_sync(m, pred[g]);
    match[g] = __match_any_sync(m, pred[g] % 3);
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("kind", [IDX, UP, DOWN, XOR])
def test_shuffles_follow_cudas_rules(gpu, kind):
    wave = gpu.limits.warp_size
    mod = ql.compile(SHUFFLES, device=gpu)
    n = 4 * wave
    data = np.arange(1000, 1000 + n, dtype=np.int32)
    din, out = ql.asarray(data, device=gpu), ql.zeros(n, np.int32, device=gpu)
    for width in [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= wave]:
        for arg in (0, 1, 3, width - 1, width, 2 * width + 1):
            mod.shuffles[4, wave](din, out, {IDX: 0, UP: 1, DOWN: 2, XOR: 3}[kind], arg, width)
            got = out.numpy()
            for g in range(n):
                lane, base = g % wave, g - g % wave
                assert got[g] == data[base + shfl_source(kind, lane, arg, width)], \
                    (kind, width, arg, g)


@pytest.mark.gpu
def test_votes(gpu):
    wave = gpu.limits.warp_size
    mod = ql.compile(SHUFFLES, device=gpu)
    n = 2 * wave
    pred = np.random.default_rng(3).integers(0, 4, n).astype(np.int32)
    pred[:wave] = 1   # one wavefront all true
    outs = [ql.zeros(n, np.uint64, device=gpu), ql.zeros(n, np.int32, device=gpu),
            ql.zeros(n, np.int32, device=gpu), ql.zeros(n, np.uint64, device=gpu)]
    mod.votes[2, wave](ql.asarray(pred, device=gpu), *outs)
    ballot, any_, all_, match = (o.numpy() for o in outs)
    for w in range(2):
        lanes = pred[w * wave:(w + 1) * wave]
        bits = sum(1 << i for i, p in enumerate(lanes) if p)
        assert set(ballot[w * wave:(w + 1) * wave]) == {bits}
        assert set(any_[w * wave:(w + 1) * wave]) == {int(bits != 0)}
        assert set(all_[w * wave:(w + 1) * wave]) == {int(all(lanes))}
        for i in range(wave):
            same = sum(1 << j for j in range(wave) if lanes[j] % 3 == lanes[i] % 3)
            assert match[w * wave + i] == same


@pytest.mark.gpu
def test_tiles_of_32(gpu):
    mod = ql.compile(r"""
    #include <cooperative_groups.h>
    #include <cooperative_groups/reduce.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void tile_sums(const int *in, int *sum, unsigned *ballot) {
        auto tile = cg::tiled_partition<32>(cg::this_thread_block());
        const int t = threadIdx.x;
        sum[t] = cg::reduce(tile, in[t], cg::plus<int>());
        ballot[t] = tile.ballot(in[t] & 1);
    }""", device=gpu)
    data = np.arange(128, dtype=np.int32)
    s, b = ql.zeros(128, np.int32, device=gpu), ql.zeros(128, np.uint32, device=gpu)
    mod.tile_sums[1, 128](ql.asarray(data, device=gpu), s, b)
    for t in range(128):
        tile = data[t - t % 32:t - t % 32 + 32]
        assert s.numpy()[t] == tile.sum()
        assert b.numpy()[t] == sum(1 << i for i, v in enumerate(tile) if v & 1)


@pytest.mark.gpu
def test_globals_streams_and_events(gpu):
    mod = ql.compile(r"""
    __constant__ float coef[4];
    __device__ int counter;
    extern "C" __global__ void scale(float *x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { x[i] *= coef[i % 4]; atomicAdd(&counter, 1); }
    }""", device=gpu)
    mod.get_global("coef").copy_from(np.array([1, 2, 3, 4], np.float32))
    mod.get_global("counter").copy_from(np.zeros((), np.int32))
    x = ql.asarray(np.ones(1000, np.float32), device=gpu)
    s = ql.Stream(device=gpu)
    start, end = ql.Event(gpu), ql.Event(gpu)
    start.record(s)
    mod.scale[4, 256, 0, s](x, 1000)
    end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    assert np.array_equal(x.numpy(), np.tile(np.arange(1, 5, dtype=np.float32), 250))
    assert int(mod.get_global("counter").numpy()) == 1000
    s.close()
    gpu.synchronize()


@pytest.mark.gpu
def test_dlpack_with_torch(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.version.hip is None:
        pytest.skip("torch without ROCm")
    t = torch.arange(8, dtype=torch.float32, device=f"cuda:{gpu.ordinal}")
    mod = ql.compile("extern \"C\" __global__ void twice(float *x) { x[threadIdx.x] *= 2; }",
                     device=gpu)
    mod.twice[1, 8](t)
    torch.cuda.synchronize()
    assert t.tolist() == [2.0 * i for i in range(8)]
    buf = ql.asarray(np.arange(4, dtype=np.float32), device=gpu)
    assert torch.from_dlpack(buf).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_the_gpu_tests_sources_compile_offline(arch):
    prog = ql.hip.compile(SHUFFLES, arch=arch)
    assert list(prog.kernels) == ["shuffles", "votes"]

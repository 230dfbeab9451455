"""The CPU device's memory checker (ql.compile(..., memcheck=True),
QUICKLAUNCH_MEMCHECK=1): every load and store of a kernel is checked before
it happens; the first bad one is a LaunchError naming the kernel, block,
thread, source line, address, the nearest buffer and how far outside it."""
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import toolchain

from .conftest import poisoned



def _gcc() -> bool:
    try:
        version = toolchain.find_compiler().version
    except ql.CompileError:
        return False
    return "clang" not in version.lower() and ("g++" in version or "GCC" in version)


pytestmark = pytest.mark.skipif(not _gcc(), reason="memcheck builds need g++")

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ float table[8];

__global__ void fill(float *y, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = v;
}

__global__ void shift_read(const float *x, float *y, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i + shift];
}

__global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void static_shared(float *out, int over) {
    __shared__ float s[256];
    s[threadIdx.x + over] = 1.0f;
    out[threadIdx.x] = 2.0f;
}

__global__ void dynamic_shared(float *out, int over) {
    extern __shared__ float d[];
    d[(int)threadIdx.x + over] = (float)threadIdx.x;
    out[threadIdx.x] = 1.0f;
}

__global__ void reduce(const float *x, float *out, int n, int over) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k + over];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

__global__ void use_table(float *out) {
    table[threadIdx.x] = (float)threadIdx.x;
    out[threadIdx.x] = table[threadIdx.x];
}

__global__ void heap(float *out, int over) {
    float *h = (float *)malloc(4 * sizeof(float));
    for (int i = 0; i < 4 + over; ++i) h[i] = (float)i;
    out[threadIdx.x] = h[threadIdx.x % 4];
    free(h);
}

__global__ void copy(float *dst, const float *src, int n) {
    if (threadIdx.x == 0) memcpy(dst, src, n * sizeof(float));
    if (threadIdx.x == 1) memset(dst, 0, sizeof(float));
}

__global__ void groups(const float *x, float *y, float *z) {
    cg::grid_group grid = cg::this_grid();
    auto t = cg::tiled_partition<32>(cg::this_thread_block());
    float v = x[grid.thread_rank()];
    for (int o = 16; o > 0; o /= 2) v += t.shfl_down(v, o);
    if (t.thread_rank() == 0) y[grid.thread_rank() / 32] = v;
    grid.sync();
    if (grid.thread_rank() == 0) {
        float s = 0;
        for (unsigned i = 0; i < grid.size() / 32; ++i) s += y[i];
        z[0] = s;
    }
}

__device__ void accumulate(float *acc, const float *v, int n) {
    for (int i = 0; i < n; ++i) acc[i] += v[i];
}

__global__ void locals(const float *x, float *y, int n) {
    float acc[4] = {0, 0, 0, 0};          // on the fiber's stack, through a pointer
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 4 <= n) accumulate(acc, x + 4 * i, 4);
    __syncthreads();
    if (i < n / 4) y[i] = acc[0] + acc[1] + acc[2] + acc[3];
}

__global__ void count(int *c, int n) { atomicAdd(&c[threadIdx.x % n + (threadIdx.x >= 32)], 1); }
"""
with open(__file__) as _this:
    LINES = {m: i for i, line in enumerate(_this, 1)
             for m in ("    y[i] = v;", "    if (i < n) y[i] = x[i + shift];",
                       "    s[threadIdx.x + over] = 1.0f;",
                       "    d[(int)threadIdx.x + over] = (float)threadIdx.x;",
                       "        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k + over];",
                       "    table[threadIdx.x] = (float)threadIdx.x;")
             if line.rstrip("\n") == m}


@pytest.fixture(scope="module")
def mc(cpu):
    return ql.compile(SOURCE, device=cpu, memcheck=True)


@pytest.fixture(scope="module")
def plain(cpu):
    return ql.compile(SOURCE, device=cpu)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ql.LaunchWarning)   # the stub's size warning
        yield


def _where(line_text):
    return f"{__file__}:{LINES[line_text]}"


def test_fill_past_the_end_is_a_launch_error_and_nothing_is_written(mc):
    big = np.zeros(1100, np.float32)
    big[1000:] = 7.0
    with pytest.raises(ql.LaunchError) as info:
        mc.fill[4, 256](big[:1000], 3.0)
    text = str(info.value)
    assert "kernel 'fill'" in text
    assert "invalid write of 4 bytes" in text
    assert "block (3, 0, 0), thread (232, 0, 0)" in text  # 3 * 256 + 232 == 1000
    assert _where("    y[i] = v;") + " (in fill)" in text
    addr = big[1000:].__array_interface__["data"][0]
    assert f"at address {addr:#x}" in text
    assert "0 bytes past the end of parameter 1 'y' (float *: 4000 bytes at " in text
    assert "[ql-memcheck" not in text
    assert (big[1000:] == 7.0).all()        # the bytes after the array are untouched
    assert (big[:768] == 3.0).all()         # blocks 0-2 ran
    assert (big[768:1000] == 3.0).all()     # block 3's threads before 232 ran


def test_out_of_bounds_read_past_the_end_and_before_the_start(mc):
    x = np.arange(64, dtype=np.float32)
    y = poisoned(64, np.float32)
    with pytest.raises(ql.LaunchError, match=r"invalid read of 4 bytes") as info:
        mc.shift_read[1, 64](x[:60], y, 64, 2)
    text = str(info.value)
    # thread 58 reads x[60]: 0 bytes past the end of 60 floats
    assert "thread (58, 0, 0)" in text
    assert "0 bytes past the end of parameter 1 'x' (const float *: 240 bytes" in text
    assert _where("    if (i < n) y[i] = x[i + shift];") in text
    with pytest.raises(ql.LaunchError, match=r"4 bytes before the start of parameter 1 'x'"):
        mc.shift_read[1, 64](x, y, 64, -1)


def test_far_outside_names_the_distance(mc):
    # y just before x in one allocation, so x is the nearest argument to
    # x[1000] whatever the allocator does (two arrays could land either way)
    both = np.zeros(32, np.float32)
    y, x = both[:16], both[16:]
    x[:] = np.arange(16, dtype=np.float32)
    with pytest.raises(ql.LaunchError, match=r"thread \(0, 0, 0\): 3936 bytes past the end "
                                             r"of parameter 1 'x'"):
        mc.shift_read[1, 16](x, y, 16, 1000)   # x[1000]: (1000 - 16) * 4 bytes past


def test_static_shared_overflow(mc):
    out = poisoned(256, np.float32)
    mc.static_shared[1, 256](out, 0)
    assert (out == 2.0).all()
    with pytest.raises(ql.LaunchError) as info:
        mc.static_shared[1, 256](out, 1)
    text = str(info.value)
    assert "thread (255, 0, 0)" in text
    assert "0 bytes past the end of __shared__ variable 'static_shared(float*, int)::s' " \
           "(1024 bytes at" in text
    assert _where("    s[threadIdx.x + over] = 1.0f;") in text


def test_dynamic_shared_overflow(mc):
    out = np.zeros(64, np.float32)
    mc.dynamic_shared[1, 64, 64 * 4](out, 0)
    with pytest.raises(ql.LaunchError) as info:
        mc.dynamic_shared[1, 64, 64 * 4](out, 1)
    text = str(info.value)
    assert "thread (63, 0, 0)" in text
    assert "0 bytes past the end of the launch's dynamic shared memory (256 bytes at" in text
    assert _where("    d[(int)threadIdx.x + over] = (float)threadIdx.x;") in text
    with pytest.raises(ql.LaunchError, match=r"4 bytes before the start of the launch's "
                                             r"dynamic shared memory"):
        mc.dynamic_shared[1, 64, 64 * 4](out, -1)


def test_fiber_kernel_in_bounds_and_overflow(mc, plain):
    rng = np.random.default_rng(1)
    x = rng.random(1000, dtype=np.float32)
    got, want = poisoned(8, np.float32), poisoned(8, np.float32)
    mc.reduce[8, 128](x, got, 1000, 0)
    plain.reduce[8, 128](x, want, 1000, 0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got.sum(), x.astype(np.float64).sum(), rtol=1e-5)
    with pytest.raises(ql.LaunchError) as info:
        mc.reduce[8, 128](x, got, 1000, 64)   # k=64: s[t + 128] for t < 64
    text = str(info.value)
    assert "invalid read" in text and "__shared__ variable 'reduce(" in text
    assert "block (0, 0, 0), thread (0, 0, 0): 0 bytes past the end" in text
    assert _where("        if (threadIdx.x < k) s[threadIdx.x] += "
                  "s[threadIdx.x + k + over];") in text


def test_in_bounds_results_match_the_plain_build(mc, plain):
    rng = np.random.default_rng(7)
    for n in (1, 255, 256, 1000, 4099):
        x = rng.standard_normal(n).astype(np.float32)
        y0 = rng.standard_normal(n).astype(np.float32)
        got, want = y0.copy(), y0.copy()
        grid = (n + 127) // 128
        mc.saxpy[grid, 128](1.5, x, got, n)
        plain.saxpy[grid, 128](1.5, x, want, n)
        np.testing.assert_array_equal(got, want)
        out = poisoned(n + 16, np.float32)
        mc.shift_read[grid, 128](x, out[:n], n, 0)
        np.testing.assert_array_equal(out[:n], x)
        assert np.isnan(out[n:]).all()       # the poison after the slice is untouched


def test_zero_size_array(mc):
    empty = np.zeros(0, np.float32)
    x = np.zeros(4, np.float32)
    mc.saxpy[1, 32](2.0, empty, empty, 0)    # guarded: no access, no error
    with pytest.raises(ql.LaunchError, match=r"thread \(0, 0, 0\): 0 bytes past the end of "
                                             r"parameter 1 'y' \(float \*: 0 bytes at"):
        mc.fill[1, 32](empty, 1.0)
    mc.shift_read[1, 4](x, x, 4, 0)


def test_globals_and_atomics(mc):
    out = np.zeros(16, np.float32)
    mc.use_table[1, 8](out)
    np.testing.assert_array_equal(out[:8], np.arange(8))
    with pytest.raises(ql.LaunchError) as info:
        mc.use_table[1, 16](out)
    text = str(info.value)
    assert "thread (8, 0, 0): 0 bytes past the end of global 'table' (32 bytes" in text
    assert _where("    table[threadIdx.x] = (float)threadIdx.x;") in text
    c = np.zeros(33, np.int32)
    mc.count[1, 32](c[:32], 32)
    assert (c[:32] == 1).all()
    with pytest.raises(ql.LaunchError) as info:
        mc.count[1, 64](c[:32], 32)   # thread 63: c[32]
    text = str(info.value)
    assert "invalid write of 4 bytes" in text and "(atomicAdd called in count)" in text
    assert "0 bytes past the end of parameter 1 'c'" in text
    assert c[32] == 0


def test_the_module_stays_usable_after_a_report(mc):
    y = np.zeros(10, np.float32)
    with pytest.raises(ql.LaunchError):
        mc.fill[1, 32](y, 1.0)
    big = np.zeros(32, np.float32)
    mc.fill[1, 32](big, 2.0)
    assert (big == 2.0).all()


def test_memcheck_is_its_own_build(cpu):
    src = SOURCE.replace("fill", "fill2")
    a = ql.compile(src, device=cpu, memcheck=True)
    b = ql.compile(src, device=cpu, debug=True)
    assert a.memcheck and a.debug and not b.memcheck
    assert a._path != b._path              # a different cache entry
    assert a.fill2[1, 4].__name__ == "fill2"   # the debug stub


def test_environment_variable(tmp_path):
    script = (
        "import numpy as np, quicklaunch as ql, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "m = ql.compile('__global__ void f(float *y) { y[threadIdx.x] = 1; }', device='cpu')\n"
        "assert m.memcheck\n"
        "try:\n"
        "    m.f[1, 8](np.zeros(4, np.float32))\n"
        "except ql.LaunchError as e:\n"
        "    print(e)\n")
    env = dict(__import__("os").environ, QUICKLAUNCH_MEMCHECK="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert re.search(r"thread \(4, 0, 0\): 0 bytes past the end of parameter 1 'y'", out.stdout)
    env["QUICKLAUNCH_MEMCHECK"] = "yes"
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode != 0 and "QUICKLAUNCH_MEMCHECK='yes': expected 0 or 1" in out.stderr


def test_device_malloc(mc):
    out = np.zeros(8, np.float32)
    mc.heap[1, 8](out, 0)
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 0, 1, 2, 3])
    with pytest.raises(ql.LaunchError, match=r"thread \(0, 0, 0\): 0 bytes past the end of a "
                                             r"16-byte block of device-side malloc at 0x"):
        mc.heap[1, 8](out, 1)


def test_memcpy_and_memset_are_checked(mc):
    src = np.arange(8, dtype=np.float32)
    dst = poisoned(12, np.float32)
    mc.copy[1, 2](dst[:8], src, 8)
    np.testing.assert_array_equal(dst[:8], [0, 1, 2, 3, 4, 5, 6, 7])
    with pytest.raises(ql.LaunchError, match=r"invalid write of 40 bytes .* thread \(0, 0, 0\)"
                                             r": 0 bytes past the end of parameter 1 'dst'"):
        mc.copy[1, 2](dst[:8], np.arange(10, dtype=np.float32), 10)
    assert np.isnan(dst[8:]).all()


def test_a_memcheck_launch_is_not_recorded_into_a_graph(mc, cpu):
    y = np.zeros(32, np.float32)
    with pytest.raises(ql.LaunchValueError, match="memcheck build"):
        with ql.graph(device=cpu):
            mc.fill[1, 32](y, 1.0)


def test_cooperative_groups_and_warp_shuffles(mc, plain):
    x = np.random.default_rng(3).random(256, dtype=np.float32)
    out = {}
    for name, mod in (("mc", mc), ("plain", plain)):
        y, z = poisoned(8, np.float32), poisoned(1, np.float32)
        mod.groups.configure(4, 64, cooperative=True)(x, y, z)
        out[name] = (y, z)
    np.testing.assert_array_equal(out["mc"][0], out["plain"][0])
    np.testing.assert_allclose(out["mc"][1], x.astype(np.float64).sum(), rtol=1e-5)
    with pytest.raises(ql.LaunchError, match=r"0 bytes past the end of parameter 2 'y'"):
        mc.groups.configure(4, 64, cooperative=True)(x, np.zeros(7, np.float32), z)


def test_memcheck_is_for_the_cpu_device():
    from quicklaunch.backends.cpu import memcheck

    class Gpu:
        kind, name = "cuda", "cuda:0"

    with pytest.raises(ql.CompileError, match="compute-sanitizer"):
        memcheck.requested(True, Gpu())
    assert memcheck.requested(False, Gpu()) is False


def test_the_variable_leaves_gpu_compiles_alone(monkeypatch):
    from quicklaunch.backends.cpu import memcheck

    class Gpu:
        kind, name = "hip", "hip:0"

    monkeypatch.setenv("QUICKLAUNCH_MEMCHECK", "1")
    assert memcheck.requested(None, Gpu()) is False
    assert memcheck.requested(None, ql.device("cpu")) is True
    monkeypatch.setenv("QUICKLAUNCH_MEMCHECK", "2")
    with pytest.raises(ql.CompileError, match="expected 0 or 1"):
        memcheck.requested(None, ql.device("cpu"))


def test_locals_through_pointers_on_fiber_stacks(mc, plain):
    x = np.random.default_rng(5).random(4 * 512, dtype=np.float32)
    got, want = poisoned(512, np.float32), poisoned(512, np.float32)
    mc.locals[4, 128](x, got, x.size)
    plain.locals[4, 128](x, want, x.size)
    np.testing.assert_array_equal(got, want)


def test_a_launch_on_the_worker_pool(mc, plain):
    n = 100_000                       # 391 blocks of 256: more than runs inline
    big = poisoned(n + 64, np.float32)
    x = np.random.default_rng(9).random(n, dtype=np.float32)
    mc.shift_read[(n + 255) // 256, 256](x, big[:n], n, 0)
    np.testing.assert_array_equal(big[:n], x)
    with pytest.raises(ql.LaunchError, match=r"0 bytes past the end of parameter 1 'y' "
                                             r"\(float \*: 400000 bytes"):
        mc.fill[(n + 255) // 256, 256](big[:n], 1.0)
    assert np.isnan(big[n:]).all()

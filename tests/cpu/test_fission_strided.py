"""Thread-strided loops in region fission, run with the threads innermost
(fission_strided.py): `for (int c = threadIdx.x; c < n; c += 32)` as a
loop over steps around a loop over the row's threads. Every kernel runs
both ways, fission and fibers, on the same random inputs (same bits), and
against NumPy; loops the pass must not interchange (atomics, a nested loop,
break, a bound that differs between threads, a counter the body changes)
stay in their thread loop, with the same bits too."""
import uuid

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import both_tiers, poisoned, run_as_fission, compile_tier_ahead, tier_prefetch

SOURCE = r"""
#define FULL 0xffffffffu

// One warp per row (blockDim (32, rows)): running max and sum in one pass,
// merged across the warp by xor butterflies, then the exponentials.
__global__ void softmax_rows(const float *x, float *y, int cols) {
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;
    float m = -3.402823466e+38f, d = 0.f;
    for (int c = threadIdx.x; c < cols; c += 32) {
        const float v = xr[c], mn = fmaxf(m, v);
        d = d * expf(m - mn) + expf(v - mn);
        m = mn;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const float mo = __shfl_xor_sync(FULL, m, o);
        const float dn = __shfl_xor_sync(FULL, d, o);
        const float mn = fmaxf(m, mo);
        d = d * expf(m - mn) + dn * expf(mo - mn);
        m = mn;
    }
    for (int c = threadIdx.x; c < cols; c += 32) yr[c] = expf(xr[c] - m) / d;
}

// A grid-stride accumulation, then a shared-memory tree over the block
// (a power-of-two block).
__global__ void grid_sum(const float *in, float *out, int n) {
    __shared__ float s[128];
    const unsigned tid = threadIdx.x;
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    s[tid] = acc;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

// The other spellings: <=, the bound on the left, c = c + S, a step
// smaller than the block (threads share elements), an offset, continue,
// an unsigned and a 64-bit counter.
__global__ void forms(const float *x, float *out, int n) {
    __shared__ float s[128];
    const unsigned tid = threadIdx.x;
    float a = 0.f, b = 0.f, c2 = 0.f, e = 0.f;
    for (int c = tid; c <= n - 1; c = c + 32) {
        if (x[c] < 0.f) continue;
        a += x[c];
    }
    for (int c = 3 + threadIdx.x; n > c; c += 32) b = b * 0.5f + x[c];
    for (unsigned c = tid; c < (unsigned)n; c += blockDim.x) c2 += fmaxf(x[c], 0.25f);
    for (long long c = threadIdx.x; c < n; c += 2 * blockDim.x) e = fmaf(e, 0.75f, x[c]);
    s[tid] = a + b;
    __syncthreads();
    out[tid] = s[(tid + 1) % blockDim.x] + c2 + e;
}

// Threads past `live` return before the barrier: the loop skips them.
__global__ void exited(const float *x, float *out, int n, int live) {
    __shared__ float s[128];
    if (threadIdx.x >= live) return;
    float acc = 0.f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) acc += x[c] * 2.f;
    s[threadIdx.x] = acc;
    __syncthreads();
    out[threadIdx.x] = s[0] + acc;
}

// Under a warp-uniform branch (even rows of a (32, 4) block): its threads only.
__global__ void guarded(const float *x, float *out, int cols) {
    float acc = -1.f;
    if (threadIdx.y % 2 == 0) {
        acc = 0.f;
        for (int c = threadIdx.x; c < cols; c += 32) acc += x[threadIdx.y * cols + c];
        acc += __shfl_xor_sync(FULL, acc, 1);
    }
    out[threadIdx.y * 32 + threadIdx.x] = acc;
}

// The counter has the name of a local the loop's other locals are rebuilt
// from (`p` from `c`, both rematerialised in the loop's region).
__global__ void shadowed(const float *x, float *out, int n) {
    __shared__ float s[64];
    const int c = threadIdx.x * 2;
    const float *p = x + c % 3;
    float acc = 0.f;
    for (int c = threadIdx.x; c < n; c += 64) acc += p[c];
    s[threadIdx.x] = acc;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x] + (float)c;
}

// A reference to a local used in the loop: the loop's own region would
// carry it across a boundary, which the pass cannot, so the kernel runs as
// fission with its loop in its region's thread loop.
__global__ void by_reference(const float *x, float *out, int n) {
    __shared__ float s[64];
    float acc = 0.f;
    float &r = acc;
    for (int c = threadIdx.x; c < n; c += 64) r += x[c];
    s[threadIdx.x] = acc;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}

// Counters the threads do not start at c0 + x in (an int against an
// unsigned bound; an unsigned sum widened to 64 bits), a step that counts
// down (unsigned), a macro naming a local: each left in its thread loop or
// run there at run time, with the fibers' results.
#define START tid + 1
__global__ void odd_counters(const float *x, float *out, unsigned n, int off) {
    __shared__ float s[64];
    const unsigned tid = threadIdx.x;
    float a = 0.f, b = 0.f, c3 = 0.f, d = 0.f;
    for (int c = threadIdx.x + off; c < n; c += blockDim.x) a += x[c];
    for (long long c = threadIdx.x + off; c < (long long)n; c += blockDim.x) b += x[c & 255];
    for (unsigned c = threadIdx.x; c < n; c += 0xffffffffu) c3 += x[c];
    for (int c = START; c < (int)n; c += 64) d += x[c];
    s[tid] = a + b;
    __syncthreads();
    out[tid] = s[63 - tid] + c3 + d;
}

// A local array written at run-time indices: one object per thread (the
// thread loops must not be marked independent for the compiler, which keeps
// one array for the whole loop).
__global__ void local_array(const float *x, const int *idx, float *out, int n) {
    __shared__ float s[128];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    float t[4];
    int j = idx[threadIdx.x] & 3;
    t[j] = s[threadIdx.x];
    t[(j + 1) & 3] = 2.f * s[threadIdx.x];
    float acc = t[j] + t[(j + 1) & 3];
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        float u[4];
        int k = idx[c] & 3;
        u[k] = x[c];
        u[(k + 1) & 3] = 2.f * x[c];
        acc += u[k] + u[(k + 1) & 3];
    }
    __syncthreads();
    out[threadIdx.x] = acc + s[blockDim.x - 1 - threadIdx.x];
}

// Types the kernel declares, used after a barrier (in another region):
// declared again at the top of the generated function.
__global__ void local_types(const float *x, float *out, int n) {
    __shared__ float s[64];
    typedef long index_t;
    enum { STEP = 64 };
    using real = double;
    real acc = 0.0;
    s[threadIdx.x] = 1.f;
    __syncthreads();
    for (index_t c = threadIdx.x; c < (index_t)n; c += STEP) acc += (real)x[c];
    __syncthreads();
    out[threadIdx.x] = (float)acc + s[63 - threadIdx.x];
}

// Loops that stay in their thread loop: their threads' order would show,
// or the pass cannot prove every thread's counter.
__global__ void kept(const float *x, float *out, int *count, const int *len, int n) {
    __shared__ float s[128];
    const unsigned tid = threadIdx.x;
    float a = 0.f, b = 0.f, c3 = 0.f, d = 0.f, f = 0.f;
    for (int c = tid; c < n; c += 32) { atomicAdd(count, 1); a += x[c]; }
    for (int c = tid; c < n; c += 32) for (int k = 0; k < 2; ++k) b += x[c] * k;
    for (int c = tid; c < n; c += 32) { if (x[c] > 1.5f) break; c3 += x[c]; }
    for (int c = tid; c < len[tid]; c += 32) d += x[c];
    for (int c = tid; c < n; c += 32) { f += x[c]; if (x[c] > 2.f) c += 32; }
    s[tid] = a + b + c3 + d + f;
    __syncthreads();
    out[tid] = s[blockDim.x - 1 - tid];
}
"""

KERNELS = ["softmax_rows", "grid_sum", "forms", "exited", "guarded", "shadowed", "by_reference",
           "odd_counters", "local_array", "local_types", "kept"]
INTERCHANGED = {"softmax_rows": 2, "grid_sum": 1, "forms": 4, "exited": 1, "guarded": 1,
                "shadowed": 1, "odd_counters": 1, "local_array": 1}

prefetch_job = tier_prefetch(SOURCE)
compile_ahead = compile_tier_ahead


@pytest.fixture(scope="module")
def mods(cpu):
    return both_tiers(cpu, SOURCE)


def test_which_loops_run_threads_innermost(mods):
    for name in KERNELS:
        reason = mods[0][name].attributes["tier_reason"]
        n = INTERCHANGED.get(name, 0)
        if n:
            assert f"{n} thread-strided loop(s) run threads innermost" in reason, (name, reason)
        else:
            assert "threads innermost" not in reason, (name, reason)


def test_generated_code():
    pytest.importorskip("clang.cindex")
    from quicklaunch.backends.cpu import fission
    res = fission.plan(SOURCE, KERNELS, {k: 2 for k in KERNELS}, "k.cu", 1,
                       ("-D__CUDA_ARCH__=900",), "g++")
    code = res.code
    soft = code[code.index("__ql_fission_softmax_rows"):code.index("__ql_fission_grid_sum")]
    # the row pointer is rebuilt per thread from `row`, not loaded per thread
    assert "xr = (x + (size_t)row * cols);" in soft and "] = xr;" not in soft
    kept = code[code.index("__ql_fission_kept"):]
    assert "__ql_cx" not in kept   # no loop of `kept` interchanged
    assert soft.count("++__ql_i, ++__ql_cx") == 4   # two loops, full and last steps


@pytest.mark.parametrize("cols", [1, 31, 32, 33, 100, 768])
def test_softmax_rows(mods, rng, cols):
    rows = 8
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    y = poisoned((rows, cols), np.float32)
    _, y, _ = run_as_fission(mods, "softmax_rows", rows // 4, (32, 4), x, y, cols)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-9)


@pytest.mark.parametrize("n, block, grid", [(1, 64, 1), (31, 32, 2), (1000, 64, 3),
                                            (4097, 128, 5)])
def test_grid_stride_sum(mods, rng, n, block, grid):
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(grid, np.float32)
    _, out, _ = run_as_fission(mods, "grid_sum", grid, block, x, out, n)
    pad = np.zeros(-(-n // (block * grid)) * block * grid, np.float64)
    pad[:n] = x
    per_thread = pad.reshape(-1, grid, block).sum(0)   # [block, thread]
    np.testing.assert_allclose(out, per_thread.sum(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, block", [(1, 32), (5, 64), (95, 64), (300, 96), (1000, 128)])
def test_forms(mods, rng, n, block):
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(block, np.float32)
    _, out, _ = run_as_fission(mods, "forms", 1, block, x, out, n)
    t = np.arange(block)
    a = np.array([x[i::32][x[i::32] >= 0].astype(np.float64).sum() for i in t])
    b = np.zeros(block)
    for i in t:
        for v in x[i + 3::32]:
            b[i] = b[i] * 0.5 + v
    c2 = np.array([np.maximum(x[i::block], 0.25).astype(np.float64).sum() for i in t])
    e = np.zeros(block)
    for i in t:
        for v in x[i::2 * block]:
            e[i] = e[i] * 0.75 + v
    want = np.roll(a + b, -1) + c2 + e
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("live", [1, 31, 64])
def test_exited_threads_skip_the_loop(mods, rng, live):
    n, block = 200, 64
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(block, np.float32)
    _, out, _, _ = run_as_fission(mods, "exited", 1, block, x, out, n, live)
    acc = np.array([(x[i::block].astype(np.float64) * 2).sum() for i in range(live)])
    np.testing.assert_allclose(out[:live], acc[0] + acc, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[live:].view(np.uint32),
                                  poisoned(block - live, np.float32).view(np.uint32))


@pytest.mark.parametrize("cols", [1, 40, 97])
def test_under_a_warp_uniform_branch(mods, rng, cols):
    x = rng.standard_normal(4 * cols).astype(np.float32)
    out = poisoned(128, np.float32)
    _, out, _ = run_as_fission(mods, "guarded", 1, (32, 4), x, out, cols)
    got = out.reshape(4, 32)
    for r in range(4):
        if r % 2:
            assert (got[r] == -1).all()
            continue
        acc = np.array([x[r * cols + i:(r + 1) * cols:32].astype(np.float64).sum()
                        for i in range(32)])
        np.testing.assert_allclose(got[r], acc + acc[np.arange(32) ^ 1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 63, 300])
def test_a_counter_shadowing_a_local(mods, rng, n):
    x = rng.standard_normal(n + 2).astype(np.float32)
    out = poisoned(64, np.float32)
    _, out, _ = run_as_fission(mods, "shadowed", 1, 64, x, out, n)
    t = np.arange(64)
    acc = np.array([x[i + (2 * i) % 3:n + (2 * i) % 3:64].astype(np.float64).sum() for i in t])
    np.testing.assert_allclose(out, acc[63 - t] + 2 * t, rtol=1e-5, atol=1e-5)


def test_a_loop_the_pass_cannot_split_off_stays_in_its_region(mods, rng):
    reason = mods[0]["by_reference"].attributes["tier_reason"]
    assert "thread-strided loops left in their thread loops (reference 'r'" in reason, reason
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(64, np.float32)
    _, out, _ = run_as_fission(mods, "by_reference", 1, 64, x, out, n)
    acc = np.array([x[i::64].astype(np.float64).sum() for i in range(64)])
    np.testing.assert_allclose(out, acc[::-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, off", [(200, -3), (200, 5), (1, 0), (256, -70)])
def test_counters_that_do_not_start_at_c0_plus_x(mods, rng, n, off):
    x = rng.standard_normal(max(n, 256) + 70).astype(np.float32)
    out = poisoned(64, np.float32)
    run_as_fission(mods, "odd_counters", 1, 64, x, out, n, off)


@pytest.mark.parametrize("n", [1, 100, 300])
def test_local_arrays_stay_per_thread(mods, rng, n):
    x = rng.standard_normal(max(n, 128)).astype(np.float32)
    idx = rng.integers(0, 1000, max(n, 128)).astype(np.int32)
    out = poisoned(128, np.float32)
    _, _, out, _ = run_as_fission(mods, "local_array", 1, 128, x, idx, out, n)
    t = np.arange(128)
    acc = 3.0 * x[:128].astype(np.float64) + np.array(
        [3.0 * x[i:n:128].astype(np.float64).sum() for i in t])
    np.testing.assert_allclose(out, acc + x[127 - t], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 300])
def test_types_the_kernel_declares(mods, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(64, np.float32)
    _, out, _ = run_as_fission(mods, "local_types", 1, 64, x, out, n)
    acc = np.array([x[i:n:64].astype(np.float64).sum() for i in range(64)])
    np.testing.assert_allclose(out, acc + 1, rtol=1e-5, atol=1e-5)


def test_strided_code_that_does_not_compile_falls_back_to_plain_fission(monkeypatch, rng):
    """A gap in the strided loops' code (simulated): the module is built
    again without them, its kernels still run as fission, with the right
    results."""
    from quicklaunch.backends.cpu import fission_strided
    real = fission_strided.Strided.emit_strided
    monkeypatch.setattr(fission_strided.Strided, "emit_strided",
                        lambda self, *a: real(self, *a) + "\nthis does not compile;")
    src = SOURCE + f"\n// {uuid.uuid4().hex}\n"   # a module of its own in any cache
    monkeypatch.setenv("QUICKLAUNCH_CPU_FISSION", "1")
    fis = ql.compile(src, device="cpu")
    assert fis.grid_sum.tier == "fission", fis.grid_sum.attributes["tier_reason"]
    assert "threads innermost" not in fis.grid_sum.attributes["tier_reason"]
    n, grid = 1000, 3
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(grid, np.float32)
    fis.grid_sum[grid, 64](x, out, n)
    pad = np.zeros(-(-n // (64 * grid)) * 64 * grid)
    pad[:n] = x
    np.testing.assert_allclose(out, pad.reshape(-1, grid, 64).sum(0).sum(1), rtol=1e-4,
                               atol=1e-4)


def test_fission_code_that_never_compiles_falls_back_to_fibers(monkeypatch, rng):
    """Both tries fail (simulated): every barrier kernel on fibers, with the
    compiler's first error as the reason, and right results."""
    from quicklaunch.backends.cpu import fission_codegen
    real = fission_codegen.Codegen.generate
    monkeypatch.setattr(fission_codegen.Codegen, "generate",
                        lambda self, *a: real(self, *a) + "\nthis does not compile;")
    src = SOURCE + f"\n// {uuid.uuid4().hex}\n"
    monkeypatch.setenv("QUICKLAUNCH_CPU_FISSION", "1")
    fis = ql.compile(src, device="cpu")
    assert fis.grid_sum.tier == "fibers"
    assert "the fission code did not compile" in fis.grid_sum.attributes["tier_reason"]
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(1, np.float32)
    fis.grid_sum[1, 64](x, out, 100)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [7, 200])
def test_kept_loops(mods, rng, n):
    block = 64
    x = rng.uniform(-1, 2.5, n).astype(np.float32)
    lens = rng.integers(0, n + 1, block).astype(np.int32)
    out = poisoned(block, np.float32)
    count = np.zeros(1, np.int32)
    _, out, count, _, _ = run_as_fission(mods, "kept", 1, block, x, out, count, lens, n)
    assert count[0] == sum(len(range(t, n, 32)) for t in range(block))


def test_a_fault_in_the_loop_names_the_row(mods):
    fis, fib = mods
    y = np.zeros((8, 64), np.float32)
    with pytest.raises(ql.LaunchError, match=r"block \(0, 0, 0\), thread \(\?, 0, 0\).*"
                                             r"does not track threadIdx\.x"):
        fis.softmax_rows[1, (32, 4)](None, y, 64)
    with pytest.raises(ql.LaunchError, match=r"block \(0, 0, 0\), thread \(0, 0, 0\)"):
        fib.softmax_rows[1, (32, 4)](None, y, 64)
    x = np.ones((8, 64), np.float32)   # both carry on
    fis.softmax_rows[2, (32, 4)](x, y, 64)
    np.testing.assert_allclose(y, 1 / 64, rtol=1e-6)

"""clang++ as the CPU device's host compiler (issue 24 item 1): flags chosen
per compiler and architecture by probing it once, and a representative
subset of the CPU suite (plain and barrier kernels, divergent warp
functions, faults, debug builds, globals) run with CXX=clang++. Skipped with
the reason where clang++ is not installed (Debian: apt-get install clang)."""
import shutil

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import toolchain

from .conftest import poisoned

CLANG = shutil.which("clang++")
pytestmark = pytest.mark.skipif(CLANG is None, reason="clang++ is not installed "
                                "(Debian/Ubuntu: apt-get install clang)")


@pytest.fixture
def clang(monkeypatch):
    monkeypatch.setenv("CXX", "clang++")
    compiler = toolchain.find_compiler()
    assert "clang" in compiler.version
    return compiler


def test_flags_probed_per_compiler(clang):
    flags = toolchain.common_flags(clang)
    assert "-fno-ipa-icf" not in flags          # GCC's; clang: "unknown argument"
    assert toolchain.native_flag(clang) in toolchain.release_flags(clang)
    assert toolchain.accepts(clang, toolchain.native_flag(clang))
    assert not toolchain.accepts(clang, "-fno-ipa-icf")
    command = toolchain.build_command(clang, __import__("pathlib").Path("m.cpp"),
                                      __import__("pathlib").Path("m.so"), (), False)
    assert command[0].endswith("clang++")       # the C++ driver, not clang resolved
    gxx = shutil.which("g++")
    if gxx:
        gcc = toolchain._probe("g++")
        assert "-fno-ipa-icf" in toolchain.common_flags(gcc)


def test_native_flag_spelling_per_architecture(clang, monkeypatch):
    # aarch64 tries -mcpu=native first (clang's spelling there), x86-64
    # -march=native; either way the one chosen is one the compiler accepts.
    seen = []
    monkeypatch.setattr(toolchain, "accepts", lambda c, *f: seen.append(f) or True)
    assert toolchain.native_flag(clang, "aarch64") == "-mcpu=native"
    assert toolchain.native_flag(clang, "x86_64") == "-march=native"


SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void twin(int *out) { out[threadIdx.x] = threadIdx.x; }
extern "C" __global__ void twin2(int *out) { out[threadIdx.x] = threadIdx.x; }
extern "C" __global__ void block_sum(const int *in, int *out) {
    __shared__ int s[256];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void active(const int *p, unsigned *taken, unsigned *not_taken) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (p[g]) taken[g] = __activemask();
    else not_taken[g] = __activemask();
}
extern "C" __global__ void wild(int *p) { if (threadIdx.x == 3) *(volatile int *)16 = 1; }
__constant__ char g = -5;
extern "C" __global__ void read_g(int *out) { out[0] = g; }
"""


@pytest.fixture
def mod(clang):
    return ql.compile(SOURCE, device="cpu")


def test_plain_kernels(mod):
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    mod.saxpy[4, 256](np.float32(2), x, y, 1000)
    np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    a, b = poisoned(32, np.int32), poisoned(32, np.int32)
    mod.twin[1, 32](a)
    mod.twin2[1, 32](b)                          # identical kernels, both found
    np.testing.assert_array_equal(a, np.arange(32))
    np.testing.assert_array_equal(b, np.arange(32))


def test_barrier_kernel(mod):
    data = np.arange(4 * 256, dtype=np.int32)
    out = poisoned(4, np.int32)
    mod.block_sum[4, 256](data, out)
    np.testing.assert_array_equal(out, data.reshape(4, 256).sum(1))


def test_activemask_in_divergent_branches(mod):
    # clang sinks the two calls into one after the join unless told not to
    # (nomerge): every lane then saw the whole warp.
    p = (np.arange(64) % 3 == 0).astype(np.int32)
    taken, not_taken = poisoned(64, np.uint32), poisoned(64, np.uint32)
    mod.active[1, 64](p, taken, not_taken)
    for w in range(2):
        bits = p[32 * w:32 * w + 32]
        took = sum(1 << q for q in range(32) if bits[q])
        for q in range(32):
            got = (taken if bits[q] else not_taken)[32 * w + q]
            assert got == (took if bits[q] else 0xFFFFFFFF & ~took)


def test_fault_is_a_launch_error(mod):
    with pytest.raises(ql.LaunchError, match="invalid memory access"):
        mod.wild[1, 8](np.zeros(8, np.int32))


def test_char_global(mod):
    from quicklaunch.kinds import char_dtype
    out = np.zeros(1, np.int32)
    mod.read_g[1, 1](out)
    g = mod.get_global("g")
    assert g.dtype == np.dtype(char_dtype()) and int(np.asarray(g)) == out[0]


def test_debug_build(clang):
    m = ql.compile(SOURCE, device="cpu", debug=True)
    y = np.zeros(10, np.float32)
    m.saxpy[1, 32](np.float32(1), np.arange(10, dtype=np.float32), y, 10)
    np.testing.assert_array_equal(y, np.arange(10))

"""clang++ as the CPU device's host compiler (issue 24 item 1): flags chosen
per compiler and architecture by probing it once, and a representative run
of the CPU suite under CXX=clang++ (the whole tests/cpu under clang is
.ci/clang): every tier (loop, region fission, fibers), warp functions and
their errors, faults and traps, stack overflows on both stacks, globals,
plain char, debug builds. Most tests here call the g++ suite's own tests
with modules compiled by clang. Memcheck builds are g++'s only (the checker
is written against GCC's instrumentation): under clang they are a
CompileError saying so. Skipped with the reason where clang++ is not
installed (Debian: apt-get install clang)."""
import shutil

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import toolchain

from . import test_faults as faults
from . import test_fission as fission
from . import test_globals as globals_
from . import test_warp_semantics as warps
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
extern "C" __global__ void put_char(char c, int *out) { out[0] = c; }
"""


@pytest.fixture(scope="module")
def clang_env():
    """CXX=clang++ while this file's module-scope fixtures compile."""
    mp = pytest.MonkeyPatch()
    mp.setenv("CXX", "clang++")
    assert "clang" in toolchain.find_compiler().version
    yield
    mp.undo()


@pytest.fixture(scope="module")
def mod(clang_env):
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


def test_char_parameter(mod):
    """Plain char as the target's ABI says (x86-64 signed, aarch64 unsigned)."""
    from quicklaunch.kinds import char_is_signed
    out = poisoned(1, np.int32)
    if char_is_signed():
        mod.put_char[1, 1](-3, out)
        assert out[0] == -3
        with pytest.raises(OverflowError):
            mod.put_char[1, 1](200, out)
    else:
        mod.put_char[1, 1](251, out)
        assert out[0] == 251
        with pytest.raises(OverflowError):
            mod.put_char[1, 1](-3, out)


def test_memcheck_is_gxx_only(clang):
    with pytest.raises(ql.CompileError, match=r"memcheck builds need g\+\+.*set CXX=g\+\+"):
        ql.compile(SOURCE, device="cpu", memcheck=True)


# ---------------------------------------------- the g++ suite's tests, under clang


@pytest.fixture(scope="module")
def tiers(clang_env):
    """test_fission's source built twice: region fission, and all fibers."""
    mp = pytest.MonkeyPatch()
    exprs = [*fission.FISSION, *fission.FIBERS]
    try:
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "1")
        fis = ql.compile(fission.SOURCE, device="cpu", name_expressions=exprs)
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "0")
        fib = ql.compile(fission.SOURCE, device="cpu", name_expressions=exprs)
    finally:
        mp.undo()
    return fis, fib


def test_every_tier(mod, tiers, rng):
    assert mod.saxpy.tier == "loop"
    fission.test_tiers_and_reasons(tiers)
    fission.test_tree_reduction(tiers, rng)
    fission.test_tiled_matmul(tiers, rng)
    fission.test_early_return_before_a_barrier(tiers, rng)
    fission.test_syncthreads_count_and_or(tiers, rng)
    fission.test_assert_names_block_and_thread(tiers)


@pytest.fixture(scope="module")
def warp(clang_env):
    exprs = ["shuffles<int>", "shuffles<float>", "reduce_arith<int>", "tiles<16>",
             "partial_tile<16>"]
    return ql.compile(warps.SOURCE, device="cpu", name_expressions=exprs)


@pytest.fixture(scope="module")
def bad_warp(clang_env):
    return ql.compile(warps.BAD_SOURCE, device="cpu")


def test_warp_functions(warp, rng):
    warps.test_shuffles_against_the_model(warp, rng, "int", 1, 48)
    warps.test_shuffles_against_the_model(warp, rng, "float", 2, 64)
    warps.test_shuffle_reduction_idioms(warp, rng)
    warps.test_ballot_any_all(warp, rng, 3, 33)
    warps.test_reduce_add_min_max(warp, rng, "int", np.int32)
    warps.test_tiled_partition(warp, rng, 16)
    warps.test_tile_in_a_partial_warp(warp, rng, 16, 40)
    warps.test_syncwarp_with_partial_masks(warp, rng, 0x55555555, 48)
    warps.test_exited_threads_release_barriers(warp, rng, 129, 128)


def test_warp_errors(bad_warp, rng):
    warps.test_mask_without_the_calling_lane(bad_warp, rng)
    warps.test_full_mask_in_a_partial_warp(bad_warp, rng)
    warps.test_deadlock_half_warp(bad_warp, rng)
    warps.test_failed_device_assert(bad_warp, rng)


@pytest.fixture(scope="module")
def faulting(clang_env):
    return ql.compile(faults.SOURCE, device="cpu"), ql.compile(faults.FIBER_SOURCE, device="cpu")


def test_faults_and_traps(faulting, rng):
    m, fibers = faulting
    faults.test_null_write(m, rng)
    for n, bad in ((1, 0), (31, 30), (100_000, 99_999)):
        faults.test_wild_read(m, rng, n, bad)
    if faults.ARCH == "x86-64":
        faults.test_integer_divide_by_zero(m, rng)
    elif faults.ARCH == "aarch64":
        faults.test_release_divide_does_not_trap(m, rng)
    faults.test_illegal_instruction(m)
    faults.test_thread_stack_overflow(m)
    faults.test_fiber_stack_overflow(fibers, 200, 256 * 150 + 7)
    faults.test_blocks_before_the_fault_keep_their_writes(m, rng)


def test_fault_in_a_debug_build(clang_env, rng):
    faults.test_fault_in_debug_build("cpu", rng)   # names the thread: (9, 0, 0)


@pytest.fixture(scope="module")
def globals_mod(clang_env):
    return ql.compile(globals_.SOURCE, device="cpu")


def test_globals(globals_mod, rng):
    globals_.test_initial_values_and_types(globals_mod)
    globals_.test_writes_reach_kernels_and_back(globals_mod, rng)
    globals_.test_raw_bytes_for_other_types(globals_mod)

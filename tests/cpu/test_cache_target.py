"""A cache safe to share between machines (issue 19, item 6): the CPU cache
key holds the host's CPU as the compiler resolves -march=native, so a cache
on a shared home directory recompiles on a host whose CPU differs instead of
handing it code built for instructions it lacks."""
import numpy as np

import quicklaunch as ql
from quicklaunch.backends.cpu import compiler as cpu_compiler
from quicklaunch.backends.cpu import toolchain

# %-formatted per test (so not one of the GPU corpus's *SOURCE strings)
SOURCE_TEMPLATE = r"""
extern "C" __global__ void target_probe_%d(float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = %d.0f;
}
"""
HOST_A = "native: -march=skylake -mavx2 -mno-avx512f -mtune=skylake"
HOST_B = "native: -march=skylake-avx512 -mavx2 -mavx512f -mtune=skylake-avx512"


def test_the_resolved_target_is_this_hosts_cpu():
    target = toolchain.resolved_target(toolchain.find_compiler())
    assert target.startswith("native")
    assert "-march=native" not in target
    if not target.startswith("native (unresolved"):
        assert "-march=" in target or "-target-cpu" in target   # e.g. -march=znver2
    assert target in toolchain.find_compiler().identity
    assert toolchain.resolved_target(toolchain.find_compiler()) is target   # once per process


def test_target_tokens_of_gcc_and_clang():
    gcc = (' /usr/lib/gcc/x86_64-linux-gnu/12/cc1plus -E -quiet -D_GNU_SOURCE /dev/null '
           '"-march=znver2" -mmmx -mno-avx512f --param "l1-cache-size=32" "-mtune=znver2" '
           '-dumpbase null')
    assert toolchain._target_tokens(gcc) == [
        "-march=znver2", "-mmmx", "-mno-avx512f", "--param", "l1-cache-size=32",
        "-mtune=znver2"]
    clang = ('clang version 17\n "/usr/bin/clang-17" "-cc1" "-triple" "x86_64-pc-linux-gnu" '
             '"-E" "-target-cpu" "znver3" "-target-feature" "+avx2" "-target-feature" '
             '"-avx512f" "-tune-cpu" "generic" "-o" "-" "-x" "c++" "/dev/null"')
    assert toolchain._target_tokens(clang) == [
        "-target-cpu", "znver3", "-target-feature", "+avx2", "-target-feature", "-avx512f",
        "-tune-cpu", "generic"]


def test_two_hosts_get_two_keys_and_the_second_recompiles(cpu, monkeypatch):
    keys, builds = [], []
    real_key, real_run = cpu_compiler.cache_mod.cache_key, toolchain.run_compiler
    monkeypatch.setattr(cpu_compiler.cache_mod, "cache_key",
                        lambda *parts: keys.append(real_key(*parts)) or keys[-1])
    monkeypatch.setattr(toolchain, "run_compiler",
                        lambda *a, **k: builds.append(a) or real_run(*a, **k))
    source = SOURCE_TEMPLATE % (7, 7)   # compiled by this test alone
    y = np.zeros(8, np.float32)
    for host in (HOST_A, HOST_B, HOST_A):
        monkeypatch.setattr(toolchain, "resolved_target", lambda c, host=host: host)
        mod = ql.compile(source, device=cpu)
        mod.target_probe_7[1, 8](y, 8)
        del mod
    assert y[0] == 7.0
    assert keys[0] != keys[1] and keys[0] == keys[2]
    # host B did not load host A's build: it compiled its own; A's came from the cache
    assert len(builds) == 2

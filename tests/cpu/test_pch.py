"""The shim's precompiled header (backends/cpu/pch.py): built beside a
flag set's second compile, used by the ones after it, and never the cause of
a different build or a failed one: a corrupt or unreadable header is a
compile from the text. GCC only (clang finds precompiled headers by
another rule and compiles from the text)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import compiler, pch, toolchain

from .conftest import poisoned

GCC = "clang" not in toolchain.find_compiler().version.lower()
pytestmark = pytest.mark.skipif(not GCC, reason="precompiled headers are built for GCC only")

# integers: the reference is exact whatever the compiler contracts
SAXPY = """extern "C" __global__ void saxpy_pch(int a, const int *x, int *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] + %d;   // %s
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache (so every flag set starts without a header) and a
    record of each compile's command."""
    pch.wait()   # builds left by other tests go to their caches first
    monkeypatch.delenv(pch.ENV, raising=False)   # on, whatever the suite runs with
    monkeypatch.setattr(compiler, "_cache", compiler.cache_mod.CompileCache(tmp_path / "c"))
    commands = []
    real = toolchain.run_compiler

    def spy(command, cwd):
        commands.append(list(command))
        return real(command, cwd)

    monkeypatch.setattr(toolchain, "run_compiler", spy)
    yield compiler._cache, commands
    pch.wait()


def _used(command) -> bool:
    return any(a.endswith(os.sep + "pch") for a in command)


def _check(mod, rng, n, bump):
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    y0 = rng.integers(-1000, 1000, n, dtype=np.int32)
    y = y0.copy()
    mod.saxpy_pch[(n + 63) // 64, 64](-7, x, y, n)
    np.testing.assert_array_equal(y, -7 * x + y0 + bump)


def _entries(cache):
    root = cache.root / pch.KIND
    return sorted(p for p in root.rglob("*" + pch.SUFFIX)) if root.exists() else []


_primed = iter(range(10**6))


def _prime(cpu, tag, **kw):
    """Two compiles of a flag set (the second starts its header's build),
    and the build stored. Sources of their own: a module compiled before in
    this process is not compiled again."""
    n = next(_primed)
    ql.compile(SAXPY % (0, f"{tag} one {n}"), device=cpu, **kw)
    ql.compile(SAXPY % (0, f"{tag} two {n}"), device=cpu, **kw)
    pch.wait()


def test_third_compile_uses_the_header_built_beside_the_second(cache, cpu, rng):
    store, commands = cache
    first = ql.compile(SAXPY % (1, "first"), device=cpu)
    assert not pch._building            # a flag set seen once: no build
    second = ql.compile(SAXPY % (2, "second"), device=cpu)
    assert len(pch._building) == 1      # seen twice: built, not waited for
    assert not _used(commands[-1]) and _entries(store) == []
    pch.wait()
    assert len(_entries(store)) == 1
    third = ql.compile(SAXPY % (3, "third"), device=cpu)
    assert _used(commands[-1])
    for mod, bump, n in ((first, 1, 1), (second, 2, 31), (third, 3, 32), (third, 3, 1000)):
        _check(mod, rng, n, bump)


def test_debug_builds_have_their_own_header(cache, cpu, rng):
    store, commands = cache
    _prime(cpu, "release")
    _prime(cpu, "debug", debug=True)
    assert len(_entries(store)) == 2
    dbg = ql.compile(SAXPY % (4, "debug again"), device=cpu, debug=True)
    assert _used(commands[-1]) and "-O0" in commands[-1]
    _check(dbg, rng, 33, 4)


def test_corrupt_header_is_a_miss_and_rebuilt(cache, cpu, rng):
    store, commands = cache
    _prime(cpu, "a")
    (entry,) = _entries(store)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.write_bytes(bytes(data))         # its integrity hash no longer matches
    mod = ql.compile(SAXPY % (6, "b"), device=cpu)
    assert not _used(commands[-1])
    _check(mod, rng, 65, 6)
    pch.wait()                              # rebuilt
    mod = ql.compile(SAXPY % (7, "c"), device=cpu)
    assert _used(commands[-1])
    _check(mod, rng, 65, 7)


def test_a_header_gcc_cannot_use_changes_nothing(cache, cpu, rng):
    """A verified entry whose bytes are no precompiled header (or one made
    for other flags): GCC reads the shim's text."""
    store, commands = cache
    _prime(cpu, "a")
    (entry,) = _entries(store)
    key = entry.name[:-len(pch.SUFFIX)]
    store.put(pch.KIND, key, pch.SUFFIX, b"gpch" + bytes(range(256)) * 64)
    mod = ql.compile(SAXPY % (9, "b"), device=cpu)
    assert _used(commands[-1])
    _check(mod, rng, 100, 9)
    with pytest.raises(ql.CompileError,
                       match=r"line 2:\d+: error: .undeclared_name. was not declared"):
        ql.compile(SAXPY.replace("int i =", "int i = undeclared_name +") % (9, "c"),
                   device=cpu)


def test_compile_errors_read_the_same_with_the_header(cache, cpu):
    store, commands = cache
    bad = SAXPY.replace("y[i] = a", "y[i] = __shfl_down_sync(x)") % (10, "bad")
    for tag in ("a", "b"):
        with pytest.raises(ql.CompileError) as without:
            ql.compile(bad + f"// {tag}", device=cpu)
    pch.wait()
    assert _entries(store)
    with pytest.raises(ql.CompileError) as with_header:
        ql.compile(bad + " ", device=cpu)
    assert _used(with_header.value.command)
    assert not _used(without.value.command)

    def errors(exc):
        return [ln for ln in exc.log.splitlines() if "error:" in ln]
    assert errors(with_header.value) == errors(without.value) != []


def test_none_for_memcheck_or_when_turned_off(cache, cpu, monkeypatch, rng):
    store, commands = cache
    monkeypatch.setenv("QUICKLAUNCH_MEMCHECK", "1")
    for tag in ("memcheck", "memcheck again"):
        mod = ql.compile(SAXPY % (11, tag), device=cpu)
    assert "-include" in commands[-1]
    assert not pch._building
    monkeypatch.delenv("QUICKLAUNCH_MEMCHECK")
    monkeypatch.setenv(pch.ENV, "0")
    for tag in ("off", "off again"):
        ql.compile(SAXPY % (12, tag), device=cpu)
    assert not pch._building
    pch.wait()
    assert _entries(store) == []
    _check(mod, rng, 17, 11)


@pytest.mark.parametrize("wait", [3.0, 0.0])
def test_a_build_running_at_exit_is_stored_or_stopped(tmp_path, wait):
    """Exit waits for a running build (up to EXIT_WAIT s): stored, for the
    next process; past it, the build is stopped. Either way no process or
    temporary directory is left."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # The host compiler behind a wrapper that holds the header's build for
    # 60 s where the exit is not to wait: the build is then surely running
    # at exit, whatever the machine's speed.
    gxx = toolchain.find_compiler().path
    wrapper = tmp_path / "g++"
    hold = "sleep 60" if not wait else ":"
    wrapper.write_text('#!/bin/sh\ncase " $* " in *" c++-header "*) %s;; esac\n'
                       'exec "%s" "$@"\n' % (hold, gxx))
    wrapper.chmod(0o755)
    code = ("import quicklaunch as ql\n"
            "from quicklaunch.backends.cpu import pch\n"
            f"pch.EXIT_WAIT = {wait}\n"
            f"ql.compile({SAXPY % (13, 'exit one')!r}, device='cpu')\n"
            f"ql.compile({SAXPY % (13, 'exit two')!r}, device='cpu')\n"
            "print('building', len(pch._building))\n")
    env = {**{k: v for k, v in os.environ.items() if k != pch.ENV}, "QUICKLAUNCH_CACHE_DIR": str(tmp_path / "c"), "TMPDIR": str(tmp),
           "CXX": str(wrapper)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "building 1" in out.stdout
    stored = list((tmp_path / "c" / pch.KIND).rglob("*" + pch.SUFFIX))
    assert len(stored) == (1 if wait else 0)
    assert [p.name for p in tmp.iterdir() if p.name.startswith("quicklaunch-pch-")] == []
    alive = subprocess.run(["pgrep", "-f", str(tmp)], capture_output=True, text=True)
    assert alive.stdout.strip() == ""


def test_output_poisoned_before_launch_is_overwritten(cache, cpu):
    """The header changes nothing a kernel computes: every element of a
    poisoned output is written."""
    store, commands = cache
    src = """extern "C" __global__ void fill_pch(int *out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = 3 * i + 1;
    }"""
    ql.compile(src + "// a", device=cpu)
    ql.compile(src + "// b", device=cpu)
    pch.wait()
    mod = ql.compile(src + "// c", device=cpu)
    assert _used(commands[-1])
    for n in (1, 31, 32, 257):
        out = poisoned(n, np.int32)
        mod.fill_pch[(n + 31) // 32, 32](out, n)
        np.testing.assert_array_equal(out, 3 * np.arange(n, dtype=np.int32) + 1)

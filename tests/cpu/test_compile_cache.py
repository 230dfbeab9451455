"""The compile cache on the CPU device, across real processes: a hit skips
the compiler, a corrupt entry is silently rebuilt, concurrent compiles of one
source all succeed, and an unsafe cache directory is refused."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import quicklaunch as ql

SCRIPT = textwrap.dedent(r"""
    import sys, numpy as np, quicklaunch as ql
    src = r'''extern "C" __global__ void inc(int *x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += %s; }'''
    try:
        mod = ql.compile(src % sys.argv[1], device="cpu")
    except ql.CacheError as e:
        print("CacheError:", e); sys.exit(3)
    x = np.arange(100, dtype=np.int32)
    mod.inc[4, 32](x, 100)
    assert (x == np.arange(100) + int(sys.argv[1])).all(), x
    print("ok")
""")


@pytest.fixture
def env(tmp_path):
    """A private cache dir and a C++ compiler wrapper that logs each compile."""
    real = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("clang++")
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "cxx"
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *-shared*) echo compile >> "{log}";; esac\n'
                       f'exec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    cache = tmp_path / "cache"
    return {**os.environ, "CXX": str(wrapper), "QUICKLAUNCH_CACHE_DIR": str(cache)}, log, cache


def run(env, value, check=True):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(value)], env=env,
                         capture_output=True, text=True, timeout=300)
    if check:
        assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr
    return out


def compiles(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def test_hit_skips_the_compiler(env):
    e, log, cache = env
    run(e, 7)
    assert compiles(log) == 1
    run(e, 7)
    assert compiles(log) == 1, "the second process should load the cached module"
    run(e, 8)  # a different source is a different entry
    assert compiles(log) == 2
    assert oct((cache).stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar"])
def test_corrupt_entry_is_rebuilt(env, damage):
    e, log, cache = env
    run(e, 5)
    so = next(cache.rglob("*.so"))
    if damage == "truncate":
        so.write_bytes(so.read_bytes()[:100])
    elif damage == "flip":
        data = bytearray(so.read_bytes())
        data[len(data) // 2] ^= 0xFF
        so.write_bytes(bytes(data))
    else:
        Path(str(so) + ".sha256").write_text("garbage")
    run(e, 5)
    assert compiles(log) == 2, "a corrupt entry must be recompiled, not loaded"
    run(e, 5)
    assert compiles(log) == 2, "the rebuilt entry is a hit again"


def test_concurrent_processes_compile_the_same_source(env):
    e, log, cache = env
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, "11"], env=e,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "ok" in out, out + err
    run(e, 11)
    assert len(list(cache.rglob("*.so"))) == 1
    assert not [p for p in cache.rglob("*") if ".tmp-" in p.name]


@pytest.mark.parametrize("mode", [0o777, 0o770])
def test_unsafe_directory_is_refused(env, mode):
    e, log, cache = env
    cache.mkdir(mode=0o700)
    cache.chmod(mode)
    out = run(e, 3, check=False)
    assert out.returncode == 3, out.stdout + out.stderr
    assert str(cache) in out.stdout and "chmod 700" in out.stdout
    assert compiles(log) == 0


def test_same_source_twice_in_one_process_is_one_module(cpu):
    src = 'extern "C" __global__ void nop(int *x) {}'
    a, b = ql.compile(src, device=cpu), ql.compile(src, device=cpu)
    assert a.nop.handle == b.nop.handle

"""examples/bundled_saxpy end to end: its wheel is built (pip wheel; setup.py
runs ql.build for the targets asked), installed into a fresh target folder
(pip install --target, no dependencies, no index), and its kernels run on
the CPU device in a process that has no compiler: PATH holds no g++, cc or
clang, $CXX is unset, the nvidia wheels cannot be imported, and the CPU
toolchain, NVRTC and hiprtc entry points raise if anything asks for them.
The compile cache of that process stays empty."""
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bundled_saxpy"
CPU_TARGET = "cpu:x86-64-v2" if platform.machine().lower() in ("x86_64", "amd64") else "cpu"

CHILD = r"""
import importlib.abc, os, shutil, sys

class NoNvidia(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "nvidia" or name.startswith("nvidia."):
            raise ImportError(f"{name} is blocked: no compiler at run time")
sys.meta_path.insert(0, NoNvidia())
assert not any(shutil.which(c) for c in ("g++", "c++", "cc", "gcc", "clang", "clang++", "nvcc"))

def refuse(*args, **kwargs):
    raise RuntimeError("a compiler was asked for")
from quicklaunch.backends.cpu import toolchain
from quicklaunch.backends.cuda import nvrtc
from quicklaunch.backends.hip import hiprtc
toolchain._probe = toolchain.find_compiler = toolchain.run_compiler = refuse
nvrtc.load = hiprtc.load = refuse

import numpy as np
import bundled_saxpy
assert bundled_saxpy.__file__.startswith(sys.argv[1]), bundled_saxpy.__file__
rng = np.random.default_rng(7)
for n in (1, 31, 1000):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = np.float32(0.5) * x + y
    got = bundled_saxpy.saxpy(0.5, x, y.copy(), device="cpu")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    d = bundled_saxpy.dot(x, y, device="cpu")
    assert abs(d - float(np.dot(x.astype(np.float64), y))) <= 1e-4 * (1 + n), (d, n)
mod = bundled_saxpy.module("cpu")
print("ran", mod.bundle_entry, sorted(mod.kernels))
"""


def _run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    assert out.returncode == 0, f"{cmd}:\n{out.stdout}\n{out.stderr}"
    return out


def test_wheel_with_a_bundle_runs_without_a_compiler(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                 "__pycache__", "*.qlb"))
    env = dict(os.environ, BUNDLED_SAXPY_TARGETS=CPU_TARGET)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(tmp_path / "wheels"), str(src)], env=env)
    wheels = list((tmp_path / "wheels").glob("bundled_saxpy-*.whl"))
    assert len(wheels) == 1 and "none-any" not in wheels[0].name   # native code: a platform wheel
    assert "bundled_saxpy/kernels.qlb" in zipfile.ZipFile(wheels[0]).namelist()
    site = tmp_path / "site"
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
          str(site), str(wheels[0])])
    empty_bin, cache = tmp_path / "bin", tmp_path / "cache"
    empty_bin.mkdir()
    cache.mkdir(mode=0o700)
    child_env = {k: v for k, v in os.environ.items()
                 if k not in ("CXX", "CC", "QUICKLAUNCH_NVRTC", "PYTHONPATH")}
    child_env.update(PATH=str(empty_bin), PYTHONPATH=str(site),
                     QUICKLAUNCH_CACHE_DIR=str(cache))
    out = _run([sys.executable, "-c", CHILD, str(site)], env=child_env, cwd=tmp_path)
    assert f"ran {CPU_TARGET} ['dot_partial', 'saxpy']" in out.stdout
    assert [p for p in cache.rglob("*") if p.is_file()] == []   # nothing was compiled


@pytest.mark.parametrize("bad", ["cpu:not-a-cpu"])
def test_wheel_build_fails_clearly_for_a_bad_target(tmp_path, bad):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                 "__pycache__"))
    env = dict(os.environ, BUNDLED_SAXPY_TARGETS=bad)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "--no-build-isolation", "-w", str(tmp_path / "w"), str(src)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode != 0
    assert f"bundle target {bad}" in out.stdout + out.stderr

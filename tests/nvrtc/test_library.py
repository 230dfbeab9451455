"""Finding and opening NVRTC: the search order, the messages when it is
missing, the supported-arch list, and that importing quicklaunch opens nothing."""
import os
import subprocess
import sys

import pytest

import quicklaunch as ql
from quicklaunch.backends.cuda import nvrtc

HINT = "pip install 'quicklaunch[cuda]'"


@pytest.fixture
def fresh(monkeypatch):
    """No NVRTC opened yet in this process (restored afterwards)."""
    monkeypatch.setattr(nvrtc, "_loaded", None)
    monkeypatch.delenv("QUICKLAUNCH_NVRTC", raising=False)
    return monkeypatch


def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a shared library")
    return str(path)


@pytest.mark.no_nvrtc
def test_search_order(tmp_path, fresh):
    wheel = tmp_path / "site" / "nvidia"
    w13 = _touch(wheel / "cu13" / "lib" / "libnvrtc.so.13")
    w12 = _touch(wheel / "cuda_nvrtc" / "lib" / "libnvrtc.so.12")
    _touch(wheel / "cu13" / "lib" / "libnvrtc-builtins.so.13.5")   # never a candidate
    home, path = tmp_path / "cuda-home", tmp_path / "cuda-path"
    h = _touch(home / "lib64" / "libnvrtc.so")
    p = _touch(path / "lib64" / "libnvrtc.so.12")
    fresh.setattr(nvrtc, "wheel_dirs", lambda: [str(wheel)])
    fresh.setenv("CUDA_HOME", str(home))
    fresh.setenv("CUDA_PATH", str(path))
    fresh.setattr(nvrtc.ctypes.util, "find_library", lambda name: "libnvrtc.so.77")
    found = nvrtc.candidates()
    assert found[:4] == [w13, w12, h, p]
    assert found[-1] == "libnvrtc.so.77"
    assert not any("builtins" in f for f in found)


@pytest.mark.no_nvrtc
def test_nothing_found_says_how_to_install(fresh):
    fresh.setattr(nvrtc, "candidates", lambda: [])
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile('extern "C" __global__ void k(int *x) { x[0] = 1; }', "sm_90")
    assert HINT in str(info.value) and "QUICKLAUNCH_NVRTC" in str(info.value)
    assert "was not found" in str(info.value)


@pytest.mark.no_nvrtc
def test_unloadable_candidates_are_listed(tmp_path, fresh):
    bogus = _touch(tmp_path / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13")
    fresh.setattr(nvrtc, "candidates", lambda: [bogus])
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.nvrtc_version()
    assert bogus in str(info.value) and HINT in str(info.value)


@pytest.mark.no_nvrtc
def test_explicit_path_that_does_not_exist(tmp_path, fresh):
    missing = str(tmp_path / "nowhere" / "libnvrtc.so.13")
    fresh.setenv("QUICKLAUNCH_NVRTC", missing)
    fresh.setattr(nvrtc, "wheel_dirs", lambda: [])     # and nothing else to fall back on
    fresh.setattr(nvrtc, "toolkit_dirs", lambda: [])
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile("__global__ void k(float *x) {}", "sm_80")
    assert f"QUICKLAUNCH_NVRTC={missing}" in str(info.value) and HINT in str(info.value)


def test_explicit_path_is_used(lib, fresh):
    fresh.setenv("QUICKLAUNCH_NVRTC", lib.path)
    fresh.setattr(nvrtc, "candidates", lambda: pytest.fail("searched despite QUICKLAUNCH_NVRTC"))
    assert nvrtc.load().path == lib.path
    assert ql.cuda.nvrtc_version() == lib.version


def test_version_and_archs(lib):
    major, minor = ql.cuda.nvrtc_version()
    assert major >= 11 and minor >= 0
    archs = ql.cuda.supported_archs()
    assert archs == tuple(f"sm_{a}" for a in sorted(lib.archs)) and "sm_80" in archs


def test_arch_for_a_gpu(lib):
    assert nvrtc.arch_for((9, 0)) == "sm_90"
    newest = max(lib.archs)
    beyond = newest + 1     # a GPU newer than this NVRTC: PTX for the newest it knows
    assert nvrtc.arch_for((beyond // 10, beyond % 10)) == f"compute_{newest}"
    with pytest.raises(ql.CompileError, match=r"compute capability 1\.0.*sm_"):
        nvrtc.arch_for((1, 0))


def test_import_opens_nothing():
    code = ("import quicklaunch, sys\n"
            "from quicklaunch.backends.cuda import nvrtc\n"
            "maps = open('/proc/self/maps').read() if sys.platform == 'linux' else ''\n"
            "print(nvrtc._loaded is None and 'libnvrtc' not in maps)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"

"""Fixtures for the fake CUDA driver: `fake_libcuda` (the built library's path,
once per session), `drv` (a private copy of it, loaded with ctypes, so each
test starts with a fresh driver state) and `ql_fake` (quicklaunch pointed at
such a copy, with its device, driver and stream-ops caches emptied)."""
import itertools
import shutil

import pytest

from .api import load
from .build import build_fake_libcuda, find_cc

_copies = itertools.count()


@pytest.fixture(scope="session")
def fake_libcuda(tmp_path_factory):
    if find_cc() is None:
        pytest.skip("no C compiler (gcc) to build the fake CUDA driver")
    return build_fake_libcuda(tmp_path_factory.mktemp("fake_libcuda"))


@pytest.fixture
def drv(fake_libcuda, tmp_path, monkeypatch):
    """A fresh fake driver: a copy under a new name is a new dlopen instance
    with its own state. FAKE_CUDA_* variables are cleared first."""
    import os
    for name in list(os.environ):
        if name.startswith("FAKE_CUDA_"):
            monkeypatch.delenv(name)
    copy = tmp_path / f"libcuda-{next(_copies)}.so.1"
    shutil.copyfile(fake_libcuda, copy)
    return load(copy)


@pytest.fixture
def ql_fake(fake_libcuda, tmp_path, monkeypatch):
    """quicklaunch pointed at a fresh copy of the fake driver (NVRTC needed:
    skips without it); yields the copy loaded with ctypes. The device,
    driver and stream-ops caches are emptied before and restored after."""
    import os

    import quicklaunch as ql
    from quicklaunch import devices, streams
    from quicklaunch.backends.cuda import driver, nvrtc
    try:
        nvrtc.load()
    except ql.CompileError as exc:
        pytest.skip(f"NVRTC is not installed: {exc}")
    for name in [n for n in os.environ if n.startswith("FAKE_CUDA_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "libcuda.so.1"
    shutil.copyfile(fake_libcuda, path)
    monkeypatch.setenv("QUICKLAUNCH_LIBCUDA", str(path))
    monkeypatch.setattr(devices, "_devices", {})
    monkeypatch.setattr(devices, "_default_probe", [])
    driver._reset_for_tests()
    yield load(path)
    driver._reset_for_tests()

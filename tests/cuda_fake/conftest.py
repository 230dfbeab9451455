"""Fixtures for the fake CUDA driver: `fake_libcuda` (the built library's path,
once per session) and `drv` (a private copy of it, loaded with ctypes, so each
test starts with a fresh driver state)."""
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

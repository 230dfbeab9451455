"""NVRTC tests need the NVRTC library (the nvidia-cuda-nvrtc wheel or a CUDA
toolkit), not a GPU. Without it they skip with the reason, except those
marked ``no_nvrtc`` (pure PTX parsing, the library search itself)."""
import os

import pytest

from quicklaunch.backends.cuda import nvrtc
from quicklaunch.errors import CompileError
from tests import rtc_fixtures


def _probe() -> str | None:
    """None if NVRTC loads, else why not."""
    try:
        nvrtc.load()
        return None
    except CompileError as exc:
        return f"{str(exc).split('. ')[0].split('; ')[0]} (pip install 'quicklaunch[cuda]')"


def pytest_configure(config):
    config.addinivalue_line("markers", "no_nvrtc: runs without the NVRTC library")


def pytest_collection_modifyitems(config, items):
    mine = [i for i in items if f"tests{os.sep}nvrtc{os.sep}" in str(i.fspath)]
    if not mine:
        return
    reason = _probe()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"NVRTC not available: {reason}")
    for item in mine:
        if item.get_closest_marker("no_nvrtc") is None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def lib():
    """The process's NVRTC."""
    return nvrtc.load()


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A compile cache of this test's own (so hits and misses are its own)."""
    from quicklaunch.backends.cuda import program
    return rtc_fixtures.private_cache(tmp_path, monkeypatch, program)


@pytest.fixture
def count_compiles(monkeypatch):
    """Counts calls into NVRTC's compiler (a list, one entry per call)."""
    return rtc_fixtures.count_compiles(monkeypatch, nvrtc.Nvrtc)

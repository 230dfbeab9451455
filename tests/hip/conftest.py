"""HIP tests. Compiling needs hiprtc (ROCm, or on Debian 12 / Ubuntu:
apt-get install libamdhip64-5 libhiprtc-builtins5 libamd-comgr2), not a GPU;
without it those tests skip with the reason. Tests marked ``no_hiprtc`` run
anyway (the code-object readers, the library search, the absent GPU).
Tests marked ``gpu`` need an AMD GPU and skip, with the reason, without one.

Compilations go to the user's compile cache (a second run is mostly hits);
tests that count hits and misses use a private one."""
import os

import pytest

from quicklaunch.backends.hip import driver, hiprtc
from quicklaunch.errors import CompileError
from tests import rtc_fixtures


def _hiprtc_problem() -> str | None:
    try:
        hiprtc.load()
        return None
    except CompileError as exc:
        return str(exc).split(". To compile")[0]


def _gpu_problem() -> str | None:
    n, why = driver.probe()
    return None if n else why.split(" did not initialise: ")[-1].split("; no AMD GPU")[0]


def pytest_configure(config):
    config.addinivalue_line("markers", "no_hiprtc: runs without the hiprtc library")
    config.addinivalue_line("markers", "gpu: needs an AMD GPU")


def pytest_collection_modifyitems(config, items):
    mine = [i for i in items if f"tests{os.sep}hip{os.sep}" in str(i.fspath)]
    if not mine:
        return
    rtc, gpu = _hiprtc_problem(), None
    if any(i.get_closest_marker("gpu") for i in mine):
        gpu = _gpu_problem()
    for item in mine:
        if item.get_closest_marker("gpu") is not None and gpu is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs an AMD GPU: {gpu}"))
        elif rtc is not None and item.get_closest_marker("no_hiprtc") is None:
            item.add_marker(pytest.mark.skip(reason=f"hiprtc not available: {rtc} "
                                                    f"(see tests/hip/conftest.py)"))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    from quicklaunch.backends.hip import program
    return rtc_fixtures.private_cache(tmp_path, monkeypatch, program)


@pytest.fixture
def count_compiles(monkeypatch):
    """Counts calls into hiprtc (a list, one entry per compilation)."""
    return rtc_fixtures.count_compiles(monkeypatch, hiprtc.Hiprtc)

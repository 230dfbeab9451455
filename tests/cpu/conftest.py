"""CPU-device tests need a host C++ compiler; they skip with a reason without one."""
import os
import shutil

import numpy as np
import pytest

import quicklaunch as ql

HAVE_CXX = bool(os.environ.get("CXX")) or any(shutil.which(c) for c in ("g++", "clang++"))


def pytest_collection_modifyitems(config, items):
    if HAVE_CXX:
        return
    skip = pytest.mark.skip(reason="no host C++ compiler (g++ or clang++) for the CPU device")
    for item in items:
        if "tests/cpu/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def cpu():
    return ql.device("cpu")


def poisoned(shape, dtype):
    """An output array filled with a value no correct kernel writes."""
    a = np.empty(shape, dtype)
    if a.dtype.kind == "f":
        a.fill(np.nan)
    elif a.dtype.kind == "b":
        a.fill(True)
    else:
        a.fill(np.iinfo(a.dtype).max)
    return a

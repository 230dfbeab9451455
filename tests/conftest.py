"""Shared test set-up: one private compile cache for the whole session, so
every test file reuses kernels another compiled, and a seeded RNG."""
import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

if "QUICKLAUNCH_CACHE_DIR" not in os.environ:
    _session_cache = tempfile.mkdtemp(prefix="quicklaunch-test-cache-")
    os.chmod(_session_cache, 0o700)
    os.environ["QUICKLAUNCH_CACHE_DIR"] = _session_cache
    atexit.register(shutil.rmtree, _session_cache, ignore_errors=True)


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def pytest_collection_finish(session):
    """The selected modules' cold compiles start ahead on the second core
    (tests/prefetch.py)."""
    from tests import prefetch
    prefetch.start(session.items)


def pytest_sessionfinish(session):
    from tests import prefetch
    prefetch.stop()

"""GPU-only tests: they run on a machine with an NVIDIA GPU and its driver
(benchmarks/gpu_check.sh runs them) and skip, saying why, everywhere else."""
import os

import pytest


def _gpu_reason() -> str | None:
    if os.environ.get("QUICKLAUNCH_LIBCUDA"):
        return "QUICKLAUNCH_LIBCUDA points at another driver (tests/cuda needs the real one)"
    from quicklaunch.backends.cuda import driver
    try:
        d = driver.driver()
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable GPU here
        return f"no CUDA driver: {exc}"
    if not driver.available():
        return f"the CUDA driver at {d.path} reports no device"
    try:
        from quicklaunch.backends.cuda import nvrtc
        nvrtc.load()
    except Exception as exc:  # noqa: BLE001
        return f"NVRTC is not installed: {exc}"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace(os.sep, "/"):
            if reason is None:
                reason = _gpu_reason() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def gpu():
    import quicklaunch as ql
    return ql.device("cuda")

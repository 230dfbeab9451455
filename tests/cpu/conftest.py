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


def both_tiers(device, source):
    """(fission module, fibers module) of `source`: compiled with
    QUICKLAUNCH_CPU_FISSION=1, then =0 (the tier is chosen at compile time)."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "1")
        fis = ql.compile(source, device=device)
        mp.setenv("QUICKLAUNCH_CPU_FISSION", "0")
        fib = ql.compile(source, device=device)
    finally:
        mp.undo()
    return fis, fib


def tier_jobs(*sources, plain=(), exprs=None):
    """Prefetch jobs (tests/prefetch.py) of a fission test module: both_tiers
    of each of `sources`, and the ordinary build of each of `plain` (with
    name_expressions `exprs`, when given)."""
    tail = (tuple(exprs),) if exprs else ()
    return [(s, f, *tail) for s in sources for f in ("1", "0")] + \
        [(s, None, *tail) for s in plain]


def tier_prefetch(*sources, plain=(), exprs=None):
    """A fission test module's `prefetch_job` (tests/prefetch.py): its
    tier_jobs, the same for every test of the module."""
    jobs = tier_jobs(*sources, plain=plain, exprs=exprs)
    return lambda item: jobs


@pytest.fixture(scope="module", autouse=True)
def _tiers_compiled_ahead(request):
    """At a module's start, its prefetch jobs the worker has not reached
    are compiled here (tests/prefetch.py; nothing for a module without)."""
    if getattr(request.module, "compile_ahead", None) is compile_tier_ahead:
        from tests.prefetch import ahead
        ahead(request)


def compile_tier_ahead(job):
    """One tier_jobs job, in the prefetch worker: the build both_tiers (or
    a plain ql.compile) makes, into the session's compile cache."""
    import os
    source, fission, *exprs = job
    before = os.environ.get("QUICKLAUNCH_CPU_FISSION")
    if fission is not None:
        os.environ["QUICKLAUNCH_CPU_FISSION"] = fission
    try:
        ql.compile(source, device="cpu", name_expressions=list(exprs[0]) if exprs else None)
    finally:
        if before is None:
            os.environ.pop("QUICKLAUNCH_CPU_FISSION", None)
        else:
            os.environ["QUICKLAUNCH_CPU_FISSION"] = before


def run_as_fission(mods, name, grid, block, *args):
    """run_both_tiers, after checking that `name` runs as fission."""
    assert mods[0][name].tier == "fission", mods[0][name].attributes["tier_reason"]
    return run_both_tiers(mods, name, grid, block, *args)


def run_both_tiers(mods, name, grid, block, *args):
    """Runs kernel `name` of both modules (both_tiers) on copies of `args`:
    the arrays must come out the same bits. Returns fission's arguments."""
    fis, fib = mods
    a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    fib[name][grid, block](*a)
    fis[name][grid, block](*b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.tobytes() == y.tobytes(), name
    return b

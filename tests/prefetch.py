"""Compiling a test module's sources ahead, on both cores, before its tests.

The suite runs on one thread, and a cold compile is mostly work under the
GIL (the CPU device's source passes walk libclang's tree in Python) or in a
child compiler. A module whose tests are mostly cold compiles therefore
hands its selected compile jobs to two spawned worker processes first; they
write the session's compile cache (QUICKLAUNCH_CACHE_DIR, inherited), and
the tests then read it. A compile that fails here is ignored and fails
again, reported, in its own test."""
from __future__ import annotations

import importlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor


def _run(target: str, job) -> None:
    module, name = target.split(":")
    try:
        getattr(importlib.import_module(module), name)(job)
    except Exception:   # noqa: BLE001  (its test reports it)
        pass


def ahead(request, job_of, target: str, workers: int = 2) -> None:
    """`job_of(item)`: the picklable job of a selected item of this module
    (None: nothing to compile); `target`: "module:function" compiling one."""
    mine = [it for it in request.session.items
            if getattr(it, "module", None) is request.module]   # (doc items have none)
    jobs = list(dict.fromkeys(j for j in map(job_of, mine) if j is not None))
    if len(jobs) < 4:
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        list(pool.map(_run, [target] * len(jobs), jobs))

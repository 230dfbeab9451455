"""Compiling the suite's cold sources ahead, on the second core.

The suite runs on one thread, and a cold compile is mostly work under the
GIL (the CPU device's source passes walk libclang's tree in Python) or in a
child compiler, so one core idles. A test module whose tests are mostly
cold compiles says which compile jobs its selected tests need: a
module-level `prefetch_job(item)` (the picklable job of one collected item,
a list of them, or None) and `compile_ahead(job)` (compiling one job, in another process).

When collection ends, `start` hands every selected module's jobs, in the
order the tests run, to one spawned worker process, which writes the
session's compile cache (QUICKLAUNCH_CACHE_DIR, inherited) while the tests
of earlier modules run. When such a module's tests begin, its autouse
fixture calls `ahead`: the jobs of the module the worker has not started
yet are compiled there and then, from the last one back, while the worker
goes on from the front, so both cores work; two processes compiling one
source meet at the cache's miss lock (cache_lock.py), and the second reads
what the first stored. Every test still compiles and checks its own case
(a cache hit now). A compile that fails ahead is ignored and fails again,
reported, in its own test. QUICKLAUNCH_TEST_PREFETCH=0 turns all of it off."""
from __future__ import annotations

import importlib
import multiprocessing
import os
import warnings

_state: dict = {}   # jobs, claimed (shared flags), stop, process, spans per module


def enabled() -> bool:
    return os.environ.get("QUICKLAUNCH_TEST_PREFETCH", "1").strip().lower() not in (
        "0", "no", "off", "false")


def _run(target: str, job) -> None:
    module, name = target.split(":")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(importlib.import_module(module), name)(job)
    except Exception:   # noqa: BLE001  (its test reports it)
        pass


def _work(jobs, claimed, stop) -> None:
    """The worker: every job not yet claimed, in order, until told to stop."""
    for i, (target, job) in enumerate(jobs):
        if stop.value:
            return
        if claimed[i]:
            continue
        claimed[i] = 1
        _run(target, job)


def _skipped(item) -> bool:
    return any(m.name == "skip" for m in item.iter_markers())


def start(items) -> None:
    """Starts the worker on the jobs of the selected items (collection's end)."""
    if not enabled() or _state:
        return
    jobs, spans = [], {}
    for it in items:
        mod = getattr(it, "module", None)   # (doc items have none)
        job_of = getattr(mod, "prefetch_job", None)
        if job_of is None or not hasattr(mod, "compile_ahead") or _skipped(it):
            continue
        try:
            job = job_of(it)
        except Exception:   # noqa: BLE001  (the test says what is wrong)
            job = None
        for job in (job if isinstance(job, list) else [job]):   # (a list: several)
            if job is None:
                continue
            entry = (f"{mod.__name__}:compile_ahead", job)
            if entry in spans.get(mod.__name__, {}).get("seen", ()):
                continue
            span = spans.setdefault(mod.__name__, {"seen": set(), "at": []})
            span["seen"].add(entry)
            span["at"].append(len(jobs))
            jobs.append(entry)
    if not jobs:
        return
    ctx = multiprocessing.get_context("spawn")
    claimed = ctx.RawArray("b", len(jobs))
    stop = ctx.RawValue("b", 0)
    proc = ctx.Process(target=_work, args=(jobs, claimed, stop), daemon=True,
                       name="quicklaunch-test-prefetch")
    proc.start()
    _state.update(jobs=jobs, claimed=claimed, stop=stop, proc=proc,
                  spans={k: v["at"] for k, v in spans.items()})


def stop() -> None:
    """Stops the worker after its current job (the session's end)."""
    proc = _state.get("proc")
    if proc is None:
        return
    _state["stop"].value = 1
    proc.join(60)
    if proc.is_alive():
        proc.terminate()
        proc.join(5)


def ahead(request, job_of=None, target=None) -> None:
    """At a module's start: its jobs the worker has not claimed, compiled
    here from the last one back (the worker comes from the front)."""
    at = _state.get("spans", {}).get(request.module.__name__)
    if not at:
        return
    jobs, claimed = _state["jobs"], _state["claimed"]
    for i in reversed(at):
        if claimed[i]:
            continue
        claimed[i] = 1
        _run(*jobs[i])


def named(item, table: dict):
    """The job in `table` (a test function's or a fixture's name -> job) of
    the first name `item` uses; None when it uses none."""
    for name in (getattr(item, "originalname", None), *getattr(item, "fixturenames", ())):
        if name in table:
            return table[name]
    return None

"""``quicklaunch bench``: the README's main job, in one call.

    run_suite(device=None, out="quicklaunch-bench", quick=False, progress=None)

1. Launch overhead: quicklaunch's paths, the C baseline and the floors
   (quicklaunch.bench.launch, run here), then every peer that can launch on
   the device (``PEERS``, by device kind): on the CPU the sources of
   cpu/peers.py, each measured in a child process of its own; on a CUDA GPU
   the CUDA benchmark's peers (cuda/sources.py: probed in children, then
   measured here, batched as in python -m quicklaunch.bench.cuda). A peer
   that is missing or fails is a row that says why.
   Without a GPU, also the section "CUDA launch overhead above the driver
   (null driver)" (cuda/null_overhead.py: every CUDA launcher against a null
   libcuda, in a child process; ``null_driver=False`` or
   QUICKLAUNCH_BENCH_NULL_DRIVER=0 leaves it out).
   Where torch or JAX is installed, also kernels inside their programs
   (frameworks.py).
2. Workload: quicklaunch.bench.cg.run (conjugate gradient on 2D Poisson, its
   implementations); when it is missing or raises, the section says why.
3. results.json and the plots (plots.py) in ``out``; the table is
   suite_report.table(result). Schema: benchmarks/README.md.

``skip`` leaves sections out (any of ``SECTIONS``; ``quicklaunch bench
--skip``); quicklaunch's own launch rows always run. A skipped section is in
results.json with "status": "skipped" and the reason.

``progress(done, total, what)`` is called as the run goes (total is 100).
"""
from __future__ import annotations

import datetime
import importlib
import math
import os
import time
from pathlib import Path

from . import launch as launch_bench
from .harness.facts import machine, versions
from .harness.model import ERROR, OK, SKIPPED, Context, load_sources
from .harness.results import write_json

SCHEMA = 1
# the peers measured beside quicklaunch, and the device facts recorded, by device kind
PEERS = {"cpu": "quicklaunch.bench.cpu.peers:SOURCES",
         "cuda": "quicklaunch.bench.cuda.sources:PEERS"}
FACTS = {"cuda": "quicklaunch.bench.cuda.facts"}

FULL = {"iters": 200_000, "repeats": 9, "peer_iters": 200_000, "peer_repeats": 7,
        "peer_timeout": 75.0, "peers_budget": 150.0, "gpu_budget": 60.0}
QUICK = {"iters": 20_000, "repeats": 5, "peer_iters": 20_000, "peer_repeats": 3,
         "peer_timeout": 30.0, "peers_budget": 40.0, "gpu_budget": 15.0}
# on a GPU a launch costs microseconds: as many launches per sample as the
# CUDA benchmark (python -m quicklaunch.bench.cuda) takes
GPU = {False: {"iters": 20_000, "peer_iters": 20_000}, True: {"iters": 3_000, "peer_iters": 3_000}}
BATCH = 256          # GPU: launches between untimed synchronisations

# (row of quicklaunch.bench.launch, name in the table, source, what it times)
QL_ROWS = (
    ("indexed", "quicklaunch indexed", "quicklaunch", "k[1, 1](a, x, y, n)"),
    ("configured", "quicklaunch configured", "quicklaunch",
     "run = k.configure(1, 1) once; run(a, x, y, n)"),
    ("direct", "quicklaunch direct", "quicklaunch", "k.launch(1, 1, a, x, y, n)"),
    ("graph replay", "quicklaunch graph replay", "quicklaunch",
     f"{launch_bench.GRAPH_LAUNCHES} configured launches recorded once (ql.graph), then "
     "g.replay(); ns per kernel"),
    ("C stub", "quicklaunch C stub", "quicklaunch",
     "a stub=True build's configured launch: the kernel's C host stub (nvcc's behaviour), "
     "then the launch entry"),
    ("debug stub", "quicklaunch debug stub", "quicklaunch",
     "a debug=True build's configured launch: argument checks in Python, then the C path"),
    ("C baseline", "C baseline", "reference",
     "C loop calling the backend's launch entry with a prebuilt parameter block"),
    ("C-ext floor", "C-ext floor", "reference",
     "a METH_FASTCALL function taking the arguments and doing nothing"),
    ("python loop", "python loop", "reference", "the empty for-loop step every Python row pays"),
)
# the sections ``skip`` can leave out, and what each is
SECTIONS = {"peers": "the peers' launch rows", "null": "the null-driver section",
            "frameworks": "kernels inside torch and JAX programs", "cg": "the CG workload"}
STAGES = {"launch": (0, 30), "peers": (30, 58), "null": (58, 65), "frameworks": (65, 65),
          "cg": (65, 95), "write": (95, 100)}


class _Stages:
    """Maps each stage's own progress onto one 0..100 scale."""

    def __init__(self, progress):
        self.progress = progress

    def __call__(self, stage: str, fraction: float, what: str) -> None:
        if self.progress is None:
            return
        lo, hi = STAGES[stage]
        fraction = min(max(float(fraction), 0.0), 1.0) if math.isfinite(fraction) else 0.0
        try:
            self.progress(int(lo + (hi - lo) * fraction), 100, f"{stage}: {what}")
        except Exception:  # noqa: BLE001 - a broken bar must not stop the run
            pass


def quicklaunch_rows(measured: dict | None, failure: str = "") -> dict:
    """quicklaunch.bench.launch.measure's result as launch rows."""
    out = {}
    for key, name, source, note in QL_ROWS:
        got = (measured or {}).get("rows", {}).get(key)
        if got:
            row = {str(n): got.get(n, got.get(str(n))) for n in (4, 16)}
            row.update(status=OK, reason="")
        else:
            why = failure or (measured or {}).get("errors", {}).get(key, "not measured")
            row = {"4": None, "16": None, "status": ERROR, "reason": why}
        row.update(source=source, note=note)
        out[name] = row
    return out


def peer_rows(rows) -> dict:
    """harness.model.Row objects (launch table only) as launch rows."""
    out = {}
    for r in rows:
        if r.table != "launch":
            continue
        row = {str(n): r.median(n) for n in (4, 16)}
        row.update(status=r.status, reason=r.reason, source=r.source, note=r.note)
        if r.cells:
            row["cells"] = {str(n): why for n, why in r.cells.items()}
        if r.status == OK and all(row[str(n)] is None for n in (4, 16)):
            row.update(status=ERROR, reason="; ".join(sorted(set(r.cells.values())))
                       or "no figure")
        out[r.name] = row
    return out


def measure_peers(sources, ctx: Context, *, iters: int, repeats: int, mode: str,
                  sources_ref: str, timeout: float, budget: float | None, stage) -> tuple:
    """Runs the peers; returns (rows, probes). ``mode``: "isolated", each
    source in its own child process, one after another (a stage deadline
    keeps a hanging peer from eating the run); "probed", probed in children
    all at once, then measured together in this process (the CUDA
    benchmark's way); "inprocess", set up and measured here (tests)."""
    from .harness.measure import failed_rows
    from .harness.run import run as run_sources
    rows, probes = [], {}
    if not sources:
        return rows, probes
    if mode != "isolated":
        def say(msg):
            stage("peers", 0.5, str(msg)[:60])
        got = run_sources(sources, ctx, iters=iters, repeats=repeats, budget=budget,
                          probe=mode == "probed", isolated=False, probe_timeout=timeout,
                          sources_ref=sources_ref, on_progress=say)
        stage("peers", 1.0, "done")
        return got["rows"], got["probes"]
    deadline = time.monotonic() + (budget or math.inf)
    per_budget = 2.0
    for i, src in enumerate(sources):
        stage("peers", i / len(sources), src.name)
        left = deadline - time.monotonic()
        if left < 5.0:
            rows += failed_rows(src, SKIPPED, "not run: the peers' time budget was used up")
            continue
        probe_timeout = max(1.0, min(timeout, left) - 4 * per_budget)
        got = run_sources([src], ctx, iters=iters, repeats=repeats, budget=per_budget,
                          probe=False, isolated=True, probe_timeout=probe_timeout,
                          sources_ref=sources_ref)
        rows += got["rows"]
        probes.update(got["probes"])
    stage("peers", 1.0, "done")
    return rows, probes


def cg_section(device: str, quick: bool, stage, runner=None) -> dict:
    """quicklaunch.bench.cg.run's result with "status": "ok", or a status
    and the reason it has no result."""
    if runner is None:
        try:
            from . import cg
        except ImportError as exc:
            return {"status": SKIPPED, "reason": f"quicklaunch.bench.cg is not available "
                                                 f"({type(exc).__name__}: {exc})"}
        runner = getattr(cg, "run", None)
        if not callable(runner):
            return {"status": SKIPPED, "reason": "quicklaunch.bench.cg has no run() yet"}

    def cg_progress(*args, **kwargs):
        nums = [a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)]
        text = next((a for a in args if isinstance(a, str)), "")
        if len(nums) >= 2 and nums[1]:
            frac = nums[0] / nums[1]
        elif len(nums) == 1 and 0 <= nums[0] <= 1:
            frac = nums[0]
        else:
            frac = 0.0
        stage("cg", frac, text or "running")

    stage("cg", 0.0, "starting")
    try:
        res = runner(device=device, quick=quick, progress=cg_progress)
    except Exception as exc:  # noqa: BLE001 - the section says why instead
        text = " ".join(str(exc).split())[:400]
        return {"status": ERROR, "reason": f"quicklaunch.bench.cg.run raised "
                                           f"{type(exc).__name__}: {text}"}
    if not isinstance(res, dict) or not isinstance(res.get("rows"), dict):
        return {"status": ERROR, "reason": f"quicklaunch.bench.cg.run returned "
                                           f"{type(res).__name__}, not a dict with 'rows'"}
    stage("cg", 1.0, "done")
    return {"status": OK, "reason": "", **res}


def check_skip(skip) -> frozenset:
    """``skip`` as a set of section names; ValueError naming the valid ones
    for anything else."""
    if isinstance(skip, str):
        skip = [skip]
    names = frozenset(skip)
    unknown = sorted(names - SECTIONS.keys())
    if unknown:
        raise ValueError(f"quicklaunch bench: no section named {', '.join(map(repr, unknown))} "
                         f"to skip; the sections are {', '.join(SECTIONS)} (quicklaunch's "
                         "own launch rows always run)")
    return names


def _skipped(title: str, name: str) -> dict:
    return {"title": title, "status": SKIPPED, "rows": {}, "reason": f"left out (--skip {name})"}


def run_suite(device=None, out=os.path.join(".", "quicklaunch-bench"), quick: bool = False,
              progress=None, *, settings: dict | None = None, peers=None,
              peers_ref: str | None = None, peer_mode: str | None = None, cg_runner=None,
              measure=None, plots: bool = True, null_driver: bool | None = None,
              skip=()) -> dict:
    """Runs every section, writes ``out``/results.json and the plots, and
    returns the result. ``settings`` overrides FULL/QUICK; ``peers`` (a list
    of harness.model.Source, with ``peers_ref`` naming it for child
    processes), ``peer_mode`` (measure_peers; default "isolated" on the CPU,
    "probed" on a GPU), ``cg_runner`` and ``measure`` replace the defaults
    (tests). ``null_driver``: run the null-driver section (default: when the
    device is not a GPU and QUICKLAUNCH_BENCH_NULL_DRIVER is not "0").
    ``skip``: section names (SECTIONS) not to run.
    An unknown device raises DeviceError, an unknown section ValueError,
    before anything runs."""
    import quicklaunch as ql
    skip = check_skip(skip)
    from .plots import write_plots
    t_start = time.monotonic()
    dev = ql.device(device)
    on_gpu = not dev.host_memory       # asynchronous launches of microseconds
    mode = {**(QUICK if quick else FULL), **(GPU[quick] if on_gpu else {}), **(settings or {})}
    stage = _Stages(progress)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)   # an unusable --out fails now, not at the end
    seconds = {}
    result = {"benchmark": "quicklaunch bench", "schema": SCHEMA,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec="seconds"),
              "device": dev.name, "device_description": dev.description, "quick": quick,
              "machine": machine()}
    if skip:
        result["skipped"] = sorted(skip)

    # 1. quicklaunch's launch paths
    stage("launch", 0.0, "compiling")
    t0 = time.monotonic()
    try:
        measured = (measure or launch_bench.measure)(
            dev.name, iters=mode["iters"], repeats=mode["repeats"],
            progress=lambda d, t, w: stage("launch", d / max(t, 1), w),
            **({"batch": BATCH} if on_gpu else {}))
        failure = ""
    except Exception as exc:  # noqa: BLE001 - peers and CG still run; exit status says so
        measured, failure = None, f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
    seconds["launch"] = round(time.monotonic() - t0, 1)
    result.update({"iters": mode["iters"], "repeats": mode["repeats"],
                   "rows": {k: {str(n): v for n, v in r.items()}
                            for k, r in (measured or {}).get("rows", {}).items()}})
    launch = {"unit": "ns per launch", "params": [4, 16], "iters": mode["iters"],
              "repeats": mode["repeats"], "batch": BATCH if on_gpu else None,
              "peer_iters": mode["peer_iters"], "peer_repeats": mode["peer_repeats"],
              "rows": quicklaunch_rows(measured, failure)}

    # 2. the peers
    t0 = time.monotonic()
    if "peers" in skip:
        peers, peers_ref = [], None
    elif peers is None:
        peers_ref = PEERS.get(dev.kind)
        peers = load_sources(peers_ref) if peers_ref else []
    ctx = Context(device=dev.name, batch=BATCH)
    rows, probes = measure_peers(
        peers, ctx, iters=mode["peer_iters"], repeats=mode["peer_repeats"],
        mode=peer_mode or ("probed" if on_gpu else "isolated"),
        sources_ref=peers_ref, timeout=mode["peer_timeout"],
        budget=mode["gpu_budget"] if on_gpu else mode["peers_budget"], stage=stage)
    launch["rows"].update(peer_rows(rows))
    launch["checks"] = ctx.info
    launch["probes"] = {name: p for name, p in probes.items() if p}
    seconds["peers"] = round(time.monotonic() - t0, 1)
    result["launch"] = launch

    # 2b. without a GPU: every CUDA launcher against the null driver
    if null_driver is None:      # test doubles for the launch rows: not asked for either
        null_driver = (not on_gpu and measure is None
                       and os.environ.get("QUICKLAUNCH_BENCH_NULL_DRIVER", "1") != "0")
    if null_driver and "null" in skip:
        from .cuda import null_overhead
        result["null_driver"] = _skipped(null_overhead.TITLE, "null")
    elif null_driver:
        from .cuda import null_overhead
        stage("null", 0.0, "null CUDA driver")
        t0 = time.monotonic()
        try:
            result["null_driver"] = null_overhead.section(quick=quick)
        except Exception as exc:  # noqa: BLE001 - the section says why
            result["null_driver"] = {"title": null_overhead.TITLE, "status": ERROR, "rows": {},
                                     "reason": f"{type(exc).__name__}: {exc}"}
        seconds["null driver"] = round(time.monotonic() - t0, 1)
        stage("null", 1.0, "done")

    # 2c. kernels inside torch / JAX programs, where they are installed (bench/frameworks.py)
    if measure is None and "frameworks" in skip:
        from . import frameworks
        result["frameworks"] = _skipped(frameworks.TITLE, "frameworks")
    elif measure is None:
        from . import frameworks
        stage("frameworks", 0.0, "torch and JAX")
        t0 = time.monotonic()
        try:
            result["frameworks"] = frameworks.section(dev.name, quick=quick)
        except Exception as exc:  # noqa: BLE001 - the section says why
            result["frameworks"] = {"title": frameworks.TITLE, "status": ERROR, "rows": {},
                                    "reason": f"{type(exc).__name__}: {exc}"}
        seconds["frameworks"] = round(time.monotonic() - t0, 1)
        stage("frameworks", 1.0, "done")

    # 3. the workload
    t0 = time.monotonic()
    result["cg"] = ({"status": SKIPPED, "reason": "left out (--skip cg)"} if "cg" in skip
                    else cg_section(dev.name, quick, stage, cg_runner))
    seconds["cg"] = round(time.monotonic() - t0, 1)

    # versions, files
    dists = ["quicklaunch", "numpy", "matplotlib"] + [d for s in peers for d in s.dists]
    result["versions"] = {"python": result["machine"]["python"], **versions(dists),
                          "quicklaunch": ql.__version__}
    if dev.kind in FACTS:
        result["gpu"] = importlib.import_module(FACTS[dev.kind]).gpu_facts(dev.name)
    stage("write", 0.0, "plots")
    result["plots"] = (write_plots(result, out_dir) if plots
                       else {"skipped": "plots were not requested"})
    seconds["total"] = round(time.monotonic() - t_start, 1)
    result["seconds"] = seconds
    write_json(result, out_dir / "results.json")
    stage("write", 1.0, "done")
    return result

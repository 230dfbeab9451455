"""The CUDA launch benchmark's machinery: rows, measurement, probes, output.

benchmarks/gpu_launch.py is the command; the rows themselves (quicklaunch,
the C baseline and the peers) are in gpu_sources.py. Method:
benchmarks/README.md, "CUDA launch overhead".

A *source* is one library (or quicklaunch with its C baseline). It declares
its rows up front, so that when it cannot run (not installed, no GPU, an
exception, a crash) every row it would have given still appears, saying why.
Its ``setup(ctx)`` returns ``{row id: {param count: timer}}``, where a timer
is ``fn(iters) -> ns per launch``; instead of a timer dict a row may map to
an exception (that row failed), and instead of a timer a param count may
map to an exception (that cell failed, e.g. ``NotApplicable``).

Each source is first *probed* in a child process (set up, a few launches),
all probes at once: a peer that is missing, raises or even crashes the
interpreter costs its rows, not the run. Sources that pass are then set up
in this process and measured together, the repeats going round-robin over
all rows (as in the CPU launch benchmark) so slow drifts hit every row
alike. ``--isolated`` measures each source in its own child process instead.
"""
import argparse
import datetime
import importlib
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LAUNCH = "launch"        # table 1: host cost per launch
INFLIGHT = "inflight"    # table 2: many kernels in flight, launch + sync
OK, SKIPPED, ERROR = "ok", "skipped", "error"

FULL = {"iters": 20_000, "repeats": 7, "roundtrip": 2_000, "budget": 110.0}
QUICK = {"iters": 3_000, "repeats": 3, "roundtrip": 300, "budget": 40.0}


class Skip(Exception):
    """The row cannot run here, for the stated reason (not an error)."""


class NotApplicable(Skip):
    """The row has no such measurement (e.g. torch has no 16-argument op)."""


@dataclass(frozen=True)
class RowSpec:
    id: str            # stable key: "ql.configured", "cupy.rawkernel"
    name: str          # what the table shows
    table: str = LAUNCH
    note: str = ""


@dataclass
class Source:
    name: str                         # "quicklaunch", "cupy", ...
    rows: tuple                       # RowSpec, ...
    setup: Callable                   # ctx -> {row id: {n: timer} | Exception}
    dists: tuple = ()                 # distributions whose versions to record


@dataclass
class Context:
    """What every source's setup gets."""
    device: str = "cuda"
    params: tuple = (4, 16)
    batch: int = 256            # launches between two (untimed) synchronisations
    inflight: int = 10_000      # launches queued before one synchronisation
    roundtrip: int = 2_000      # launch + synchronise pairs per sample
    check: bool = True          # verify quicklaunch's and C's launches compute right
    info: dict = field(default_factory=dict)   # facts sources report (JSON "checks")


@dataclass
class Row:
    id: str
    name: str
    source: str
    table: str = LAUNCH
    note: str = ""
    status: str = OK
    reason: str = ""
    iters: dict = field(default_factory=dict)       # n -> launches per sample
    timers: dict = field(default_factory=dict, repr=False)
    samples: dict = field(default_factory=dict)     # n -> [ns per launch]
    cells: dict = field(default_factory=dict)       # n -> why there is no figure

    def median(self, n):
        values = self.samples.get(n)
        return statistics.median(values) if values else None

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "source": self.source, "table": self.table,
                "note": self.note, "status": self.status, "reason": self.reason,
                "ns": {str(n): self.median(n) for n in sorted(set(self.samples) | set(self.cells))},
                "cells": {str(n): why for n, why in self.cells.items()},
                "iters": {str(n): it for n, it in self.iters.items()},
                "samples": {str(n): v for n, v in self.samples.items()}}

    @classmethod
    def from_json(cls, d: dict) -> "Row":
        row = cls(d["id"], d["name"], d["source"], d.get("table", LAUNCH), d.get("note", ""),
                  d.get("status", OK), d.get("reason", ""))
        row.iters = {int(n): v for n, v in d.get("iters", {}).items()}
        row.samples = {int(n): list(v) for n, v in d.get("samples", {}).items()}
        row.cells = {int(n): v for n, v in d.get("cells", {}).items()}
        return row


# ------------------------------------------------------------ loops and timers

def arglist(n: int) -> str:
    return ", ".join(f"a{i}" for i in range(n))


def argenv(args) -> dict:
    return {f"a{i}": a for i, a in enumerate(args)}


def spelled_loop(statement: str, env: dict) -> Callable[[int], None]:
    """``loop(it)`` running ``statement`` ``it`` times, the names it uses bound
    as closure variables. Generated so each call spells its arguments out, as
    users write launches (``k[1, 1](a0, a1, a2, a3)``, not ``k[1, 1](*args)``),
    like the hand-written loops of the CPU launch benchmark."""
    names = sorted(env)
    src = (f"def _outer({', '.join(names)}):\n"
           f"    def loop(it):\n"
           f"        for _ in range(it):\n"
           f"            {statement}\n"
           f"    return loop\n")
    scope: dict = {}
    exec(compile(src, f"<launch loop: {statement}>", "exec"), scope)
    return scope["_outer"](**env)


def plain(loop) -> Callable[[int], float]:
    """Timer for a loop that needs no GPU synchronisation."""
    def timer(iters: int) -> float:
        t0 = time.perf_counter_ns()
        loop(iters)
        return (time.perf_counter_ns() - t0) / iters
    return timer


def batched(loop, sync, batch: int) -> Callable[[int], float]:
    """Host cost per launch: the launches run in batches of ``batch``, only the
    launches are timed, and ``sync()`` after each batch (untimed) drains the
    GPU, so the driver's queue never fills and GPU time never enters."""
    def timer(iters: int) -> float:
        sync()
        total, left = 0, iters
        while left > 0:
            n = min(batch, left)
            t0 = time.perf_counter_ns()
            loop(n)
            total += time.perf_counter_ns() - t0
            sync()
            left -= n
        return total / iters
    return timer


def in_flight(loop, sync) -> Callable[[int], float]:
    """Throughput: ``n`` launches back to back, then one ``sync()``, all timed."""
    def timer(n: int) -> float:
        sync()
        t0 = time.perf_counter_ns()
        loop(n)
        sync()
        return (time.perf_counter_ns() - t0) / n
    return timer


# ------------------------------------------------------------ collecting rows

def describe(exc: BaseException, limit: int = 400) -> tuple[str, str]:
    """(status, reason) for an exception raised while setting up or timing."""
    if isinstance(exc, NotApplicable):
        return SKIPPED, f"n/a: {exc}"
    if isinstance(exc, Skip):
        return SKIPPED, str(exc)
    text = " ".join(str(exc).split()) or repr(exc)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    if isinstance(exc, ImportError):
        return SKIPPED, f"not importable ({type(exc).__name__}: {text})"
    return ERROR, f"{type(exc).__name__}: {text}"


def _blank_rows(source: Source) -> list[Row]:
    return [Row(s.id, s.name, source.name, s.table, s.note) for s in source.rows]


def failed_rows(source: Source, status: str, reason: str) -> list[Row]:
    rows = _blank_rows(source)
    for row in rows:
        row.status, row.reason = status, reason
    return rows


def setup_source(source: Source, ctx: Context, iters: int) -> list[Row]:
    """The source's rows, with timers where its setup gave them and the
    reason where it did not. Never raises (except KeyboardInterrupt)."""
    try:
        made = source.setup(ctx)
    except Exception as exc:
        return failed_rows(source, *describe(exc))
    rows = _blank_rows(source)
    for row in rows:
        got = made.get(row.id)
        if got is None:
            row.status, row.reason = ERROR, "the source's setup gave no timer for this row"
        elif isinstance(got, BaseException):
            row.status, row.reason = describe(got)
        else:
            for n in ctx.params:
                t = got.get(n)
                if isinstance(t, BaseException):
                    row.cells[n] = describe(t)[1]
                elif t is None:
                    row.cells[n] = "not measured"
                else:
                    row.timers[n] = t
                    row.iters[n] = _row_iters(row, ctx, iters)
            if not row.timers:
                why = sorted(set(row.cells.values()))
                row.status, row.reason = SKIPPED, "; ".join(why) or "no timer"
    return rows


def _row_iters(row: Row, ctx: Context, iters: int) -> int:
    if row.table == LAUNCH:
        return iters
    if row.id.endswith(".inflight"):
        return ctx.inflight
    return ctx.roundtrip


def measure(rows: list[Row], repeats: int, budget: float | None = None,
            on_repeat: Callable | None = None) -> dict:
    """Runs every timer once to warm up, then ``repeats`` rounds over all
    (row, param count) pairs, appending ns per launch to ``row.samples``. A
    timer that raises (or returns a negative or non-finite figure) marks its
    cell failed and is not run again. When the first round shows ``repeats``
    rounds would take longer than ``budget`` seconds, fewer are run.
    Returns {"repeats": rounds run, "seconds": time spent}."""
    start = time.monotonic()
    cells = [(row, n) for row in rows if row.status == OK for n in list(row.timers)]

    def run(row, n, it):
        try:
            value = row.timers[n](it)
            if not math.isfinite(value) or value < 0:
                raise RuntimeError(f"the timer returned {value!r}")
            return value
        except Exception as exc:
            row.cells[n] = describe(exc)[1]
            del row.timers[n]
            if not row.timers:
                row.status, row.reason = ERROR, row.cells[n]
            return None

    for row, n in cells:                       # warm up: compile, load, first-use costs
        if n in row.timers:
            run(row, n, max(1, min(row.iters[n] // 10, 1_000)))
    done = 0
    while done < repeats:
        t0 = time.monotonic()
        for row, n in cells:
            if n in row.timers:
                value = run(row, n, row.iters[n])
                if value is not None:
                    row.samples.setdefault(n, []).append(value)
        done += 1
        if on_repeat:
            on_repeat(done, repeats)
        if done == 1 and budget:
            per_round = time.monotonic() - t0
            if per_round * repeats > budget:
                repeats = max(1, min(repeats, int(budget // max(per_round, 1e-9))))
    return {"repeats": done, "seconds": round(time.monotonic() - start, 3)}


# ------------------------------------------------------------ probes (child processes)

def _child_env() -> dict:
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])   # the directory holding quicklaunch/
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _worker_cmd(source: str, ctx: Context, iters: int, repeats: int, out: Path,
                sources_ref: str) -> list[str]:
    return [sys.executable, "-m", "quicklaunch.bench.gpu", "worker", "--source", source,
            "--sources", sources_ref, "--json", str(out), "--device", ctx.device,
            "--iters", str(iters), "--repeats", str(repeats), "--batch", str(ctx.batch),
            "--inflight", str(ctx.inflight), "--roundtrip", str(ctx.roundtrip),
            "--params", ",".join(str(n) for n in ctx.params)] + ([] if ctx.check else ["--no-check"])


def _tail(text: str, limit: int = 1_500) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def run_workers(sources: list[Source], ctx: Context, iters: int, repeats: int, timeout: float,
                parallel: bool, sources_ref: str) -> dict:
    """Runs each source in a child process (all at once when ``parallel``).
    Returns {source name: {"rows": [Row], "info": {...}} or {"failure": reason,
    "log": stderr tail}}; never raises for what a child does."""
    tmp = Path(tempfile.mkdtemp(prefix="quicklaunch-gpu-bench-"))
    results: dict = {}
    env = _child_env()

    def start(src: Source):
        out = tmp / f"{src.name}.json"
        log = open(tmp / f"{src.name}.log", "w+")
        proc = subprocess.Popen(_worker_cmd(src.name, ctx, iters, repeats, out, sources_ref),
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        return src, proc, out, log, time.monotonic()

    def finish(src, proc, out, log, t0):
        try:
            proc.wait(timeout=max(1.0, timeout - (time.monotonic() - t0)))
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            timed_out = True
        log.seek(0)
        text = log.read()
        log.close()
        if out.exists() and not timed_out:
            try:
                data = json.loads(out.read_text())
                results[src.name] = {"rows": [Row.from_json(r) for r in data["rows"]],
                                     "info": data.get("info", {}), "log": _tail(text)}
                return
            except (ValueError, KeyError) as exc:
                why = f"its result file was unreadable ({exc})"
        elif timed_out:
            why = f"did not finish within {timeout:.0f} s"
        elif proc.returncode < 0:
            try:
                name = signal.Signals(-proc.returncode).name
            except ValueError:
                name = f"signal {-proc.returncode}"
            why = f"crashed ({name})"
        else:
            why = f"exited with status {proc.returncode}"
        last = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [""]
        results[src.name] = {"failure": f"{src.name} in a child process {why}"
                                        + (f": {last[0][:300]}" if last[0] else ""),
                             "log": _tail(text)}

    if parallel:
        running = [start(s) for s in sources]
        for item in running:
            finish(*item)
    else:
        for s in sources:
            finish(*start(s))
    shutil.rmtree(tmp, ignore_errors=True)
    return results


def _worker(argv: list[str]) -> int:
    """``python -m quicklaunch.bench.gpu worker ...``: set up and measure one
    source, write its rows as JSON."""
    p = argparse.ArgumentParser(prog="quicklaunch.bench.gpu worker")
    p.add_argument("--source", required=True)
    p.add_argument("--sources", default="quicklaunch.bench.gpu_sources:SOURCES")
    p.add_argument("--json", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--inflight", type=int, default=10_000)
    p.add_argument("--roundtrip", type=int, default=100)
    p.add_argument("--params", default="4,16")
    p.add_argument("--no-check", action="store_true")
    a = p.parse_args(argv)
    import faulthandler
    faulthandler.enable()          # a crash leaves a Python traceback in the probe's log
    prepare_environment()
    source = {s.name: s for s in load_sources(a.sources)}[a.source]
    ctx = Context(device=a.device, params=tuple(int(n) for n in a.params.split(",")),
                  batch=a.batch, inflight=a.inflight, roundtrip=a.roundtrip,
                  check=not a.no_check)
    rows = setup_source(source, ctx, a.iters)
    measure(rows, a.repeats)
    Path(a.json).write_text(json.dumps({"rows": [r.to_json() for r in rows],
                                        "info": ctx.info}, default=str))
    return 0


def load_sources(ref: str) -> list[Source]:
    """``module:attribute`` naming a list of Sources."""
    module, _, attr = ref.partition(":")
    return list(getattr(importlib.import_module(module), attr or "SOURCES"))


def prepare_environment() -> None:
    """Settings that must be made before the peers are imported."""
    # Numba-CUDA warns on every launch of fewer than 128 blocks; the warning
    # machinery would be timed with each launch. Off, and said so in the note.
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")


# ------------------------------------------------------------ the whole run

def run(sources: list[Source], ctx: Context, *, iters: int, repeats: int, budget: float | None,
        probe: bool = True, isolated: bool = False, probe_timeout: float = 90.0,
        sources_ref: str = "quicklaunch.bench.gpu_sources:SOURCES",
        on_progress: Callable | None = None, checkpoint: Callable | None = None) -> dict:
    """Sets up and measures every source; returns {"rows", "probes", "mode",
    "measured", "seconds"}. Sources that fail their probe are not set up
    here. ``checkpoint(partial result)`` is called once the rows are set up
    and after every round, so a run stopped from outside still leaves its
    figures so far."""
    say = on_progress or (lambda msg: None)
    t0 = time.monotonic()
    rows: list[Row] = []
    probes: dict = {}
    got: dict = {}
    mode = "isolated" if isolated else "in-process"
    local: list[Source] = []
    if isolated:
        say(f"measuring {len(sources)} sources, each in its own process")
        got = run_workers(sources, ctx, iters, repeats, probe_timeout + 4 * (budget or 60),
                          parallel=False, sources_ref=sources_ref)
        for s in sources:
            r = got[s.name]
            if "failure" in r:
                rows += failed_rows(s, ERROR, r["failure"])
            else:
                rows += r["rows"]
                ctx.info.update(r["info"])
            probes[s.name] = {k: v for k, v in r.items() if k == "failure"}
        measured = {"repeats": repeats, "seconds": round(time.monotonic() - t0, 3)}
    else:
        if probe:
            say(f"probing {len(sources)} sources in child processes")
            got = run_workers(sources, ctx, 20, 1, probe_timeout, parallel=True,
                              sources_ref=sources_ref)
        for s in sources:
            r = got.get(s.name, {})
            if "failure" in r:
                probes[s.name] = {"failure": r["failure"], "log": r.get("log", "")}
                rows_s = failed_rows(s, ERROR, r["failure"])
            elif r and not any(row.status == OK for row in r["rows"]):
                probes[s.name] = {"status": "no row ran"}
                rows_s = r["rows"]            # their reasons, e.g. "not installed"
                for row in rows_s:
                    row.samples.clear()
            else:
                if r:
                    probes[s.name] = {"status": "ok"}
                local.append(s)
                rows_s = None
            if rows_s is not None:
                rows += rows_s
        by_source = {}
        for s in local:
            say(f"setting up {s.name}")
            by_source[s.name] = setup_source(s, ctx, iters)
        rows = [*rows, *(r for s in local for r in by_source[s.name])]
        order = {s.name: i for i, s in enumerate(sources)}
        rows.sort(key=lambda r: order.get(r.source, 0))
        say(f"measuring: {repeats} rounds over {sum(len(r.timers) for r in rows)} timers")

        def partial(done, total):
            say(f"round {done} of {total} done")
            if checkpoint:
                checkpoint({"rows": rows, "probes": probes, "mode": mode,
                            "measured": {"repeats": done, "seconds": None},
                            "seconds": round(time.monotonic() - t0, 3)})

        partial(0, repeats)
        measured = measure(rows, repeats, budget, on_repeat=partial)
    order = {s.name: i for i, s in enumerate(sources)}
    specs = {spec.id: i for s in sources for i, spec in enumerate(s.rows)}
    rows.sort(key=lambda r: (order.get(r.source, 99), specs.get(r.id, 99)))
    return {"rows": rows, "probes": probes, "mode": mode, "measured": measured,
            "seconds": round(time.monotonic() - t0, 3)}


# ------------------------------------------------------------ machine facts

def versions(dists) -> dict:
    from importlib import metadata
    out = {}
    for d in dict.fromkeys(dists):
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            pass
        except Exception as exc:  # a broken installation: say so, don't fail
            out[d] = f"unknown ({type(exc).__name__})"
    return out


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(), "cpu": cpu,
            "cpus": os.cpu_count()}


def gpu_facts(device: str = "cuda") -> dict:
    """GPU name, driver and CUDA versions: from nvidia-smi (read-only queries)
    and from quicklaunch's device, whichever answer."""
    facts: dict = {}
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            q = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,compute_cap",
                                "--format=csv,noheader"], capture_output=True, text=True,
                               timeout=20)
            if q.returncode == 0 and q.stdout.strip():
                first = q.stdout.strip().splitlines()[0].split(", ")
                keys = ("name", "driver", "memory", "compute_capability")
                facts.update(zip(keys, (v.strip() for v in first)))
            h = subprocess.run([smi], capture_output=True, text=True, timeout=20)
            for token in h.stdout.split("|"):
                if "CUDA Version:" in token:
                    facts["driver_cuda"] = token.split("CUDA Version:")[1].strip().split()[0]
        except (OSError, subprocess.SubprocessError) as exc:
            facts["nvidia_smi_error"] = f"{type(exc).__name__}: {exc}"
    else:
        facts["nvidia_smi_error"] = "nvidia-smi not found"
    try:
        import quicklaunch as ql
        dev = ql.device(device)
        facts["quicklaunch_device"] = dev.description
        facts["arch"] = dev.arch
        version = getattr(getattr(getattr(dev, "backend", None), "driver", None), "version", None)
        if isinstance(version, int) and "driver_cuda" not in facts:
            facts["driver_cuda"] = f"{version // 1000}.{version % 1000 // 10}"
        try:
            facts["nvrtc"] = ".".join(str(v) for v in ql.cuda.nvrtc_version())
        except Exception as exc:
            facts["nvrtc"] = f"unavailable ({type(exc).__name__})"
    except Exception as exc:
        facts["quicklaunch_device_error"] = describe(exc)[1]
    return facts


# ------------------------------------------------------------ output

def result_json(run_result: dict, ctx: Context, config: dict, extra: dict) -> dict:
    return {"benchmark": "CUDA launch overhead (benchmarks/gpu_launch.py)",
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "config": {**config, "mode": run_result["mode"], "batch": ctx.batch,
                       "inflight": ctx.inflight, "roundtrip": ctx.roundtrip,
                       "params": list(ctx.params), "repeats_done": run_result["measured"]["repeats"],
                       "measure_seconds": run_result["measured"]["seconds"],
                       "total_seconds": run_result["seconds"]},
            **extra, "checks": ctx.info, "probes": run_result["probes"],
            "rows": [r.to_json() for r in run_result["rows"]]}


def _fmt(v) -> str:
    return "—" if v is None else (f"{v:,.0f}" if v >= 10_000 else f"{v:.1f}")


def _cell(row: dict, n: int) -> str:
    v = row["ns"].get(str(n))
    if v is not None:
        return _fmt(v)
    why = row["cells"].get(str(n), "")
    return "n/a" if why.startswith("n/a") else "—"


def markdown(result: dict) -> str:
    """The Markdown report: setting, two tables, versions."""
    cfg, gpu = result["config"], result.get("gpu", {})
    params = cfg["params"]
    rows = result["rows"]
    base = next((r for r in rows if r["id"] == "c.launch"), None)
    out = ["# CUDA launch overhead", ""]
    if gpu.get("name"):
        where = f"{gpu['name']}, driver {gpu.get('driver', '?')}"
    else:
        where = gpu.get("quicklaunch_device") or gpu.get("quicklaunch_device_error") or "unknown"
    host = result.get("machine", {})
    out.append(f"GPU: {where} (CUDA {gpu.get('driver_cuda', '?')}); NVRTC {gpu.get('nvrtc', '?')}. "
               f"Host: {host.get('cpu') or '?'}, {host.get('cpus')} CPUs, "
               f"Python {host.get('python')}.")
    out.append(f"Median of {cfg['repeats_done']} rounds (round-robin over rows, {cfg['mode']}); "
               f"{cfg['iters']:,} launches per sample; empty kernels, grid 1, block 1.")
    if result.get("partial"):
        out.append("**Partial result: the run was stopped before it finished.**")
    out += ["", f"## Host cost per launch (ns; batches of {cfg['batch']}, synchronised "
                f"between batches, untimed)", ""]
    head = "| path | " + " | ".join(f"{n} params" for n in params) + " | " + \
           " | ".join(f"− C ({n})" for n in params) + " | note |"
    out += [head, "|---|" + "---:|" * (2 * len(params)) + "---|"]
    for r in (r for r in rows if r["table"] == LAUNCH):
        diffs = []
        for n in params:
            v, b = r["ns"].get(str(n)), (base or {}).get("ns", {}).get(str(n))
            blank = v is None or b is None or r is base or r["source"] == "reference"
            diffs.append("" if blank else f"{v - b:+.1f}")
        out.append(f"| {r['name']} | " + " | ".join(_cell(r, n) for n in params) + " | "
                   + " | ".join(diffs) + f" | {_note(r)} |")
    out += ["", f"## Kernels in flight and round trips (ns per launch; {cfg['inflight']:,} "
                f"launches then one synchronisation, or {cfg['roundtrip']:,} launch + "
                "synchronise pairs)", ""]
    out += ["| path | " + " | ".join(f"{n} params" for n in params) + " | note |",
            "|---|" + "---:|" * len(params) + "---|"]
    for r in (r for r in rows if r["table"] == INFLIGHT):
        out.append(f"| {r['name']} | " + " | ".join(_cell(r, n) for n in params)
                   + f" | {_note(r)} |")
    if result.get("checks"):
        out += ["", "Checks: " + "; ".join(f"{k} = {v}" for k, v in result["checks"].items())]
    if result.get("versions"):
        out += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items())]
    return "\n".join(out) + "\n"


def _note(r: dict) -> str:
    parts = []
    if r["status"] != OK:
        parts.append(f"**{r['status']}**: {r['reason']}")
    elif r["note"]:
        parts.append(r["note"])
    for n, why in sorted(r["cells"].items()):
        if r["status"] == OK and why:
            parts.append(f"{n} params: {why}")
    return "; ".join(parts).replace("|", "\\|").replace("\n", " ")


def write(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md = out_dir / "results.json", out_dir / "results.md"
    tmp = js.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str) + "\n")
    os.replace(tmp, js)
    md.write_text(markdown(result))
    return js, md


# ------------------------------------------------------------ command line

def main(argv=None, default_out: Path | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return _worker(argv[1:])
    p = argparse.ArgumentParser(
        prog="gpu_launch.py",
        description="CUDA launch overhead: quicklaunch's launch paths, a C loop calling "
                    "cuLaunchKernel, and the peers that are installed, in one process. "
                    "Method: benchmarks/README.md.")
    p.add_argument("--quick", action="store_true", help="fewer launches and rounds (~1 minute)")
    p.add_argument("--out", type=Path, default=default_out or Path("gpu-launch-results"),
                   help="directory for results.json and results.md")
    p.add_argument("--device", default="cuda", help="quicklaunch device (default: cuda)")
    p.add_argument("--iters", type=int, help="launches per sample (host-cost rows)")
    p.add_argument("--repeats", type=int, help="rounds over all rows")
    p.add_argument("--batch", type=int, default=256, help="launches between synchronisations")
    p.add_argument("--inflight", type=int, default=10_000, help="launches queued before one sync")
    p.add_argument("--roundtrip", type=int, help="launch + sync pairs per sample")
    p.add_argument("--budget", type=float, help="seconds for the measuring rounds (fewer "
                                                 "rounds when the first shows they won't fit)")
    p.add_argument("--only", help="comma-separated sources to run (e.g. quicklaunch,cupy)")
    p.add_argument("--skip", help="comma-separated sources to leave out")
    p.add_argument("--no-probe", action="store_true", help="set every source up in this "
                   "process without probing it in a child first")
    p.add_argument("--isolated", action="store_true", help="measure each source in its own "
                   "child process (when libraries clash in one process)")
    p.add_argument("--probe-timeout", type=float, default=90.0,
                   help="seconds each source's probe may take")
    p.add_argument("--no-check", action="store_true", help="don't verify launch results (for "
                   "drivers that run no kernels, such as the tests' fake libcuda)")
    p.add_argument("--sources", default="quicklaunch.bench.gpu_sources:SOURCES",
                   help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    mode = QUICK if a.quick else FULL
    iters = a.iters or mode["iters"]
    repeats = a.repeats or mode["repeats"]
    budget = a.budget if a.budget is not None else mode["budget"]
    ctx = Context(device=a.device, batch=a.batch, inflight=a.inflight,
                  roundtrip=a.roundtrip or mode["roundtrip"], check=not a.no_check)
    prepare_environment()
    sources = load_sources(a.sources)
    names = [s.name for s in sources]
    for opt in (a.only, a.skip):
        unknown = set((opt or "").split(",")) - set(names) - {""}
        if unknown:
            p.error(f"unknown source(s) {sorted(unknown)}; known: {', '.join(names)}")
    if a.only:
        sources = [s for s in sources if s.name in a.only.split(",")]
    if a.skip:
        sources = [s for s in sources if s.name not in a.skip.split(",")]

    def say(msg):
        print(f"[gpu_launch {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    config = {"iters": iters, "repeats": repeats, "quick": a.quick, "budget_s": budget,
              "probe": not a.no_probe, "sources": [s.name for s in sources]}
    dists = ["quicklaunch", "numpy"] + [d for s in sources for d in s.dists]
    extra = {"machine": machine(), "gpu": {}, "versions": {}}

    def checkpoint(partial_result):
        try:
            write({**result_json(partial_result, ctx, config, extra), "partial": True}, a.out)
        except OSError as exc:
            say(f"could not write partial results: {exc}")

    say(f"sources: {', '.join(config['sources'])}; {iters} launches x {repeats} rounds")
    result = run(sources, ctx, iters=iters, repeats=repeats, budget=budget,
                 probe=not a.no_probe, isolated=a.isolated, probe_timeout=a.probe_timeout,
                 sources_ref=a.sources, on_progress=say, checkpoint=checkpoint)
    extra["gpu"] = gpu_facts(a.device)
    extra["versions"] = versions(dists)
    data = result_json(result, ctx, config, extra)
    js, md = write(data, a.out)
    print()
    print(markdown(data))
    print(f"written: {js} and {md}")
    ql_rows = [r for r in result["rows"] if r.id.startswith("ql.")]
    return 0 if all(r.status == OK for r in ql_rows) else 1


if __name__ == "__main__":
    # Run the module under its real name, so classes such as Skip are the
    # ones gpu_sources imports (under -m this file is also __main__).
    from quicklaunch.bench import gpu as _gpu
    sys.exit(_gpu.main())

"""Child-process isolation for the launch benchmarks.

Each source can be set up and measured in a child process,
``python -m quicklaunch.bench.harness.workers ...``, which writes its rows as
JSON: a peer that is missing, raises, hangs or even crashes the interpreter
costs its rows, not the run. ``run_workers`` is the parent side (start the
children, wait with a timeout, turn a crash into a reason); ``worker_main``
is the child side. ``child_env`` and ``crash_name`` serve every benchmark
that runs children (the CG probes too).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .measure import measure, setup_source
from .model import Context, Row, Source, load_sources


def child_env() -> dict:
    """This environment, with the quicklaunch being run first on the path."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[3])   # the directory holding quicklaunch/
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def crash_name(returncode: int) -> str:
    """The signal that ended a child (a negative return code): "SIGABRT"."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _worker_cmd(source: str, ctx: Context, iters: int, repeats: int, out: Path,
                sources_ref: str) -> list[str]:
    return [sys.executable, "-m", "quicklaunch.bench.harness.workers", "--source", source,
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
    tmp = Path(tempfile.mkdtemp(prefix="quicklaunch-bench-"))
    results: dict = {}
    if not sources_ref:
        raise ValueError("child processes find their sources by name: give sources_ref "
                         "(module:attribute)")
    env = child_env()

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
            why = f"crashed ({crash_name(proc.returncode)})"
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


def worker_main(argv: list[str]) -> int:
    """``python -m quicklaunch.bench.harness.workers ...``: set up and measure one
    source, write its rows as JSON."""
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.harness.workers")
    p.add_argument("--source", required=True)
    p.add_argument("--sources", required=True, help="module:attribute naming the sources")
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
    source = {s.name: s for s in load_sources(a.sources)}[a.source]
    ctx = Context(device=a.device, params=tuple(int(n) for n in a.params.split(",")),
                  batch=a.batch, inflight=a.inflight, roundtrip=a.roundtrip,
                  check=not a.no_check)
    rows = setup_source(source, ctx, a.iters)
    measure(rows, a.repeats)
    Path(a.json).write_text(json.dumps({"rows": [r.to_json() for r in rows],
                                        "info": ctx.info}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))

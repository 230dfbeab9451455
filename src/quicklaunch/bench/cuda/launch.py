"""The CUDA launch benchmark's command line (benchmarks/cuda_launch.py,
``python -m quicklaunch.bench.cuda``).

``main`` parses the options, runs the sources (harness/run.py), gathers the
machine facts (harness/facts.py, facts.py), writes results.json and
results.md (report.py) and prints the tables. Method: benchmarks/README.md,
"CUDA launch overhead".

The CUDA modules, under quicklaunch/bench/cuda/:

    sources.py       the list of sources, in table order, from
    quicklaunch.py     quicklaunch, the C baseline and the reference rows
    peers.py           cuda.core, CuPy, torch
    peers_jit.py       Numba-CUDA, Triton, Warp (kernels written in Python)
    baseline.py      the C baseline: building, loading, parameter blocks
    facts.py         GPU facts
    report.py        results.json and results.md

and the shared harness under quicklaunch/bench/harness/ (model, timing,
kernels, measure, workers, run, facts).
"""
import argparse
import sys
import time
from pathlib import Path

from ..harness.facts import machine, versions
from ..harness.model import OK, Context, load_sources
from ..harness.run import run
from .facts import gpu_facts
from .report import markdown, result_json, write

SOURCES = "quicklaunch.bench.cuda.sources:SOURCES"    # --sources: module:attribute

FULL = {"iters": 20_000, "repeats": 7, "roundtrip": 2_000, "budget": 110.0}
QUICK = {"iters": 3_000, "repeats": 3, "roundtrip": 300, "budget": 40.0}


def main(argv=None, default_out: Path | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(
        prog="python -m quicklaunch.bench.cuda",
        description="CUDA launch overhead: quicklaunch's launch paths, a C loop calling "
                    "cuLaunchKernel, and the peers that are installed, in one process. "
                    "Method: benchmarks/README.md.")
    p.add_argument("--quick", action="store_true", help="fewer launches and rounds (~1 minute)")
    p.add_argument("--out", type=Path, default=default_out or Path("cuda-launch-results"),
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
    p.add_argument("--sources", default=SOURCES,
                   help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    mode = QUICK if a.quick else FULL
    iters = a.iters or mode["iters"]
    repeats = a.repeats or mode["repeats"]
    budget = a.budget if a.budget is not None else mode["budget"]
    ctx = Context(device=a.device, batch=a.batch, inflight=a.inflight,
                  roundtrip=a.roundtrip or mode["roundtrip"], check=not a.no_check)
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
        print(f"[cuda launch {time.strftime('%H:%M:%S')}] {msg}", flush=True)

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
    sys.exit(main())

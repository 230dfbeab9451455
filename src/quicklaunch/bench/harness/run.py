"""A whole launch benchmark run: probe, set up, measure.

Each source is first *probed* in a child process (set up, a few launches),
all probes at once: a peer that is missing, raises or even crashes the
interpreter costs its rows, not the run. Sources that pass are then set up
in this process and measured together, the repeats going round-robin over
all rows (measure.py) so slow drifts hit every row alike.
``isolated=True`` (``--isolated``) measures each source in its own child
process instead (workers.py).
"""
import time
from collections.abc import Callable

from .measure import failed_rows, measure, setup_source
from .model import ERROR, OK, Context, Row, Source
from .workers import run_workers


def run(sources: list[Source], ctx: Context, *, iters: int, repeats: int, budget: float | None,
        probe: bool = True, isolated: bool = False, probe_timeout: float = 90.0,
        sources_ref: str | None = None,
        on_progress: Callable | None = None, checkpoint: Callable | None = None) -> dict:
    """Sets up and measures every source; returns {"rows", "probes", "mode",
    "measured", "seconds"}. Sources that fail their probe are not set up
    here. ``sources_ref`` (module:attribute) is how child processes find
    ``sources``: needed for probes and ``isolated``. ``checkpoint(partial
    result)`` is called once the rows are set up and after every round, so
    a run stopped from outside still leaves its figures so far."""
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

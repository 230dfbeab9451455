"""Setting sources up and measuring their rows, round-robin.

``setup_source`` turns a source's setup into its declared rows, each with
timers or the reason it has none; it never raises. ``measure`` warms every
timer up and then goes round-robin over all (row, param count) cells for
the requested rounds (as in the CPU launch benchmark), so slow drifts hit
every row alike; a timer that fails loses its cell, not the run.
"""
import math
import time
from collections.abc import Callable

from .model import ERROR, LAUNCH, OK, SKIPPED, Context, Row, Source, describe


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

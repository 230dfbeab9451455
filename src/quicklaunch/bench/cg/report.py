"""The CG benchmark's result as a text table.

One row per implementation, one column per grid size: ms per iteration for
a checked result, or a short status (``wrong``, ``skipped``, ``n/a``,
``failed``) with the full reasons listed under the table, then versions.
"""
from __future__ import annotations


def _short(status: str) -> str:
    for prefix, short in (("wrong result", "wrong"), ("skipped", "skipped"),
                          ("not installed", "n/a"), ("not available", "n/a"),
                          ("unknown implementation", "unknown")):
        if status.startswith(prefix):
            return short
    return "failed"


def _cell(row: dict) -> str:
    if row["status"] == "ok" and row["ms_per_iter"] is not None:
        ms = row["ms_per_iter"]
        return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"
    return _short(row["status"])


def table(result: dict) -> str:
    sizes = [str(N) for N in result["sizes"]]
    names = list(result["rows"])
    width = max([len("implementation")] + [len(n) for n in names])
    cells = {n: [_cell(result["rows"][n][s]) for s in sizes] for n in names}
    colw = [max(len(f"N={s}"), *(len(cells[n][i]) for n in names)) for i, s in enumerate(sizes)]
    lines = [f"CG on the 2D Poisson equation, {result['iterations']} iterations, "
             f"device {result['device']}: ms per iteration (median)",
             "  ".join([f"{'implementation':<{width}}"] +
                       [f"{'N=' + s:>{w}}" for s, w in zip(sizes, colw)])]
    for n in names:
        lines.append("  ".join([f"{n:<{width}}"] +
                               [f"{c:>{w}}" for c, w in zip(cells[n], colw)]))
    notes = []
    for n in names:
        reasons: dict = {}
        for s in sizes:
            st = result["rows"][n][s]["status"]
            if st != "ok":
                reasons.setdefault(st, []).append(s)
        for st, where in reasons.items():
            at = "all sizes" if len(where) == len(sizes) else "N=" + ", ".join(where)
            notes.append(f"  {n} ({at}): {st}")
    if notes:
        lines += ["", "notes:", *notes]
    lines += ["", "versions: " + ", ".join(f"{n} {v}" for n, v in result["versions"].items())]
    return "\n".join(lines)


def residual_table(result: dict) -> str:
    """Relative residuals ||f - A u|| / ||f||, per implementation and size."""
    sizes = [str(N) for N in result["sizes"]]
    names = list(result["rows"])
    width = max([len("residual")] + [len(n) for n in names])
    lines = ["  ".join([f"{'residual':<{width}}"] + [f"{'N=' + s:>11}" for s in sizes])]
    for n in names:
        vals = [result["rows"][n][s]["residual"] for s in sizes]
        lines.append("  ".join([f"{n:<{width}}"] +
                               [f"{v:>11.4e}" if v is not None else f"{'-':>11}" for v in vals]))
    return "\n".join(lines)

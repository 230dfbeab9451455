"""The plots of ``quicklaunch bench``, drawn with matplotlib's Agg canvas
(no display, no pyplot state):

    launch_overhead.png          ns per launch, 4 and 16 parameters, every row
                                 of the launch table, peers included
    cg_time_per_iteration.png    ms per CG iteration against grid size, log-log,
                                 one line per implementation
    null_driver_overhead.png     the null-driver section: each launcher's ns per
                                 launch above the C loop on the same driver entry,
                                 log scale (rows that cannot run are named, no bar)

``write_plots(result, out_dir)`` returns {file name: "written" or
"skipped: why"}; when matplotlib cannot be imported, {"skipped": why} and no
file is written. It never raises for what the data holds.
"""
from __future__ import annotations

import math
from pathlib import Path

LAUNCH_PNG = "launch_overhead.png"
CG_PNG = "cg_time_per_iteration.png"
NULL_PNG = "null_driver_overhead.png"
COLORS = {4: "#1f77b4", 16: "#ff7f0e"}


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) and v > 0 else None


def _fmt_ns(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e4:
        return f"{v / 1e3:.1f} us"
    return f"{v:.0f} ns" if v >= 100 else f"{v:.1f} ns"


def plot_launch(result: dict, path: Path) -> str:
    launch = result.get("launch") or {}
    rows = launch.get("rows") or {}
    names = list(rows)
    values = {n: {p: _number(rows[name].get(str(p))) for p in (4, 16)} for n, name in
              enumerate(names)}
    measured = [v for per in values.values() for v in per.values() if v is not None]
    if not measured:
        return "skipped: no launch row has a figure"
    fig = _figure(10.5, 1.2 + 0.42 * len(names))
    ax = fig.add_subplot(1, 1, 1)
    lo, hi = min(measured), max(measured)
    log = hi / lo > 20
    h = 0.38
    labelled = set()
    for i, name in enumerate(names):
        y = len(names) - 1 - i
        for j, p in enumerate((4, 16)):
            v = values[i][p]
            if v is None:
                continue
            yy = y + (h / 2 if j == 0 else -h / 2)
            ax.barh(yy, v, height=h, color=COLORS[p],
                    label=None if p in labelled else f"{p} params")
            labelled.add(p)
            ax.text(v * (1.08 if log else 1.0) + (0 if log else hi * 0.01), yy, _fmt_ns(v),
                    va="center", fontsize=7)
        row = rows[name]
        if all(values[i][p] is None for p in (4, 16)):
            why = f"{row.get('status', 'not measured')}: {row.get('reason', '')}"
            ax.text(lo if log else 0, y, "  " + (why[:90] + ("..." if len(why) > 90 else "")),
                    va="center", fontsize=7, color="#888888")
    ax.set_ylim(-0.75, len(names) - 0.25)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(list(reversed(names)), fontsize=8)
    for label in ax.get_yticklabels():
        if rows.get(label.get_text(), {}).get("source") == "quicklaunch":
            label.set_fontweight("bold")
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 2, hi * 6)
    else:
        ax.set_xlim(0, hi * 1.25)
    ax.set_xlabel("ns per launch (empty kernel, grid 1, block 1)" + (", log scale" if log
                                                                      else ""))
    where = result.get("device", "?")
    mode = "quick" if result.get("quick") else "full"
    ax.set_title(f"Launch overhead on {where} ({mode} run; lower is better)", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(path)
    return "written"


def plot_cg(result: dict, path: Path) -> str:
    cg = result.get("cg") or {}
    if cg.get("status") != "ok":
        return f"skipped: the CG section has no result ({cg.get('reason', 'not run')})"
    lines = {}
    for impl, by_n in (cg.get("rows") or {}).items():
        pts = []
        for n, cell in (by_n or {}).items():
            try:
                size = int(n)
            except (TypeError, ValueError):
                continue
            if not isinstance(cell, dict) or cell.get("status", "ok") != "ok":
                continue
            v = _number(cell.get("ms_per_iter"))
            if v is not None and size > 0:
                pts.append((size, v))
        if pts:
            lines[impl] = sorted(pts)
    if not lines:
        return "skipped: no CG implementation has a figure"
    fig = _figure(8.0, 5.5)
    ax = fig.add_subplot(1, 1, 1)
    markers = "os^vD<>px*h"
    for i, (impl, pts) in enumerate(lines.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[i % len(markers)],
                label=impl, linewidth=1.5, markersize=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({p[0] for pts in lines.values() for p in pts})
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_xlabel("grid size N (N x N unknowns)")
    ax.set_ylabel("ms per CG iteration")
    its = cg.get("iterations")
    ax.set_title(f"Conjugate gradient, 2D Poisson, on {cg.get('device') or result.get('device')}"
                 + (f" ({its} iterations)" if its else "")
                 + "\nflat: launch-bound; rising: bandwidth-bound", fontsize=10)
    ax.grid(which="both", alpha=0.25)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return "written"


def plot_null(result: dict, path: Path) -> str:
    """The null-driver section (result["null_driver"]): overhead above the
    driver entry (row minus the C loop on it), log scale."""
    sec = result.get("null_driver") or {}
    if sec.get("status") != "ok":
        return f"skipped: the null-driver section has no result ({sec.get('reason', 'not run')})"
    rows = {n: r for n, r in (sec.get("rows") or {}).items() if r.get("entry") or
            r.get("status") == "unsupported" or r.get("source") not in ("reference",)}
    names = list(rows)
    values = {name: {p: _number((rows[name].get("minus_c") or {}).get(str(p))) for p in (4, 16)}
              for name in names}
    measured = [v for per in values.values() for v in per.values() if v is not None]
    if not measured:
        return "skipped: no null-driver row has a figure"
    fig = _figure(10.5, 1.4 + 0.42 * len(names))
    ax = fig.add_subplot(1, 1, 1)
    h = 0.38
    labelled = set()
    lo = min(measured)
    for i, name in enumerate(names):
        for j, p in enumerate((4, 16)):
            v = values[name][p]
            if v is None:
                continue
            label = f"{p} params" if p not in labelled else None
            labelled.add(p)
            ax.barh(i + (j - 0.5) * h, v, height=h, color=COLORS[p], label=label)
            ax.text(v * 1.08, i + (j - 0.5) * h, _fmt_ns(v), va="center", fontsize=7)
        if all(values[name][p] is None for p in (4, 16)):
            why = rows[name].get("status", "")
            ax.text(max(lo, 1.0), i, f"  {why}: not run on a null driver (results.json: why)"
                    if why == "unsupported" else f"  {why}", va="center", fontsize=7,
                    color="#777777")
    ax.set_xscale("log")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ns per launch above the driver entry (row minus the C loop on it), log scale")
    ax.set_title(f"{sec.get('title', 'null driver')}: median of {sec.get('rounds')} rounds",
                 fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(max(lo / 2, 0.5), max(measured) * 4)
    ax.set_ylim(len(names) - 0.4, -0.8)
    fig.tight_layout()
    fig.savefig(str(path))
    return "written"


def write_plots(result: dict, out_dir) -> dict:
    out_dir = Path(out_dir)
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends import backend_agg  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install
        return {"skipped": f"matplotlib is not importable ({type(exc).__name__}: {exc}); "
                           f"plots skipped"}
    out = {}
    plots = [(LAUNCH_PNG, plot_launch), (CG_PNG, plot_cg)]
    if result.get("null_driver"):
        plots.append((NULL_PNG, plot_null))
    for name, fn in plots:
        try:
            out[name] = fn(result, out_dir / name)
        except Exception as exc:  # noqa: BLE001 - the JSON is still written
            out[name] = f"skipped: plotting failed ({type(exc).__name__}: {exc})"
    return out

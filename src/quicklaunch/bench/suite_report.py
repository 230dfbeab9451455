"""What ``quicklaunch bench`` prints: the progress bar on stderr and the
tables of a suite result (suite.py)."""
from __future__ import annotations

import sys
import time


class TextProgress:
    """``progress(done, total, what)`` as a text bar on a stream. On a
    terminal the bar is redrawn in place; elsewhere (a log, CI) a line is
    printed when the stage changes or another quarter is done."""

    def __init__(self, stream=None, width: int = 24):
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.monotonic()
        self.last = (None, -1)
        self.drawn = False

    def __call__(self, done: float, total: float, what: str = "") -> None:
        frac = min(max(done / total if total else 0.0, 0.0), 1.0)
        elapsed = time.monotonic() - self.t0
        bar = "#" * int(self.width * frac)
        line = f"[{bar:<{self.width}}] {100 * frac:3.0f}% {elapsed:5.0f}s {what}"
        if self.tty:
            cols = 100
            print(f"\r{line[:cols]:<{cols}}", end="", file=self.stream, flush=True)
            self.drawn = True
            return
        stage, quarter = what.split(":")[0], int(4 * frac)
        if (stage, quarter) != self.last:
            self.last = (stage, quarter)
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty and self.drawn:
            print(file=self.stream, flush=True)


def _fmt(v) -> str:
    if v is None:
        return "—"
    if v >= 1e6:
        return f"{v / 1e6:,.2f} ms"
    if v >= 1e4:
        return f"{v / 1e3:,.1f} us"
    return f"{v:.1f}"


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def launch_table(result: dict) -> str:
    launch = result.get("launch") or {}
    rows = launch.get("rows") or {}
    ref = (rows.get("quicklaunch configured") or {}).get("4")
    base = (rows.get("C baseline") or {}).get("4")
    how = (f"median of {launch.get('repeats')} x {launch.get('iters'):,} launches "
           f"(peers: median of {launch.get('peer_repeats')}, each sample at most "
           f"{launch.get('peer_iters'):,} launches or about 25 ms)") if rows else ""
    if launch.get("batch"):
        how += f"; batches of {launch['batch']}, untimed synchronisation between"
    width = max([len(n) for n in rows] + [20]) + 2
    out = [f"Launch overhead on {result.get('device')}: ns per launch of an empty kernel, "
           f"grid 1, block 1 (us/ms where marked)", how,
           f"{'path':<{width}}{'4 params':>12}{'16 params':>12}{'- C (4)':>11}"
           f"{'/ configured (4)':>18}  status"]
    notes = []
    for name, r in rows.items():
        v4, v16 = r.get("4"), r.get("16")
        minus = f"{v4 - base:+.1f}" if v4 is not None and base and r.get("source") != \
            "reference" and v4 < 1e4 else ""
        ratio = f"{v4 / ref:.2f}x" if v4 is not None and ref else ""
        status = "" if r.get("status") == "ok" else f"{r.get('status')}: {_short(r.get('reason'))}"
        if r.get("status") == "ok" and r.get("cells"):
            status = "; ".join(f"{n} params: {_short(w, 50)}" for n, w in r["cells"].items())
        out.append(f"{name:<{width}}{_fmt(v4):>12}{_fmt(v16):>12}{minus:>11}{ratio:>18}  "
                   f"{status}".rstrip())
        if r.get("source") not in ("quicklaunch", "reference") and r.get("note"):
            notes.append(f"  {name}: {_short(r['note'], 150)}")
    checks = launch.get("checks") or {}
    if notes:
        out += ["", "What each peer row measures:", *notes]
    if checks:
        out.append("Checks: " + "; ".join(f"{k} = {_short(v, 120)}" for k, v in checks.items()))
    return "\n".join(out)


def cg_table(result: dict) -> str:
    cg = result.get("cg") or {}
    if cg.get("status") != "ok":
        return f"CG workload: {cg.get('status', 'not run')}: {cg.get('reason', '')}"
    rows = cg.get("rows") or {}
    sizes = [str(s) for s in (cg.get("sizes") or sorted(
        {int(n) for by_n in rows.values() for n in (by_n or {}) if str(n).isdigit()}))]
    width = max([len(str(i)) for i in rows] + [14]) + 2
    out = [f"CG on 2D Poisson (N x N grid) on {cg.get('device') or result.get('device')}: "
           f"ms per iteration ({cg.get('iterations', '?')} iterations per run)",
           f"{'implementation':<{width}}" + "".join(f"{'N=' + s:>10}" for s in sizes)]
    problems = []
    for impl, by_n in rows.items():
        cells = []
        for s in sizes:
            cell = (by_n or {}).get(s) or (by_n or {}).get(int(s)) or {}
            v, st = cell.get("ms_per_iter"), cell.get("status", "ok")
            if st == "ok" and isinstance(v, (int, float)):
                cells.append(f"{v:>10.4g}")
            else:
                cells.append(f"{'—':>10}")
                if cell:
                    problems.append(f"  {impl} N={s}: {_short(st, 120)}")
        out.append(f"{impl:<{width}}" + "".join(cells))
    if problems:
        out += ["Not measured:", *problems[:20]]
        if len(problems) > 20:
            out.append(f"  ... and {len(problems) - 20} more (results.json)")
    return "\n".join(out)


def table(result: dict) -> str:
    m = result.get("machine") or {}
    head = (f"quicklaunch bench on {result.get('device')} ({m.get('cpu') or '?'}, "
            f"{m.get('cpus')} CPUs, Python {m.get('python')}); "
            f"{'quick' if result.get('quick') else 'full'} run")
    secs = result.get("seconds") or {}
    if secs:
        head += ", " + ", ".join(f"{k} {v:.0f} s" for k, v in secs.items())
    parts = [head, launch_table(result)]
    if result.get("null_driver"):
        from .cuda.null_overhead import table as null_table
        parts.append(null_table(result["null_driver"]))
    return "\n\n".join(parts + [cg_table(result)])

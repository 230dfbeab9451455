"""``run``: every implementation at every size, checked, then timed.

For each size: the NumPy reference solve (untimed; it doubles as the NumPy
row's warm-up), then each implementation in turn: build its solver, one
warm-up solve (compilation happened in ``prepare``, before any size) whose
result is checked against the reference (check.py), then ``repeats`` timed
solves from a reset state. ms_per_iter is the median of (solve time /
iterations). A result that does not match is reported, not timed.

Each row (one implementation at one size) is kept to about ``SKIP_SECONDS``:
a size where the previous one says that even the warm-up and one timed
solve would take longer is skipped with ``"skipped: too slow (est. Xs)"``
(X: warm-up and all repeats at the fastest time per iteration seen at the
previous size, scaled by the number of unknowns and by ``GROWTH``, as
larger vectors fall out of the caches); otherwise the warm-up's own time
caps the repeats (at least one), so a slow row or a noisy estimate costs
one solve too many at worst, never a run of minutes. Any exception becomes its
row's status (impl.describe), and the peers that load native code are first
tried in child processes (probe.py), so a peer that crashes or hangs there
costs its own rows, never the run.
"""
from __future__ import annotations

import gc
import statistics
import time

from . import check, probe
from .impl import Implementation, Unavailable, describe
from .problem import make_problem
from .registry import registry

DEFAULT_SIZES = (32, 64, 128, 256, 512, 1024, 2048)
QUICK_SIZES = (32, 64, 128)
SKIP_SECONDS = 20.0
GROWTH = 1.25   # time per unknown grows as the vectors leave the caches


def _select(implementations) -> list:
    """Implementation objects, or (name, reason) for unknown names."""
    known = registry()
    if implementations is None:
        return list(known.values())
    chosen, seen = [], set()
    for item in implementations:
        if isinstance(item, str):
            item = known.get(item, (item, f"unknown implementation (known: {', '.join(known)})"))
        name = item[0] if isinstance(item, tuple) else item.name
        if name not in seen:
            seen.add(name)
            chosen.append(item)
    return chosen


def _row(ms=None, residual=None, status="ok") -> dict:
    return {"ms_per_iter": None if ms is None else float(ms),
            "residual": None if residual is None else float(residual), "status": status}


def _time_solves(solver, iterations: int, repeats: int) -> list:
    """Seconds per iteration of each of ``repeats`` solves from a reset state."""
    samples = []
    for _ in range(repeats):
        solver.reset()
        t0 = time.perf_counter()
        solver.solve(iterations)
        samples.append((time.perf_counter() - t0) / iterations)
    return samples


def _measure(impl: Implementation, problem, reference, iterations: int, repeats: int,
             warm_solver=None) -> tuple:
    """(row, fastest seconds per iteration or None)."""
    ref_u, ref_residual = reference
    try:
        solver = warm_solver
        t0 = time.perf_counter()
        if solver is None:
            solver = impl.solver(problem)
            solver.reset()
            solver.solve(iterations)          # warm-up, and the result we check
        warm = time.perf_counter() - t0
        u = solver.result()
        residual = problem.residual(u)
        wrong = check.compare(u, residual, ref_u, ref_residual)
        if wrong:
            return _row(residual=residual, status=wrong), None
        if warm_solver is None and warm * (repeats + 1) > SKIP_SECONDS:
            repeats = max(1, int((SKIP_SECONDS - warm) / warm))   # keep the row in budget
        samples = _time_solves(solver, iterations, repeats)
        return _row(statistics.median(samples) * 1e3, residual), min(samples)
    except Exception as exc:  # noqa: BLE001 - a failing implementation is a row
        return _row(status=describe(exc)), None


def run(device=None, sizes=DEFAULT_SIZES, implementations=None, iterations=50, repeats=3,
        quick=False, progress=None) -> dict:
    """Runs the CG benchmark; returns {"device", "iterations", "sizes",
    "rows": {impl: {str(N): {"ms_per_iter", "residual", "status"}}},
    "versions": {impl: version}} (JSON-serialisable). ``implementations``:
    names (default: all known) or Implementation objects."""
    import quicklaunch as ql
    from .numpy_impl import NumpyCG, NumpySolver
    dev = ql.device(device)
    sizes = [int(s) for s in sizes]
    iterations, repeats = int(iterations), max(1, int(repeats))
    if quick:
        sizes = [s for s in sizes if s <= max(QUICK_SIZES)] or list(QUICK_SIZES)
        repeats = 1
    chosen = _select(implementations)
    total = len(chosen) * len(sizes)
    done = 0

    def say(what):
        if progress is not None:
            progress(done, total, what)

    rows: dict = {}
    versions: dict = {}
    ready = []
    known = registry()
    peers = {i.name for i in chosen if not isinstance(i, tuple) and i.name in probe.PROBED
             and type(i) is type(known[i.name])}          # registry rows, not test doubles
    groups = {lib: (names, probe.command(dev.name, names))
              for lib, rows in probe.LIBRARIES.items()
              if (names := [r for r in rows if r in peers])}
    verdicts = {}
    if groups:
        say(f"probing {', '.join(groups)} in child processes")
        verdicts = probe.probe_all(groups)
    for item in chosen:
        if isinstance(item, tuple):
            name, reason = item
            rows[name] = {str(N): _row(status=reason) for N in sizes}
            versions[name] = "unknown"
            done += len(sizes)
            continue
        say(f"preparing {item.name}")
        try:
            if verdicts.get(item.name):
                raise Unavailable(verdicts[item.name])
            item.prepare(dev)
            ready.append(item)
            rows[item.name] = {}
        except Exception as exc:  # noqa: BLE001 - not installed, cannot compile, ...
            rows[item.name] = {str(N): _row(status=describe(exc)) for N in sizes}
            done += len(sizes)
        try:
            versions[item.name] = str(item.version())
        except Exception as exc:  # noqa: BLE001
            versions[item.name] = f"unknown ({type(exc).__name__})"

    last: dict = {}   # impl name -> (unknowns, seconds per iteration) of its last timed size
    for N in sizes:
        problem = make_problem(N)
        say(f"NumPy reference, N={N}")
        try:
            ref_solver = NumpySolver(problem)
            ref_solver.reset()
            ref_solver.solve(iterations)
            u = ref_solver.result()
            reference, ref_error = (u, problem.residual(u)), None
        except Exception as exc:  # noqa: BLE001
            ref_solver, ref_error = None, f"no reference: {describe(exc)}"
        for impl in ready:
            say(f"{impl.name}, N={N}")
            key = str(N)
            prev = last.get(impl.name)
            one = prev[1] * problem.n / prev[0] * GROWTH * iterations if prev else 0.0
            if ref_error:
                rows[impl.name][key] = _row(status=ref_error)
            elif 2 * one > SKIP_SECONDS:
                rows[impl.name][key] = _row(
                    status=f"skipped: too slow (est. {one * (repeats + 1):.0f}s)")
            else:
                warm = ref_solver if type(impl) is NumpyCG else None
                rows[impl.name][key], fastest = _measure(impl, problem, reference,
                                                         iterations, repeats, warm)
                if fastest is not None:
                    last[impl.name] = (problem.n, fastest)
            done += 1
            gc.collect()
        ref_solver = None
    say("done")
    return {"device": dev.name, "iterations": iterations, "sizes": sizes, "rows": rows,
            "versions": versions}

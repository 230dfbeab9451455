"""The launch-overhead benchmark, on any device: per-launch time of an empty
kernel with 4 and with 16 parameters, through each quicklaunch path, side
by side with a C loop calling the same launch entry and with the floor of
any C extension.

    python -m quicklaunch.bench.launch [--device cpu] [--iters 200000] [--repeats 9]
                                       [--out FILE]

Rows (ns per launch, median of repeats):
  indexed      k[grid, block](*args)
  configured   run = k.configure(grid, block); run(*args)
  direct       k.launch(grid, block, *args)
  graph replay 100 configured launches recorded once (ql.graph), replayed with
               g.replay(); per kernel
  C stub       a configured launch of a stub=True build: the launcher calls
               the kernel's C host stub (quicklaunch.host_stub), which calls
               the launch entry; nvcc's behaviour
  debug stub   a debug build's configured launch: a Python function named after
               the kernel, then the same C path
  C baseline   C loop calling the device's launch entry, prebuilt parameters
  C-ext floor  a METH_FASTCALL function that takes the args and does nothing
  python loop  an empty Python for-loop step (included in every Python row)

The kernels and arguments are harness/kernels.py's, spelled out in each
call. On a GPU, ``measure(..., batch=256)`` times the launches in batches
with an untimed synchronisation between them (as the CUDA benchmark's rows
do), so the driver's queue never fills; by default nothing is synchronised
while timing.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys

import quicklaunch as ql

from . import _floor
from .harness.baseline import CBaseline, c_params
from .harness.kernels import SOURCE, host_args
from .harness.results import save
from .harness.timing import argenv, arglist, batched, per_launch, spelled_loop

ROWS = ("python loop", "C-ext floor", "C baseline", "indexed", "configured", "direct",
        "graph replay", "C stub", "debug stub")
GRAPH_LAUNCHES = 100   # launches per recorded graph


def _timers(mod, dbg, n: int, c: CBaseline, batch: int | None = None, stb=None) -> dict:
    """{row: fn(iters) -> ns per launch} for the kernel with n parameters; a
    row that cannot be set up maps to its exception instead."""
    dev = mod.device
    k = mod.get_kernel(f"empty{n}")
    args = host_args(n, dev)
    run = k.configure(1, 1)
    env = {"k": k, "run": run, "stub": dbg.get_kernel(f"empty{n}").configure(1, 1),
           "floor": _floor.nothing, **argenv(args)}
    a = arglist(n)
    sync = dev.synchronize

    def timed(statement):
        return batched(spelled_loop(statement, env), sync, batch)

    params = c_params(k, args)   # (block, the values it points to): held by c_loop

    def c_loop(it, params=params):
        c.launch_ns(k, params[0], it)

    timers = {"python loop": timed("pass"), "C-ext floor": timed(f"floor({a})"),
              "C baseline": batched(c_loop, sync, batch), "indexed": timed(f"k[1, 1]({a})"),
              "configured": timed(f"run({a})"), "direct": timed(f"k.launch(1, 1, {a})"),
              "debug stub": timed(f"stub({a})")}
    if isinstance(stb, Exception):
        timers["C stub"] = stb
    elif stb is not None:
        env["cstub"] = stb.get_kernel(f"empty{n}").configure(1, 1)
        timers["C stub"] = timed(f"cstub({a})")
    try:
        with ql.graph(device=dev) as g:
            for _ in range(GRAPH_LAUNCHES):
                run(*args)
        replay = batched(spelled_loop("g.replay()", {"g": g}), sync,
                         batch and max(1, batch // GRAPH_LAUNCHES))
        timers["graph replay"] = per_launch(replay, GRAPH_LAUNCHES)
    except Exception as exc:  # noqa: BLE001 - the other rows still run
        timers["graph replay"] = exc
    return timers


def measure(device=None, iters: int = 100_000, repeats: int = 7, progress=None,
            batch: int | None = None) -> dict:
    """Runs the benchmark; returns {"device", "iters", "repeats", "rows": {row: {nparams:
    median ns}}}, plus "errors": {row: why} for rows that could not be set up
    (those are left out of "rows"). Repeats go round-robin over all rows, so
    slow drifts of a noisy machine hit every row alike. ``batch``: launches
    between untimed synchronisations (for GPUs; None: none)."""
    dev = ql.device(device)
    mod = ql.compile(SOURCE, device=dev)
    dbg = ql.compile(SOURCE, device=dev, debug=True)
    try:
        stb = ql.compile(SOURCE, device=dev, stub=True)
    except ql.CompileError as exc:   # no host compiler: the row says so
        stb = exc
    c = CBaseline(dev)
    timers = {n: _timers(mod, dbg, n, c, batch, stb) for n in (4, 16)}
    errors = {}
    for per_n in timers.values():
        for row, fn in list(per_n.items()):
            if isinstance(fn, Exception):
                errors[row] = f"{type(fn).__name__}: {fn}"
                del per_n[row]
    for per_n in timers.values():          # warm up every path once
        for fn in per_n.values():
            fn(max(iters // 10, 1))
    samples = {(n, row): [] for n in (4, 16) for row in ROWS if row in timers[n]}
    for rep in range(repeats):
        for (n, row), out in samples.items():
            out.append(timers[n][row](iters))
        if progress:
            progress(rep + 1, repeats, f"repeat {rep + 1} of {repeats}")
    rows: dict[str, dict[int, float]] = {}
    for (n, row), values in samples.items():
        rows.setdefault(row, {})[n] = statistics.median(values)
    result = {"device": dev.name, "iters": iters, "repeats": repeats, "rows": rows}
    if errors:
        result["errors"] = errors
    if batch:
        result["batch"] = batch
    return result


def table(result: dict) -> str:
    rows = result["rows"]
    base, floor = rows["C baseline"], rows["C-ext floor"]
    out = [f"launch overhead on {result['device']}: ns per launch, median of "
           f"{result['repeats']} x {result['iters']} launches",
           f"{'path':<13}{'4 params':>10}{'16 params':>11}{'- C (4)':>10}{'/ floor (4)':>13}"]
    for name in ("indexed", "configured", "direct", "graph replay", "C stub", "debug stub",
                 "C baseline", "C-ext floor", "python loop"):
        r = rows.get(name)
        if r is None:
            why = result.get("errors", {}).get(name, "not measured")
            out.append(f"{name:<13}{'—':>10}{'—':>11}  {why}")
            continue
        out.append(f"{name:<13}{r[4]:>10.1f}{r[16]:>11.1f}{r[4] - base[4]:>+10.1f}"
                   f"{r[4] / floor[4]:>12.2f}x")
    return "\n".join(out)


def main(argv=None, results_dir=None) -> int:
    """The command: prints the table; writes the result as JSON to --out
    (default: RESULTS_DIR/launch-<device>.json when a results folder is given,
    else nothing)."""
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.launch",
                                description="launch overhead: quicklaunch's paths beside a C "
                                            "loop on the same launch entry")
    p.add_argument("--device", default=None)
    p.add_argument("--iters", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", default=None, help="the JSON file")
    args = p.parse_args(argv)
    result = measure(args.device, iters=args.iters, repeats=args.repeats)
    result["machine"] = f"{platform.machine()}, {platform.processor() or 'cpu'}, " \
                        f"python {platform.python_version()}"
    print(table(result))
    save(result, args.out, results_dir, f"launch-{result['device']}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The launch-overhead benchmark: per-launch time of an empty kernel with 4
and with 16 parameters, through each quicklaunch path, side by side with a C
loop calling the same backend entry and with the floor of any C extension.

Rows (ns per launch, median of repeats):
  indexed      k[grid, block](*args)
  configured   run = k.configure(grid, block); run(*args)
  direct       k.launch(grid, block, *args)
  graph replay 100 configured launches recorded once (ql.graph), replayed with
               g.replay(); per kernel
  debug stub   a debug build's configured launch: a Python function named after
               the kernel, then the same C path
  C baseline   C loop calling the backend's launch entry, prebuilt parameters
  C-ext floor  a METH_FASTCALL function that takes the args and does nothing
  python loop  an empty Python for-loop step (included in every Python row)

On a GPU, ``measure(..., batch=256)`` times the launches in batches with an
untimed synchronisation between them (as the CUDA benchmark's rows do), so
the driver's queue never fills; by default nothing is synchronised while
timing.
"""
from __future__ import annotations

import ctypes
import statistics
import time

import numpy as np

import quicklaunch as ql

from . import _floor
from .harness.baseline import baseline_library

SOURCE = r"""
extern "C" __global__ void empty4(float a, const float *x, float *y, int n) {}
extern "C" __global__ void empty16(float a, const float *x, float *y, int n,
                                   float b, const float *u, float *v, int m,
                                   double c, const double *p, double *q, long long k,
                                   unsigned s, const int *r, int *t, unsigned long long w) {}
"""


def _args(n: int, dev=None):
    """The arguments, as arrays of the device's memory (NumPy on the CPU)."""
    def mem(a):
        return a if dev is None or dev.host_memory else ql.asarray(a, device=dev)
    x = mem(np.ones(16, np.float32))
    y = mem(np.zeros(16, np.float32))
    a4 = (2.0, x, y, 16)
    if n == 4:
        return a4
    d = np.ones(16, np.float64)
    i = np.ones(16, np.int32)
    return a4 + (1.5, x, y, 16, 0.5, mem(d), mem(d.copy()), 7, 3, mem(i), mem(i.copy()), 9)


def _c_params(kernel, args):
    """A prebuilt parameter block (void *[]) holding the same values."""
    holders, ptrs = [], []
    ctypes_of = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                 "int32": ctypes.c_int32, "int64": ctypes.c_int64,
                 "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64}
    for p, a in zip(kernel.params, args):
        if p.kind.endswith("pointer"):
            h = ctypes.c_void_p(a.ptr if isinstance(a, ql.Buffer) else a.ctypes.data)
        else:
            h = ctypes_of[p.kind](a)
        holders.append(h)
        ptrs.append(ctypes.addressof(h))
    block = (ctypes.c_void_p * len(ptrs))(*ptrs)
    return block, holders


ROWS = ("python loop", "C-ext floor", "C baseline", "indexed", "configured", "direct",
        "graph replay", "debug stub")
GRAPH_LAUNCHES = 100   # launches per recorded graph


def _timers(mod, dbg, n: int, lib, entry: int, batch: int | None = None) -> dict:
    """{row: fn(iters) -> ns per launch} for the kernel with n parameters; a
    row that cannot be set up maps to its exception instead."""
    k = mod.get_kernel(f"empty{n}")
    stub = dbg.get_kernel(f"empty{n}").configure(1, 1)
    dev = mod.device
    args = _args(n, dev)
    run = k.configure(1, 1)
    floor = _floor.nothing

    def loop_empty(it):
        for _ in range(it):
            pass

    if n == 4:  # spell the arguments out: that is how users call kernels
        a, x, y, m = args

        def loop_floor(it):
            for _ in range(it):
                floor(a, x, y, m)

        def loop_indexed(it):
            for _ in range(it):
                k[1, 1](a, x, y, m)

        def loop_configured(it):
            for _ in range(it):
                run(a, x, y, m)

        def loop_direct(it):
            for _ in range(it):
                k.launch(1, 1, a, x, y, m)

        def loop_debug(it):
            for _ in range(it):
                stub(a, x, y, m)
    else:
        a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w = args

        def loop_floor(it):
            for _ in range(it):
                floor(a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w)

        def loop_indexed(it):
            for _ in range(it):
                k[1, 1](a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w)

        def loop_configured(it):
            for _ in range(it):
                run(a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w)

        def loop_direct(it):
            for _ in range(it):
                k.launch(1, 1, a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w)

        def loop_debug(it):
            for _ in range(it):
                stub(a, x, y, m, b, u, v, mm, c, p, q, kk, s, r, t, w)

    block, holders = _c_params(k, args)

    def c_loop(it):
        del holders[:0]  # keeps the parameter values alive with the block
        return lib.ql_bench_launch_ns(entry, k._handle, block, 1, 1, it)

    def c_baseline(it):
        if not batch:
            return c_loop(it)
        dev.synchronize()
        total, left = 0.0, it
        while left > 0:
            m = min(batch, left)
            value = c_loop(m)
            if value < 0:
                return value
            total += value * m
            dev.synchronize()  # untimed: the queue never fills
            left -= m
        return total / it

    def timed(fn, per_call=1):
        """fn(calls) does calls x per_call launches; returns ns per launch."""
        def run_it(it):
            calls = max(1, it // per_call)
            dev.synchronize()  # a GPU's queue starts empty for every row
            if not batch:
                t0 = time.perf_counter_ns()
                fn(calls)
                return (time.perf_counter_ns() - t0) / (calls * per_call)
            total, left, step = 0, calls, max(1, batch // per_call)
            while left > 0:
                m = min(step, left)
                t0 = time.perf_counter_ns()
                fn(m)
                total += time.perf_counter_ns() - t0
                dev.synchronize()  # untimed: the queue never fills
                left -= m
            return total / (calls * per_call)
        return run_it

    timers = {"python loop": timed(loop_empty), "C-ext floor": timed(loop_floor),
              "C baseline": c_baseline, "indexed": timed(loop_indexed),
              "configured": timed(loop_configured), "direct": timed(loop_direct),
              "debug stub": timed(loop_debug)}
    try:
        with ql.graph(device=dev) as g:
            for _ in range(GRAPH_LAUNCHES):
                run(*args)

        def loop_replay(it, g=g):
            for _ in range(it):
                g.replay()

        timers["graph replay"] = timed(loop_replay, GRAPH_LAUNCHES)
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
    lib = baseline_library()
    if dev.kind == "cpu":
        from ..backends.cpu import runtime
        entry = runtime.launch_entry()
    else:  # the same C loop, calling cuLaunchKernel itself
        entry = dev.backend.driver.launch_address
    timers = {n: _timers(mod, dbg, n, lib, entry, batch) for n in (4, 16)}
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
            value = timers[n][row](iters)
            if value < 0:
                raise RuntimeError(f"the C baseline's launch failed with status {-value:.0f}")
            out.append(value)
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
    for name in ("indexed", "configured", "direct", "graph replay", "debug stub", "C baseline",
                 "C-ext floor", "python loop"):
        r = rows.get(name)
        if r is None:
            why = result.get("errors", {}).get(name, "not measured")
            out.append(f"{name:<13}{'—':>10}{'—':>11}  {why}")
            continue
        out.append(f"{name:<13}{r[4]:>10.1f}{r[16]:>11.1f}{r[4] - base[4]:>+10.1f}"
                   f"{r[4] / floor[4]:>12.2f}x")
    return "\n".join(out)

"""HIP launch overhead: quicklaunch's launch paths against a C loop calling
hipModuleLaunchKernel (the device's launch entry) with the same kernel
handle, and CuPy-ROCm and torch-ROCm when they are installed, in one run.

    python -m quicklaunch.bench.hip [--device hip:0] [--quick] [--out DIR]

Every row launches the same 4-parameter kernel (float, float *, float *,
int; n = 0, so it does no work) with grid 1 and block 32 on the null stream,
in batches whose launches are timed without the synchronisation between
them; a row reports the median and the best nanoseconds per launch over the
batches. Python rows spell their arguments out in a loop of their own, like
every launch benchmark (harness/timing.py); the C row is harness/baseline.c
on ``dev.backend.launch_entry``, with hipDeviceSynchronize from the runtime
library the backend launches through. torch has no user-kernel launch of
this shape: its row is ``x.add_(1)`` on 32 floats, the smallest launch it
makes, marked as such. Prints a Markdown table and writes
DIR/hip_results.json and DIR/hip_results.md. NEVER RUN ON HARDWARE YET
(benchmarks/hip_check.sh runs it; docs/hip-device.md says what is known).
Exit status 0 when the C baseline and quicklaunch's rows were measured.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from ..harness.baseline import CBaseline, c_params
from ..harness.facts import machine
from ..harness.results import write_json
from ..harness.timing import argenv, arglist, batched, spelled_loop

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
BLOCK = 32


def batches(timer, count: int, size: int) -> tuple[float, float]:
    """(median, best) ns per launch over ``count`` batches of ``size``
    launches, ``timer(size)`` timing one batch; one batch first, untimed."""
    timer(size)
    per = [timer(size) for _ in range(count)]
    return statistics.median(per), min(per)


def rows_for(dev, count: int, size: int) -> list[dict]:
    import numpy as np

    import quicklaunch as ql
    rows = []

    def add(name, fn, note=""):
        try:
            median, best = fn()
            rows.append({"name": name, "median_ns": round(median, 1), "best_ns": round(best, 1),
                         "note": note})
        except Exception as exc:   # a row that says why
            rows.append({"name": name, "median_ns": None, "best_ns": None,
                         "note": f"{type(exc).__name__}: {exc}"[:300]})

    def timed(statement, env, sync):
        return lambda: batches(batched(spelled_loop(statement, env), sync, size), count, size)

    k = ql.compile(SOURCE, device=dev).saxpy
    x, y = ql.zeros(32, device=dev), ql.zeros(32, device=dev)
    args = (2.0, x, y, 0)
    a = arglist(4)
    env = {"k": k, "run": k.configure(1, BLOCK), **argenv(args)}
    sync = dev.synchronize

    def c_row():
        c = CBaseline(dev, sync="hipDeviceSynchronize")
        block, holders = c_params(k, args)
        return batches(lambda n: c.launch_ns(k, block, n, n, 1, BLOCK), count, size)

    add("C: hipModuleLaunchKernel", c_row,
        "the backend's launch entry, called from C with a prebuilt void *params[]")
    add("Python: the timing loop alone", timed("pass", {}, sync),
        "the empty loop step every Python row below pays; not a launch")
    add(f"quicklaunch: run = k.configure(1, {BLOCK}); run(...)", timed(f"run({a})", env, sync))
    add(f"quicklaunch: k[1, {BLOCK}](...)", timed(f"k[1, {BLOCK}]({a})", env, sync))
    add(f"quicklaunch: k.launch(1, {BLOCK}, ...)", timed(f"k.launch(1, {BLOCK}, {a})", env, sync))
    try:
        import cupy
        rk = cupy.RawKernel(SOURCE, "saxpy")
        cx, cy = cupy.zeros(32, cupy.float32), cupy.zeros(32, cupy.float32)
        add(f"CuPy {cupy.__version__}: RawKernel",
            timed(f"rk((1,), ({BLOCK},), (a0, a1, a2, a3))",
                  {"rk": rk, **argenv((np.float32(2.0), cx, cy, np.int32(0)))},
                  cupy.cuda.runtime.deviceSynchronize))
    except ImportError:
        rows.append({"name": "CuPy", "median_ns": None, "best_ns": None,
                     "note": "not installed (cupy-rocm)"})
    try:
        import torch
        if torch.version.hip is None or not torch.cuda.is_available():
            raise ImportError("torch without ROCm")
        t = torch.zeros(32, device=f"cuda:{dev.ordinal}")
        add(f"torch {torch.__version__}: x.add_(1)",
            timed("t.add_(1)", {"t": t}, torch.cuda.synchronize),
            "torch's own elementwise kernel, not this one")
    except ImportError as exc:
        rows.append({"name": "torch", "median_ns": None, "best_ns": None,
                     "note": f"not usable: {exc}"})
    return rows


def table(rows: list[dict], dev) -> str:
    base = rows[0]["median_ns"] if rows and rows[0]["median_ns"] else None
    lines = [f"HIP launch overhead on {dev.description} (ns per launch)", "",
             "| launcher | median | best | above C | note |", "|---|---:|---:|---:|---|"]
    for r in rows:
        m = r["median_ns"]
        above = f"{m - base:+.0f}" if (m is not None and base) else ""
        lines.append(f"| {r['name']} | {m if m is not None else '-'} | "
                     f"{r['best_ns'] if r['best_ns'] is not None else '-'} | {above} | "
                     f"{r['note']} |")
    return "\n".join(lines) + "\n"


def main(argv=None, default_out=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m quicklaunch.bench.hip",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="hip:0")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(default_out or "hip-launch-results"),
                    help="directory for hip_results.json and hip_results.md")
    args = ap.parse_args(argv)
    import quicklaunch as ql
    dev = ql.device(args.device)
    count, size = (11, 200) if args.quick else (31, 1000)
    rows = rows_for(dev, count, size)
    text = table(rows, dev)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hip_results.md").write_text(text)
    write_json({"device": dev.description, "batches": count, "batch": size,
                "machine": machine(), "rows": rows}, out / "hip_results.json")
    measured = {r["name"].split(":")[0] for r in rows if r["median_ns"] is not None}
    measured.discard("Python")
    return 0 if {"C", "quicklaunch"} <= measured else 1


if __name__ == "__main__":
    sys.exit(main())

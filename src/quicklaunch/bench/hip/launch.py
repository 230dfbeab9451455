"""HIP launch overhead: quicklaunch's launch paths against a C loop calling
hipModuleLaunchKernel with the same kernel handle (hip_baseline.c), and
CuPy-ROCm and torch-ROCm when they are installed, in one run.

    python benchmarks/hip_launch.py [--device hip:0] [--quick] [--out DIR]

Every row launches the same empty-work 4-parameter kernel (float, float *,
float *, int) with grid 1 and block 32 on the null stream, in batches that
are timed without the synchronisation between them; a row reports the
median and the best nanoseconds per launch over the batches. torch has no
user-kernel launch of this shape: its row is ``x.add_(1)`` on 32 floats, the
smallest launch it makes, marked as such. Prints a Markdown table and
writes DIR/hip_results.json and DIR/hip_results.md. NEVER RUN ON HARDWARE
YET (benchmarks/hip_check.sh runs it; docs/hip-device.md says what is known).
Exit status 0 when the C baseline and quicklaunch's rows were measured.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def batches(launch, sync, count: int, size: int) -> tuple[float, float]:
    for _ in range(size):   # warm up
        launch()
    sync()
    per = []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        for _ in range(size):
            launch()
        per.append((time.perf_counter_ns() - t0) / size)
        sync()
    return statistics.median(per), min(per)


def c_baseline(dev, prog, count, size) -> tuple[float, float]:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler")
    with tempfile.TemporaryDirectory() as tmp:
        exe, co = Path(tmp) / "hip_baseline", Path(tmp) / "saxpy.co"
        subprocess.run([cc, "-O2", "-o", str(exe), str(Path(__file__).with_name("baseline.c")), "-ldl"],
                       check=True, capture_output=True, text=True)
        co.write_bytes(prog.code_object)
        out = subprocess.run([str(exe), dev.backend.runtime.path, str(co), "saxpy", str(count),
                              str(size), str(dev.ordinal)], capture_output=True, text=True,
                             timeout=300)
        if out.returncode:
            raise RuntimeError(out.stderr.strip() or f"exit {out.returncode}")
        median, best = out.stdout.split()
        return float(median), float(best)


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

    mod = ql.compile(SOURCE, device=dev)
    k = mod.saxpy
    x, y = ql.zeros(32, device=dev), ql.zeros(32, device=dev)
    sync = dev.synchronize
    add("C: hipModuleLaunchKernel", lambda: c_baseline(dev, mod._program, count, size))
    add("Python: the timing loop alone (a no-op lambda)",
        lambda: batches(lambda: None, lambda: None, count, size),
        "what every Python row below pays for the loop; not a launch")
    run = k.configure(1, 32)
    add("quicklaunch: run = k.configure(1, 32); run(...)",
        lambda: batches(lambda: run(2.0, x, y, 0), sync, count, size))
    add("quicklaunch: k[1, 32](...)", lambda: batches(lambda: k[1, 32](2.0, x, y, 0), sync,
                                                      count, size))
    add("quicklaunch: k.launch(1, 32, ...)",
        lambda: batches(lambda: k.launch(1, 32, 2.0, x, y, 0), sync, count, size))
    try:
        import cupy
        rk = cupy.RawKernel(SOURCE, "saxpy")
        cx, cy = cupy.zeros(32, cupy.float32), cupy.zeros(32, cupy.float32)
        a, n = np.float32(2.0), np.int32(0)
        add(f"CuPy {cupy.__version__}: RawKernel",
            lambda: batches(lambda: rk((1,), (32,), (a, cx, cy, n)),
                            cupy.cuda.runtime.deviceSynchronize, count, size))
    except ImportError:
        rows.append({"name": "CuPy", "median_ns": None, "best_ns": None,
                     "note": "not installed (cupy-rocm)"})
    try:
        import torch
        if torch.version.hip is None or not torch.cuda.is_available():
            raise ImportError("torch without ROCm")
        t = torch.zeros(32, device=f"cuda:{dev.ordinal}")
        add(f"torch {torch.__version__}: x.add_(1)",
            lambda: batches(lambda: t.add_(1), torch.cuda.synchronize, count, size),
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="hip:0")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "hip"))
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
    (out / "hip_results.json").write_text(json.dumps(
        {"device": dev.description, "batches": count, "batch": size, "rows": rows}, indent=1))
    measured = {r["name"].split(":")[0] for r in rows if r["median_ns"] is not None}
    measured.discard("Python")
    return 0 if {"C", "quicklaunch"} <= measured else 1


if __name__ == "__main__":
    sys.exit(main())

"""Compile time on the CPU device: a cold compile of a small kernel (saxpy:
tier 1) and of a small barrier kernel (a shared-memory block sum: the
fission pass too), with and without the shim's precompiled header, and a
cached load (``ql.compile`` of a module already in the compile cache, in a
process that has compiled before: what a program pays for each module after
its first).

    python benchmarks/compile_time.py [--runs 7]

Each cold compile is a source never compiled before (a comment makes it
new) in a process whose host compiler is already probed; "with the header"
runs after the flag set's header is in the cache, "without" sets
QUICKLAUNCH_CPU_PCH=0. Every figure is a median of --runs, the cached load
of 20 modules per run, in one process, with the rows interleaved.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAXPY = r"""
__global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
BLOCK_SUM = r"""
__global__ void block_sum(const float *x, float *out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "compile_time.json"))
    args = ap.parse_args()
    os.environ["QUICKLAUNCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="ql-compile-time-")
    import quicklaunch as ql
    from quicklaunch.backends.cpu import pch

    dev = ql.device("cpu")
    serial = iter(range(10**9))

    def fresh(src: str) -> str:
        return f"{src}// {next(serial)}\n"

    def cold(src: str, with_header: bool) -> float:
        if with_header:
            os.environ.pop(pch.ENV, None)
        else:
            os.environ[pch.ENV] = "0"
        t = time.perf_counter()
        ql.compile(fresh(src), device=dev)
        return time.perf_counter() - t

    for src in (SAXPY, BLOCK_SUM):    # probe the compiler; build both flag sets' headers
        ql.compile(fresh(src), device=dev)
        ql.compile(fresh(src), device=dev)   # the second compile starts the build
        pch.wait()
    os.environ.pop(pch.ENV, None)

    cached = [fresh(SAXPY) for _ in range(20)] + [fresh(BLOCK_SUM) for _ in range(20)]
    for src in cached:
        ql.compile(src, device=dev)

    times: dict[str, list[float]] = {}
    for _ in range(args.runs):
        for name, src in (("saxpy", SAXPY), ("block_sum", BLOCK_SUM)):
            for hdr in (True, False):
                times.setdefault(f"cold {name}, {'with' if hdr else 'without'} the header",
                                 []).append(cold(src, hdr))
    # the cached loads: a child process that compiled something first
    code = (
        "import json, sys, time, quicklaunch as ql\n"
        "srcs = json.loads(sys.stdin.read())\n"
        "ql.compile(srcs[0], device='cpu')\n"
        "out = []\n"
        "for s in srcs[1:]:\n"
        "    t = time.perf_counter()\n"
        "    ql.compile(s, device='cpu')\n"
        "    out.append(time.perf_counter() - t)\n"
        "print(json.dumps(out))\n")
    for name, group in (("saxpy", cached[:20]), ("block_sum", cached[20:])):
        runs = []
        for _ in range(args.runs):
            r = subprocess.run([sys.executable, "-c", code], input=json.dumps(group),
                               capture_output=True, text=True, check=True, env=os.environ)
            runs.append(statistics.median(json.loads(r.stdout)))
        times[f"cached load {name}"] = runs

    print(f"CPU compile time, median of {args.runs} (min-max), ms")
    result = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        result[name] = {"median_ms": round(med * 1e3, 1), "min_ms": round(min(ts) * 1e3, 1),
                        "max_ms": round(max(ts) * 1e3, 1)}
        print(f"  {name:<38} {med * 1e3:8.1f}  ({min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": args.runs, "rows": result}, indent=1) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()

"""What a bundle saves: the time from nothing to the first finished launch in
a fresh process, for a cold compile (empty compile cache), a compile-cache
hit, and loading a bundle (``ql.build`` made it beforehand; empty cache, no
compiler runs). Each run is a new Python process; the figures are medians.

    python benchmarks/bundle_load.py [--runs 7] [--devices cpu,cuda-fake]

cpu: the CPU device (g++ for the compile). cuda-fake: the CUDA device on the
fake driver of tests/cuda_fake (NVRTC really compiles; the driver's module
load and launch are the fake's, so the figures show quicklaunch's and
NVRTC's share, not a GPU's JIT or load time). Import time of quicklaunch is
measured apart and left out of the three figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = r"""
__global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

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
# The child: import quicklaunch (timed apart), then compile or load and run
# both kernels once, and print the two times as JSON.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import quicklaunch as ql
t1 = time.perf_counter()
mode, device, arg = sys.argv[1:4]
dev = ql.device(device)
t2 = time.perf_counter()
mod = ql.load(arg, device=dev) if mode == "bundle" else ql.compile(open(arg).read(), dev)
n = 4096
x = ql.asarray(np.ones(n, np.float32), device=dev)
y = ql.asarray(np.ones(n, np.float32), device=dev)
part = ql.empty(n // 256, np.float32, device=dev)
mod.saxpy[n // 256, 256](2.0, x, y, n)
mod.block_sum[n // 256, 256](y, part, n)
dev.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_launch_ms": (t3 - t2) * 1e3}))
"""
TARGETS = {"cpu": ["cpu"], "cuda-fake": ["sm_90", "compute_90"]}


def _fake_driver(tmp: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.cuda_fake.build import build_fake_libcuda
    return build_fake_libcuda(tmp / "fake")


def _child(mode: str, device: str, arg: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, device, arg], env=env,
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(device: str, runs: int, tmp: Path) -> dict:
    import quicklaunch as ql
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUICKLAUNCH_", "FAKE_"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    # bytecode cached (outside the tree), as in an installed package: the first
    # child run writes it, so imports are not compiled again in every run
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    ql_device = "cpu"
    if device == "cuda-fake":
        env["QUICKLAUNCH_LIBCUDA"] = str(_fake_driver(tmp))
        ql_device = "cuda"
    src = tmp / "kernels.cu"
    src.write_text(SOURCE)
    bundle = ql.build(SOURCE, TARGETS[device], tmp / f"{device}.qlb")
    warm = tmp / f"warm-{device}"
    warm.mkdir(mode=0o700)
    _child("compile", ql_device, str(src), dict(env, QUICKLAUNCH_CACHE_DIR=str(warm)))
    rows = {"cold compile": [], "cache hit": [], "bundle load": []}
    imports = []
    for r in range(runs):
        cold = tmp / f"cold-{device}-{r}"
        cold.mkdir(mode=0o700)
        fresh = tmp / f"fresh-{device}-{r}"
        fresh.mkdir(mode=0o700)
        for name, mode, arg, cache in (("cold compile", "compile", str(src), cold),
                                       ("cache hit", "compile", str(src), warm),
                                       ("bundle load", "bundle", str(bundle), fresh)):
            got = _child(mode, ql_device, arg, dict(env, QUICKLAUNCH_CACHE_DIR=str(cache)))
            rows[name].append(got["first_launch_ms"])
            imports.append(got["import_ms"])
        if any(p.is_file() for p in fresh.rglob("*")):
            raise RuntimeError("loading the bundle wrote to the compile cache: it compiled")
    return {"device": device, "runs": runs, "targets": TARGETS[device],
            "import_ms": statistics.median(imports),
            "rows": {k: {"median_ms": statistics.median(v), "min_ms": min(v),
                         "max_ms": max(v)} for k, v in rows.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--devices", default="cpu,cuda-fake")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="ql-bundle-bench-") as tmp:
        for device in args.devices.split(","):
            try:
                results.append(measure(device, args.runs, Path(tmp)))
            except Exception as exc:  # noqa: BLE001 - one device's failure is a row
                results.append({"device": device, "error": f"{type(exc).__name__}: {exc}"})
    print(f"{'device':<10} {'case':<13} {'median ms':>10} {'min':>8} {'max':>8}")
    for res in results:
        if "error" in res:
            print(f"{res['device']:<10} unavailable: {res['error']}")
            continue
        for case, row in res["rows"].items():
            print(f"{res['device']:<10} {case:<13} {row['median_ms']:>10.1f} "
                  f"{row['min_ms']:>8.1f} {row['max_ms']:>8.1f}")
        print(f"{res['device']:<10} (import quicklaunch: {res['import_ms']:.0f} ms, not "
              f"included; {res['runs']} runs, targets {','.join(res['targets'])})")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

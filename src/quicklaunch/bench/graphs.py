"""Graph replay against individual launches.

    python benchmarks/graphs.py [--device cpu] [--repeats 9] [--out FILE]

1. Launch cost per kernel: 100 launches of an empty 4-parameter kernel as
   individual configured launches, and the same 100 recorded once as a
   graph and replayed with one call (median of repeats, per kernel).
2. A time-stepping loop: 1000 steps of a 2D heat equation on 64x64 (one
   kernel per step, ping-pong buffers), eager against a graph of 100 steps
   replayed 10 times; both must end with the same field (checked).

Prints the table and writes benchmarks/results/graphs-<device>.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void empty4(float a, const float *x, float *y, int n) {}
extern "C" __global__ void heat(const float *u, float *v, int n, float k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x >= n || y >= n) return;
    int i = y * n + x;
    float c = u[i];
    float l = x > 0 ? u[i - 1] : c, r = x < n - 1 ? u[i + 1] : c;
    float d = y > 0 ? u[i - n] : c, t = y < n - 1 ? u[i + n] : c;
    v[i] = c + k * (l + r + d + t - 4 * c);
}
"""


def mem(a, dev):
    return a if dev.host_memory else ql.asarray(a, device=dev)


def launch_rows(mod, dev, repeats: int, batches: int = 200) -> dict:
    x, y = mem(np.ones(16, np.float32), dev), mem(np.zeros(16, np.float32), dev)
    run = mod.empty4.configure(1, 1)
    with ql.graph(device=dev) as g:
        for _ in range(100):
            run(2.0, x, y, 16)

    def individual():
        for _ in range(batches):
            for _ in range(100):
                run(2.0, x, y, 16)

    def replay():
        for _ in range(batches):
            g.replay()

    out = {"individual": [], "graph replay": []}
    for _ in range(repeats):
        for name, fn in (("individual", individual), ("graph replay", replay)):
            dev.synchronize()
            t0 = time.perf_counter_ns()
            fn()
            dev.synchronize()
            out[name].append((time.perf_counter_ns() - t0) / (batches * 100))
    return {k: statistics.median(v) for k, v in out.items()}


def heat_rows(mod, dev, repeats: int, n: int = 64, steps: int = 1000) -> dict:
    rng = np.random.default_rng(1)
    u0 = rng.random((n, n), dtype=np.float32)
    grid, block = ((n + 31) // 32, n), 32
    step = mod.heat.configure(grid, block)

    def eager():
        u, v = mem(u0.copy(), dev), mem(np.empty_like(u0), dev)
        for _ in range(steps):
            step(u, v, n, 0.2)
            u, v = v, u
        return u

    def graphed():
        u, v = mem(u0.copy(), dev), mem(np.empty_like(u0), dev)
        with ql.graph(device=dev) as g:
            a, b = u, v
            for _ in range(100):
                step(a, b, n, 0.2)
                a, b = b, a
        for _ in range(steps // 100):
            g.replay()
        return u

    ref = eager()
    got = graphed()
    same = np.array_equal(np.asarray(ref.numpy() if hasattr(ref, "numpy") else ref),
                          np.asarray(got.numpy() if hasattr(got, "numpy") else got))
    out = {"eager": [], "graph": []}
    for _ in range(repeats):
        for name, fn in (("eager", eager), ("graph", graphed)):
            dev.synchronize()
            t0 = time.perf_counter_ns()
            fn()
            dev.synchronize()
            out[name].append((time.perf_counter_ns() - t0) / 1e6)
    return {"same result": same, **{k: statistics.median(v) for k, v in out.items()}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", default=None, help="the JSON file (default: "
                   "benchmarks/results/graphs-<device>.json)")
    args = p.parse_args()
    dev = ql.device(args.device)
    mod = ql.compile(SOURCE, device=dev)
    launches = launch_rows(mod, dev, args.repeats)
    heat = heat_rows(mod, dev, args.repeats)
    ratio = launches["individual"] / launches["graph replay"]
    print(f"graphs on {dev.name}: median of {args.repeats}")
    print(f"  per kernel, 100 empty launches: individual {launches['individual']:.1f} ns, "
          f"graph replay {launches['graph replay']:.1f} ns ({ratio:.2f}x cheaper)")
    print(f"  heat 64x64, 1000 steps: eager {heat['eager']:.2f} ms, graph {heat['graph']:.2f} ms "
          f"({heat['eager'] / heat['graph']:.2f}x), same result: {heat['same result']}")
    result = {"device": dev.name, "repeats": args.repeats, "launch_ns_per_kernel": launches,
              "replay_speedup": ratio, "heat_ms": heat,
              "machine": f"{platform.machine()}, python {platform.python_version()}"}
    out = Path(args.out) if args.out else \
        Path(__file__).with_name("results") / f"graphs-{dev.name.replace(':', '')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

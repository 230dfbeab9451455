"""Graph replay against individual launches, on any device.

    python -m quicklaunch.bench.graphs [--device cpu] [--repeats 9] [--out FILE]

1. Launch cost per kernel: 100 launches of an empty 4-parameter kernel as
   individual configured launches, and the same 100 recorded once as a
   graph and replayed with one call (median of repeats, per kernel).
2. A time-stepping loop: 1000 steps of a 2D heat equation on 64x64 (one
   kernel per step, ping-pong buffers), eager against a graph of 100 steps
   replayed 10 times; both must end with the same field (checked).

Prints the table; writes the result as JSON to --out (benchmarks/graphs.py:
benchmarks/results/graphs-<device>.json).
"""
from __future__ import annotations

import argparse
import platform
import sys

import numpy as np

import quicklaunch as ql

from .harness.kernels import on_device as mem
from .harness.results import save
from .harness.timing import round_robin

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

    ns = round_robin({"individual": individual, "graph replay": replay}, repeats,
                     dev.synchronize)
    return {k: v / (batches * 100) for k, v in ns.items()}


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
    ms = round_robin({"eager": eager, "graph": graphed}, repeats, dev.synchronize)
    return {"same result": same, **{k: v / 1e6 for k, v in ms.items()}}


def main(argv=None, results_dir=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.graphs",
                                description="graph replay against individual launches")
    p.add_argument("--device", default=None)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--out", default=None, help="the JSON file (benchmarks/graphs.py: "
                   "benchmarks/results/graphs-<device>.json)")
    args = p.parse_args(argv)
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
    save(result, args.out, results_dir, f"graphs-{dev.name.replace(':', '')}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

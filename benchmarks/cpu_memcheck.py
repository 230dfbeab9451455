"""What the CPU memory checker costs: saxpy over 1e6 floats and a
shared-memory block reduction (tier 2: fibers, __syncthreads), each as a
release build, a debug build (-O0 -g, the Python stub) and a memcheck build
(debug + every load and store checked), median wall time per launch.

    python benchmarks/cpu_memcheck.py [--repeat 15] [--n 1000000]

Prints one row per kernel and build and the slowdown against release and
against debug. Run it on an idle machine: medians of launches that are
synchronous on the CPU device.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import quicklaunch as ql

SOURCE = r"""
__global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void reduce(const float *x, float *out, int n) {
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


def median_time(fn, repeat: int) -> float:
    fn()   # warm: arenas, fiber stacks, the worker pool
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--reduce-n", type=int, default=1 << 18,
                    help="elements of the reduction (fibers: 1 per element)")
    args = ap.parse_args()
    warnings.simplefilter("ignore", ql.LaunchWarning)
    builds = {"release": ql.compile(SOURCE, device="cpu"),
              "debug": ql.compile(SOURCE, device="cpu", debug=True),
              "memcheck": ql.compile(SOURCE, device="cpu", memcheck=True)}
    rng = np.random.default_rng(0)
    n, rn = args.n, args.reduce_n
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    rx = rng.random(rn, dtype=np.float32)
    rout = np.zeros((rn + 255) // 256, np.float32)
    rows = []
    for kernel in ("saxpy", "reduce"):
        t = {}
        for name, mod in builds.items():
            if kernel == "saxpy":
                run = mod.saxpy[(n + 255) // 256, 256]
                t[name] = median_time(lambda: run(2.0, x, y, n), args.repeat)
            else:
                run = mod.reduce[(rn + 255) // 256, 256]
                t[name] = median_time(lambda: run(rx, rout, rn), args.repeat)
        rows.append((kernel, t))
    print(f"{'kernel':<28}{'release':>12}{'debug':>12}{'memcheck':>12}"
          f"{'mc/release':>12}{'mc/debug':>10}")
    for kernel, t in rows:
        label = f"saxpy n={n}" if kernel == "saxpy" else f"reduce n={rn} (fibers)"
        print(f"{label:<28}{t['release'] * 1e3:>10.2f}ms{t['debug'] * 1e3:>10.2f}ms"
              f"{t['memcheck'] * 1e3:>10.2f}ms{t['memcheck'] / t['release']:>11.1f}x"
              f"{t['memcheck'] / t['debug']:>9.1f}x")


if __name__ == "__main__":
    main()

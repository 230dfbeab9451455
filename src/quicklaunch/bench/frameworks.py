"""``quicklaunch bench``'s frameworks section: the per-call cost of a small
kernel launched from a torch (and JAX) program, beside the same work done
by hand-written ``torch.library.custom_op`` and by plain torch operators.

    python -m quicklaunch.bench.frameworks [--device cpu] [--quick]

Rows (ns per call, median of ``repeats`` timings of ``iters`` calls each,
the rows interleaved round by round so that machine noise falls on all of
them alike): saxpy on 32 floats.

* ``numpy direct``: a configured launch with NumPy arrays (the reference),
* ``torch direct``: the same launch with torch tensors,
* ``ql.torch.launcher``: on torch's current stream, read per launch,
* ``ql.torch.op eager``: the op object called outside of tracing (launches
  directly), ``ql.torch.op torch.ops``: through torch's dispatcher,
* ``custom_op by hand``: ``torch.library.custom_op`` wrapping the launch,
* ``torch operators eager``: ``y.add_(x, alpha=a)``,
* ``compiled: ql.torch.op`` / ``compiled: torch operators``:
  ``torch.compile(fullgraph=True)`` of a function making that one call
  (left out with ``--quick``: its first compiles take about 10 s),
* ``jax.jit: ql.jax.op`` / ``jax.jit: jnp``: where JAX is installed.

Each missing framework is a row status that says why. Tests assert
behaviour, never these times.
"""
# (no `from __future__ import annotations`: custom_op reads the annotations)

import statistics
import time

TITLE = "Kernels inside torch and JAX programs (saxpy, 32 floats)"
N = 32
SOURCE = r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
'''


def _time(fn, iters: int) -> float:
    t = time.perf_counter_ns()
    for _ in range(iters):
        fn()
    return (time.perf_counter_ns() - t) / iters


def _torch_rows(dev, compiled: bool = True):
    import numpy as np
    import torch

    import quicklaunch as ql
    k = ql.compile(SOURCE, device=dev).saxpy
    run = k.configure(1, N)
    xn, yn = np.ones(N, np.float32), np.zeros(N, np.float32)
    tdev = "cpu" if dev.host_memory else f"cuda:{dev.ordinal}"
    x, y = torch.ones(N, device=tdev), torch.zeros(N, device=tdev)
    launch = ql.torch.launcher(k, 1, N)
    op = ql.torch.op(k, 1, N, name="bench_saxpy")
    overload = op.op

    @torch.library.custom_op("qlbench::saxpy_by_hand", mutates_args=("y",))
    def by_hand(a: float, x: torch.Tensor, y: torch.Tensor, n: int) -> None:
        run(a, x, y, n)

    @by_hand.register_fake
    def _(a, x, y, n):
        return None

    def with_op(x, y):
        op(1e-3, x, y, N)
        return y

    def with_torch(x, y):
        y.add_(x, alpha=1e-3)
        return y

    rows = {
        "numpy direct": lambda: run(1e-3, xn, yn, N),
        "torch direct": lambda: run(1e-3, x, y, N),
        "ql.torch.launcher": lambda: launch(1e-3, x, y, N),
        "ql.torch.op eager": lambda: op(1e-3, x, y, N),
        "ql.torch.op torch.ops": lambda: overload(1e-3, x, y, N),
        "custom_op by hand": lambda: by_hand(1e-3, x, y, N),
        "torch operators eager": lambda: y.add_(x, alpha=1e-3),
    }
    if compiled:
        c_op = torch.compile(with_op, fullgraph=True)
        c_torch = torch.compile(with_torch, fullgraph=True)
        c_op(x, y), c_torch(x, y)   # compile outside the timing
        rows["compiled: ql.torch.op"] = lambda: c_op(x, y)
        rows["compiled: torch operators"] = lambda: c_torch(x, y)
    return rows


def _jax_rows(dev):
    import jax
    import jax.numpy as jnp

    import quicklaunch as ql
    k = ql.compile(SOURCE, device=dev).saxpy
    op = ql.jax.op(k, 1, N)
    f_ql = jax.jit(lambda x, y: op(1e-3, x, y, N))
    f_jnp = jax.jit(lambda x, y: y + 1e-3 * x)
    x, y = jnp.ones(N, jnp.float32), jnp.zeros(N, jnp.float32)
    f_ql(x, y).block_until_ready(), f_jnp(x, y).block_until_ready()
    return {"jax.jit: ql.jax.op": lambda: f_ql(x, y).block_until_ready(),
            "jax.jit: jnp": lambda: f_jnp(x, y).block_until_ready()}


def section(device="cpu", quick: bool = False, only=None, repeats=None) -> dict:
    """The section's result: {"title", "status", "unit", "rows": {name:
    {"status", "median_ns", "ratio" (to torch direct), "runs"}}, "reasons"}."""
    import quicklaunch as ql
    from .harness.model import OK, SKIPPED
    dev = ql.device(device)
    fast_iters, slow_iters, rounds = (20_000, 2_000, 3) if quick else (200_000, 20_000, 5)
    repeats = repeats or rounds
    calls, reasons = {}, {}
    # --quick leaves out torch.compile: its first two compiles take ~10 s
    compiled = not quick or bool(only and any(n.startswith("compiled:") for n in only))
    if not compiled:
        reasons["torch.compile"] = ("left out with --quick (its first compiles take about "
                                    "10 s); the full run measures it")
    for name, rows in (("torch", lambda d: _torch_rows(d, compiled)), ("jax", _jax_rows)):
        if only and name == "jax":
            continue
        try:
            calls.update(rows(dev))
        except ImportError as exc:
            reasons[name] = f"{name} is not installed ({exc}): pip install '.[frameworks]'"
        except Exception as exc:  # noqa: BLE001 - e.g. a jaxlib without this device
            reasons[name] = f"{name} rows could not be set up: {type(exc).__name__}: {exc}"
    if only:
        calls = {n: f for n, f in calls.items() if n in only}
    runs = {name: [] for name in calls}
    fast = {"numpy direct", "torch direct", "ql.torch.launcher", "ql.torch.op eager"}
    for _ in range(repeats):                       # interleaved, round by round
        for name, fn in calls.items():
            runs[name].append(_time(fn, fast_iters if name in fast else slow_iters))
    dev.synchronize()
    base = statistics.median(runs["torch direct"]) if "torch direct" in runs else None
    rows = {}
    for name, r in runs.items():
        med = statistics.median(r)
        rows[name] = {"status": OK, "median_ns": round(med, 1),
                      "ratio": round(med / base, 2) if base else None,
                      "runs": [round(v, 1) for v in r]}
    for name, why in reasons.items():
        rows[f"{name} rows"] = {"status": SKIPPED, "reason": why}
    return {"title": TITLE, "status": OK if runs else SKIPPED, "unit": "ns per call",
            "device": dev.name, "iters": {"launch rows": fast_iters, "op rows": slow_iters},
            "repeats": repeats, "rows": rows}


def table(sec: dict) -> str:
    lines = [sec["title"] + f" on {sec.get('device', '?')}, {sec['unit']}",
             f"{'row':32} {'median':>10} {'x torch direct':>15}"]
    for name, r in sec["rows"].items():
        if r["status"] != "ok":
            lines.append(f"{name:32} {r['status']}: {r.get('reason', '')}")
        else:
            lines.append(f"{name:32} {r['median_ns']:10.0f} {r['ratio'] or 0:15.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--launch-only", action="store_true",
                   help="only 'numpy direct' and 'torch direct', 7 rounds")
    p.add_argument("--out", help="also write the section as JSON here")
    a = p.parse_args()
    only = {"numpy direct", "torch direct"} if a.launch_only else None
    sec = section(a.device, a.quick, only=only, repeats=7 if only else None)
    print(table(sec))
    if a.out:
        import json
        with open(a.out, "w") as f:
            json.dump(sec, f, indent=1)

"""quicklaunch's rows, the C baseline's and the reference rows.

QUICKLAUNCH times quicklaunch's three launch paths (indexed, configured,
direct), many launches in flight, launch + synchronise round trips and
synchronisation alone, and the same from C (harness/baseline.py: a C loop
on the device's launch entry, cuLaunchKernel, with cuCtxSynchronize from
the driver library the backend launches through) with the very kernel
handles quicklaunch launches. With ``ctx.check`` both first launch a kernel
that computes and compare its result. REFERENCE gives the floor every
Python launcher pays (no GPU): the empty loop step and a C-extension call
taking the arguments.
"""
from ..harness.baseline import CBaseline, c_params
from ..harness.kernels import bench_kernels, typed_args
from ..harness.model import INFLIGHT, LAUNCH, RowSpec, Skip, Source
from ..harness.timing import argenv, arglist, batched, in_flight, plain, spelled_loop

# A kernel that computes, to check that launches through quicklaunch and
# through the C baseline really run with the intended arguments.
CHECK_SOURCE = r"""
extern "C" __global__ void axpy4(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _setup_reference(ctx):
    """The empty Python loop step and the C-extension floor: what any Python
    launcher pays before doing anything (no GPU involved)."""
    from .. import _floor
    _, host, _ = bench_kernels()
    out = {"ref.floor": {}, "ref.loop": {}}
    for n in ctx.params:
        env = {"floor": _floor.nothing, **argenv(host[n])}
        out["ref.floor"][n] = plain(spelled_loop(f"floor({arglist(n)})", env))
        out["ref.loop"][n] = plain(spelled_loop("pass", {}))
    return out


def _setup_quicklaunch(ctx):
    import numpy as np

    import quicklaunch as ql
    source = bench_kernels()[0]
    dev = ql.device(ctx.device)
    if dev.kind != "cuda":
        raise Skip(f"quicklaunch device {dev.name} is not a CUDA GPU")
    mod = ql.compile(source, device=dev)
    sync = dev.synchronize
    if ctx.check:
        _check_quicklaunch(ql, np, dev)
        ctx.info["quicklaunch_result_check"] = "passed"
    out, kernels = {}, {}
    for n in ctx.params:
        k = mod.get_kernel(f"empty{n}")
        args = typed_args(n, lambda a: ql.empty(a.shape, a.dtype, device=dev), "python")
        run = k.configure(1, 1)
        env = {"k": k, "run": run, "sync": sync, **argenv(args)}
        a = arglist(n)
        out.setdefault("ql.indexed", {})[n] = batched(spelled_loop(f"k[1, 1]({a})", env), sync,
                                                      ctx.batch)
        out.setdefault("ql.configured", {})[n] = batched(spelled_loop(f"run({a})", env), sync,
                                                         ctx.batch)
        out.setdefault("ql.direct", {})[n] = batched(spelled_loop(f"k.launch(1, 1, {a})", env),
                                                     sync, ctx.batch)
        out.setdefault("ql.inflight", {})[n] = in_flight(spelled_loop(f"run({a})", env), sync)
        out.setdefault("ql.roundtrip", {})[n] = plain(spelled_loop(f"run({a}); sync()", env))
        out.setdefault("ql.sync", {})[n] = plain(spelled_loop("sync()", env))
        kernels[n] = (k, args)
    try:
        out.update(_c_timers(ctx, ql, np, dev, kernels, sync))
    except Exception as exc:   # the C rows fail alone; quicklaunch's still run
        for spec in QUICKLAUNCH.rows:
            if spec.id.startswith("c."):
                out[spec.id] = exc
    return out


def _check_quicklaunch(ql, np, dev):
    k = ql.compile(CHECK_SOURCE, device=dev).get_kernel("axpy4")
    x = ql.asarray(np.arange(64, dtype=np.float32), device=dev)
    y = ql.asarray(np.ones(64, np.float32), device=dev)
    k[2, 32](2.0, x, y, 64)
    dev.synchronize()
    want = 2 * np.arange(64, dtype=np.float32) + 1
    got = y.numpy()
    if not np.array_equal(got, want):
        raise RuntimeError(f"check kernel computed wrong values through quicklaunch: "
                           f"{got[:6]} ..., expected {want[:6]} ...")


def _c_timers(ctx, ql, np, dev, kernels, sync):
    c = CBaseline(dev, sync="cuCtxSynchronize")
    if ctx.check:
        k = ql.compile(CHECK_SOURCE, device=dev).get_kernel("axpy4")
        x = ql.asarray(np.arange(32, dtype=np.float32), device=dev)
        y = ql.asarray(np.ones(32, np.float32), device=dev)
        block, holders = c_params(k, (2.0, x, y, 32))
        sync()
        c.launch_once(k, block, 1, 32)
        sync()
        want = 2 * np.arange(32, dtype=np.float32) + 1
        if not np.array_equal(y.numpy(), want):
            raise RuntimeError("check kernel computed wrong values when launched from C: "
                               f"{y.numpy()[:6]} ..., expected {want[:6]} ...")
        ctx.info["c_baseline_result_check"] = "passed"

    # sync() first: quicklaunch makes its context current on this thread if
    # another library left a different one current; C relies on that.
    def timer(measure):
        def run(it):
            sync()
            return measure(it)
        return run

    out = {"c.launch": {}, "c.inflight": {}, "c.roundtrip": {}, "c.sync": {}}
    for n, (k, args) in kernels.items():
        p = c_params(k, args)     # (block, the values it points to): held by the timers
        out["c.launch"][n] = timer(lambda it, k=k, p=p: c.launch_ns(k, p[0], it, ctx.batch))
        out["c.inflight"][n] = timer(lambda it, k=k, p=p: c.inflight_ns(k, p[0], it))
        out["c.roundtrip"][n] = timer(lambda it, k=k, p=p: c.roundtrip_ns(k, p[0], it))
        out["c.sync"][n] = timer(c.sync_ns)
    return out


QUICKLAUNCH = Source("quicklaunch", (
    RowSpec("ql.indexed", "quicklaunch indexed", LAUNCH, "k[1, 1](a, x, y, n)"),
    RowSpec("ql.configured", "quicklaunch configured", LAUNCH,
            "run = k.configure(1, 1) once; run(a, x, y, n)"),
    RowSpec("ql.direct", "quicklaunch direct", LAUNCH, "k.launch(1, 1, a, x, y, n)"),
    RowSpec("c.launch", "C baseline", LAUNCH,
            "C loop calling cuLaunchKernel (the backend's launch entry) with a prebuilt "
            "void *params[] (harness/baseline.c)"),
    RowSpec("ql.inflight", "quicklaunch configured, many in flight", INFLIGHT,
            "launches back to back, then one cuCtxSynchronize, all timed"),
    RowSpec("c.inflight", "C baseline, many in flight", INFLIGHT,
            "the same from C"),
    RowSpec("ql.roundtrip", "quicklaunch configured, launch + sync", INFLIGHT,
            "run(...) then dev.synchronize(), each launch"),
    RowSpec("c.roundtrip", "C baseline, launch + sync", INFLIGHT,
            "cuLaunchKernel then cuCtxSynchronize, each launch"),
    RowSpec("ql.sync", "quicklaunch dev.synchronize() alone", INFLIGHT,
            "nothing queued (the same call in both columns)"),
    RowSpec("c.sync", "C cuCtxSynchronize alone", INFLIGHT,
            "nothing queued: the floor of the round trip (the same call in both columns)"),
), _setup_quicklaunch, ("quicklaunch", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"))

REFERENCE = Source("reference", (
    RowSpec("ref.floor", "C-ext floor", LAUNCH,
            "a METH_FASTCALL function taking the arguments and doing nothing (no GPU)"),
    RowSpec("ref.loop", "python loop", LAUNCH, "the empty for-loop step every Python row pays"),
), _setup_reference)

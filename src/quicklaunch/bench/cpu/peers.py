"""The CPU peers of ``quicklaunch bench``: libraries that launch a kernel (or
call a compiled function) on the CPU, timed like quicklaunch's rows.

Each is a Source of the CUDA benchmark's vocabulary (gpu_model.py), so the
same machinery sets it up, measures it and turns anything missing or failing
into rows that say why: ``quicklaunch bench`` measures each in its own child
process (gpu_run.run(..., isolated=True)), where a crash costs that peer's
rows only and no peer's threads compete with another's.

    NVIDIA Warp     wp.launch(k, dim=1, inputs=[...], device="cpu"), and a
                    launch recorded once (record_cmd=True) replayed with .launch()
    Numba           an @njit call of an empty function with the same arguments,
                    and @njit(parallel=True) running a prange loop of 1
    PyOpenCL/PoCL   k(queue, (1,), (1,), ...) host cost (no wait), the same with
                    .wait() on each launch, and the enqueue of a kernel whose
                    arguments were set once
    (peers_cpu_interp.py) Numba's CUDA simulator and Triton's interpreter

The kernels have the parameters of quicklaunch.bench.launch.SOURCE (4 and 16);
arguments are spelled out in each call, as users write them. No library is
imported until its setup runs. No ``from __future__ import annotations``:
Warp reads the kernels' parameter annotations as objects.
"""
from ..harness.kernels import bench_kernels, need, typed_args
from ..harness.model import LAUNCH, RowSpec, Skip, Source
from ..harness.timing import argenv, arglist, batched, plain, spelled_loop
from .peers_interp import INTERPRETERS

SAMPLE_NS = 25e6   # a sample of a slow peer stops after about this many ns


def capped(timer):
    """Wraps ``timer(iters) -> ns per launch`` so that a sample takes about
    SAMPLE_NS at most: the first call runs one untimed launch (first-use
    costs: compiling, loading) and estimates the cost from a few; every call
    then runs min(iters, what fits in SAMPLE_NS) launches. The figure is still
    ns per launch, so slow peers (ms per launch) fit the run's time."""
    est = []

    def run(iters: int) -> float:
        if not est:
            timer(1)
            est.append(timer(min(iters, 8)))
        n = max(1, min(iters, int(SAMPLE_NS / max(est[-1], 1.0))))
        value = timer(n)
        est.append(value)
        return value
    return run


def _cpu_only(ctx):
    if str(ctx.device).split(":")[0] != "cpu":
        raise Skip(f"a CPU peer; the bench device is {ctx.device}")


# --------------------------------------------------------------------- Warp
def _warp_kernels(wp):
    def empty4(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
               n: int):
        pass

    def empty16(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                n: int, b: float, u: wp.array(dtype=wp.float32), v: wp.array(dtype=wp.float32),
                m: int, c: wp.float64, p: wp.array(dtype=wp.float64),
                q: wp.array(dtype=wp.float64), k: wp.int64, s: wp.uint32,
                r: wp.array(dtype=wp.int32), t: wp.array(dtype=wp.int32), w: wp.uint64):
        pass

    out = {}
    for n, fn in ((4, empty4), (16, empty16)):
        try:
            out[n] = wp.kernel(fn, module="unique")
        except TypeError:                   # releases without per-kernel modules
            out[n] = wp.kernel(fn)
    return out


def _setup_warp(ctx):
    _cpu_only(ctx)
    wp = need("warp", "warp-lang")
    try:
        wp.config.quiet = True
    except AttributeError:
        pass
    wp.init()
    device = wp.get_device("cpu")
    kernels = _warp_kernels(wp)
    dtypes = {"float32": wp.float32, "float64": wp.float64, "int32": wp.int32}
    out = {"warp_cpu.launch": {}, "warp_cpu.recorded": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: wp.zeros(a.shape, dtype=dtypes[str(a.dtype)],
                                                device=device), "python")
        cmd = wp.launch(kern, dim=1, inputs=list(args), device=device, record_cmd=True)
        env = {"wp": wp, "kern": kern, "device": device, "cmd": cmd, **argenv(args)}
        out["warp_cpu.launch"][n] = capped(plain(spelled_loop(
            f"wp.launch(kern, dim=1, inputs=[{arglist(n)}], device=device)", env)))
        out["warp_cpu.recorded"][n] = capped(plain(spelled_loop("cmd.launch()", env)))
    return out


# -------------------------------------------------------------------- Numba
def _setup_numba(ctx):
    _cpu_only(ctx)
    numba = need("numba", "numba")
    if getattr(getattr(numba, "config", None), "ENABLE_CUDASIM", 0):
        raise Skip("NUMBA_ENABLE_CUDASIM is set in this process")
    njit, prange = numba.njit, numba.prange

    @njit
    def empty4(a, x, y, n):
        pass

    @njit
    def empty16(a, x, y, n, b, u, v, m, c, p, q, k, s, r, t, w):
        pass

    # An empty prange body is dropped by Numba's parfor pass (no parallel
    # region is run at all), so each body stores one float: y[i] = a.
    @njit(parallel=True)
    def par4(a, x, y, n):
        for i in prange(1):
            y[i] = a

    @njit(parallel=True)
    def par16(a, x, y, n, b, u, v, m, c, p, q, k, s, r, t, w):
        for i in prange(1):
            y[i] = a

    fns = {"numba.njit": {4: empty4, 16: empty16}, "numba.parallel": {4: par4, 16: par16}}
    _, host, _ = bench_kernels()
    out = {}
    for row, by_n in fns.items():
        out[row] = {}
        for n in ctx.params:
            env = {"f": by_n[n], **argenv(host[n])}
            timer = plain(spelled_loop(f"f({arglist(n)})", env))
            timer(1)                                   # compiles here, not in a sample
            out[row][n] = capped(timer)
    try:
        ctx.info["numba_threading_layer"] = numba.threading_layer()
    except Exception:  # noqa: BLE001 - only known after a parallel call
        pass
    return out


# ---------------------------------------------------------- PyOpenCL on PoCL
CL_SOURCE = r"""
__kernel void empty4(float a, __global const float *x, __global float *y, int n) {}
__kernel void empty16(float a, __global const float *x, __global float *y, int n,
                      float b, __global const float *u, __global float *v, int m,
                      double c, __global const double *p, __global double *q, long k,
                      uint s, __global const int *r, __global int *t, ulong w) {}
"""


def _cl_device(cl):
    """PoCL's CPU device if there is one, else the first CPU device of any
    platform: (context, description)."""
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        raise Skip(f"no OpenCL platform (install pocl-binary-distribution): {exc}") from None
    found = []
    for p in platforms:
        try:
            devices = p.get_devices(device_type=cl.device_type.CPU)
        except cl.Error:
            continue
        found += [(("Portable Computing Language" not in p.name), p, d) for d in devices]
    if not found:
        raise Skip("no OpenCL CPU device (install pocl-binary-distribution)")
    _, platform, dev = min(found, key=lambda t: t[0])
    return cl.Context(devices=[dev]), f"{platform.name} {platform.version}: {dev.name}"


def _setup_opencl(ctx):
    _cpu_only(ctx)
    import numpy as np
    cl = need("pyopencl", "pyopencl")
    context, where = _cl_device(cl)
    ctx.info["opencl_device"] = where
    queue = cl.CommandQueue(context)
    prg = cl.Program(context, CL_SOURCE).build()
    kinds = bench_kernels()[2]
    out = {"opencl.enqueue": {}, "opencl.wait": {}, "opencl.prebound": {}}
    for n in ctx.params:
        kern = getattr(prg, f"empty{n}")      # held: its scalar types are set on it
        kern.set_scalar_arg_dtypes([getattr(np, k) if k else None for k in kinds[n]])
        args = typed_args(n, lambda a: cl.Buffer(context, cl.mem_flags.READ_WRITE,
                                                 max(a.nbytes, 1)), "python")
        env = {"kern": kern, "queue": queue, "cl": cl, **argenv(args)}
        call = f"kern(queue, (1,), (1,), {arglist(n)})"
        out["opencl.enqueue"][n] = capped(batched(spelled_loop(call, env), queue.finish,
                                                  ctx.batch))
        out["opencl.wait"][n] = capped(plain(spelled_loop(f"{call}.wait()", env)))
        # the arguments set once (as converted by the call above), then enqueued
        kern(queue, (1,), (1,), *args).wait()
        pre = cl.Kernel(prg, f"empty{n}")
        pre.set_args(*[getattr(np, k)(v) if k else v for k, v in zip(kinds[n], args)])
        env_pre = {"enqueue": cl.enqueue_nd_range_kernel, "queue": queue, "pre": pre}
        out["opencl.prebound"][n] = capped(batched(
            spelled_loop("enqueue(queue, pre, (1,), (1,))", env_pre), queue.finish, ctx.batch))
    queue.finish()
    return out


SOURCES = [
    Source("warp", (
        RowSpec("warp_cpu.launch", "Warp wp.launch (cpu)", LAUNCH,
                "wp.launch(k, dim=1, inputs=[...], device='cpu'); wp.arrays, Python scalars"),
        RowSpec("warp_cpu.recorded", "Warp recorded Launch.launch() (cpu)", LAUNCH,
                "wp.launch(..., record_cmd=True) once, then .launch(): fixed arguments")),
        _setup_warp, ("warp-lang",)),
    Source("numba", (
        RowSpec("numba.njit", "Numba @njit call", LAUNCH,
                "an empty @njit function called with the same arguments (type dispatch "
                "on every call); not a kernel launch: the floor of a compiled call"),
        RowSpec("numba.parallel", "Numba @njit(parallel=True), prange(1)", LAUNCH,
                "a prange loop of 1 storing y[0] = a (an empty body is dropped by Numba "
                "and runs no parallel region); Numba's threading layer")),
        _setup_numba, ("numba", "llvmlite")),
    Source("pyopencl", (
        RowSpec("opencl.enqueue", "PyOpenCL k(queue, ...) enqueue, no wait", LAUNCH,
                "host cost of the call (set arguments + clEnqueueNDRangeKernel), batches of "
                "256 with an untimed queue.finish() between; PoCL's threads run the "
                "kernels meanwhile"),
        RowSpec("opencl.wait", "PyOpenCL k(queue, ...).wait()", LAUNCH,
                "enqueue, then wait for the kernel's event, each launch: the round trip "
                "through PoCL's scheduler"),
        RowSpec("opencl.prebound", "PyOpenCL enqueue_nd_range_kernel, args set once",
                LAUNCH, "kernel.set_args(...) once, then cl.enqueue_nd_range_kernel; "
                "batches of 256, untimed queue.finish() between")),
        _setup_opencl, ("pyopencl", "pocl-binary-distribution")),
    *INTERPRETERS,
]

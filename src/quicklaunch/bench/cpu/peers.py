"""The CPU peers of ``quicklaunch bench``: libraries that launch a kernel (or
call a compiled function) on the CPU, timed like quicklaunch's rows.

Each is a Source of the launch benchmarks' vocabulary (harness/model.py),
so the same machinery sets it up, measures it and turns anything missing or
failing into rows that say why: ``quicklaunch bench`` measures each in its
own child process (harness/run.py, ``run(..., isolated=True)``), where a
crash costs that peer's rows only and no peer's threads compete with
another's.

    NVIDIA Warp     wp.launch(k, dim=1, inputs=[...], device="cpu"), and a
                    launch recorded once (record_cmd=True) replayed with .launch()
    Numba           an @njit call of an empty function with the same arguments,
                    and @njit(parallel=True) running a prange loop of 1
    PyOpenCL/PoCL   k(queue, (1,), (1,), ...) host cost (no wait), the same with
                    .wait() on each launch, and the enqueue of a kernel whose
                    arguments were set once
    (peers_interp.py) Numba's CUDA simulator and Triton's interpreter

The kernels are those of every launch benchmark (harness/kernels.py: 4 and
16 parameters); arguments are spelled out in each call, as users write them.
Each sample is capped at about 25 ms (harness/timing.py, ``capped``). No
library is imported until its setup runs.
"""
from ..harness.kernels import (
    bench_kernels,
    need,
    python_kernels,
    typed_args,
    warp_kernels,
    warp_loops,
    warp_start,
)
from ..harness.model import LAUNCH, RowSpec, Skip, Source, only_on
from ..harness.timing import argenv, arglist, batched, capped, plain, spelled_loop
from .peers_interp import INTERPRETERS


# --------------------------------------------------------------------- Warp
def _setup_warp(ctx):
    only_on(ctx, "cpu")
    wp = warp_start()
    device = wp.get_device("cpu")
    kernels = warp_kernels(wp)
    out = {"warp_cpu.launch": {}, "warp_cpu.recorded": {}}
    for n in ctx.params:
        loops = warp_loops(wp, kernels[n], n, device, wp.zeros)
        out["warp_cpu.launch"][n] = capped(plain(loops["launch"]))
        out["warp_cpu.recorded"][n] = capped(plain(loops["recorded"]))
    return out


# -------------------------------------------------------------------- Numba
def _setup_numba(ctx):
    only_on(ctx, "cpu")
    numba = need("numba", "numba")
    if getattr(getattr(numba, "config", None), "ENABLE_CUDASIM", 0):
        raise Skip("NUMBA_ENABLE_CUDASIM is set in this process")
    njit, prange = numba.njit, numba.prange

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

    fns = {"numba.njit": python_kernels(njit), "numba.parallel": {4: par4, 16: par16}}
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
    only_on(ctx, "cpu")
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

"""The peers whose kernels are written in Python: Numba-CUDA, Triton, Warp.

Each gets the benchmark's two empty kernels (4 and 16 parameters, the
types of harness/kernels.py's SOURCE) through its own decorator and
launches them through its documented, everyday path (Triton and Warp pick
their own block size). Each setup runs only when its package imports;
anything missing or failing becomes the row's reason.
"""
import functools
import os

from ..harness.kernels import (
    need,
    ordinal,
    python_kernels,
    typed_args,
    warp_kernels,
    warp_loops,
    warp_start,
)
from ..harness.model import LAUNCH, RowSpec, Skip, Source
from ..harness.timing import argenv, arglist, batched, spelled_loop


def _setup_numba(ctx):
    # Numba-CUDA warns on every launch of fewer than 128 blocks; the warning
    # machinery would be timed with each launch. Off (read when numba is
    # first imported, and set again below), and said so in the note.
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    numba = need("numba", "numba-cuda")
    cuda = need("numba.cuda", "numba-cuda")
    try:
        numba.config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    except AttributeError:
        pass
    if not cuda.is_available():
        raise Skip("numba.cuda.is_available() is False (no GPU or no usable driver/NVVM "
                   "for Numba)")
    cuda.select_device(ordinal(ctx.device))
    kernels = python_kernels(cuda.jit)
    out = {"numba.indexed": {}, "numba.configured": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: cuda.device_array(a.shape, a.dtype), "python")
        env = {"kern": kern, "cfg": kern[1, 1], **argenv(args)}
        out["numba.indexed"][n] = batched(spelled_loop(f"kern[1, 1]({arglist(n)})", env),
                                          cuda.synchronize, ctx.batch)
        out["numba.configured"][n] = batched(spelled_loop(f"cfg({arglist(n)})", env),
                                             cuda.synchronize, ctx.batch)
    return out


def _setup_triton(ctx):
    torch = need("torch", "torch (Triton's launches take torch tensors)")
    triton = need("triton", "triton")
    if not torch.cuda.is_available():
        raise Skip("torch.cuda.is_available() is False, and Triton launches through torch's "
                   "CUDA device")
    dev = torch.device("cuda", ordinal(ctx.device))
    torch.cuda.set_device(dev)
    kernels = python_kernels(triton.jit)
    dtypes = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32}
    out = {"triton.launch": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: torch.empty(a.shape, dtype=dtypes[str(a.dtype)],
                                                   device=dev), "python")
        loop = spelled_loop(f"kern[(1,)]({arglist(n)})", {"kern": kern, **argenv(args)})
        out["triton.launch"][n] = batched(loop, torch.cuda.synchronize, ctx.batch)
    return out


def _setup_warp(ctx):
    wp = warp_start()
    if not wp.is_cuda_available():
        raise Skip("warp.is_cuda_available() is False")
    device = wp.get_device(f"cuda:{ordinal(ctx.device)}")
    kernels = warp_kernels(wp)
    sync = functools.partial(wp.synchronize_device, device)
    out = {"warp.launch": {}, "warp.recorded": {}}
    for n in ctx.params:
        loops = warp_loops(wp, kernels[n], n, device, wp.empty)
        out["warp.launch"][n] = batched(loops["launch"], sync, ctx.batch)
        out["warp.recorded"][n] = batched(loops["recorded"], sync, ctx.batch)
    return out


JIT_PEERS = [
    Source("numba", (
        RowSpec("numba.indexed", "Numba-CUDA k[1, 1](...)", LAUNCH,
                "@cuda.jit; type dispatch on every call; device arrays; low-occupancy "
                "warnings off (NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0)"),
        RowSpec("numba.configured", "Numba-CUDA cfg = k[1, 1] once", LAUNCH,
                "the launch configuration bound once, then cfg(a, x, y, n)")),
        _setup_numba, ("numba-cuda", "numba", "llvmlite")),
    Source("triton", (RowSpec(
        "triton.launch", "Triton k[(1,)](...)", LAUNCH,
        "@triton.jit, the normal launch path (binder, specialisation key, launcher); "
        "torch tensors; 4 warps per block"),),
        _setup_triton, ("triton", "torch")),
    Source("warp", (
        RowSpec("warp.launch", "Warp wp.launch", LAUNCH,
                "wp.launch(k, dim=1, inputs=[...]); wp.arrays; Warp's block of 256"),
        RowSpec("warp.recorded", "Warp recorded Launch.launch()", LAUNCH,
                "wp.launch(..., record_cmd=True) once, then replayed: fixed arguments, "
                "like the C baseline's prebuilt block")),
        _setup_warp, ("warp-lang",)),
]

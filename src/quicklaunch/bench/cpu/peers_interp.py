"""CPU peers that interpret CUDA-style kernels in Python: Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) and Triton's interpreter
(``TRITON_INTERPRET=1``).

Both switches are read when the library is first imported, so each setup
sets its variable and then imports: it must run in a fresh process, as
``quicklaunch bench`` runs every CPU peer (peers.py). A process that
imported the library already gets a row saying so, not a wrong figure.
"""
import os
import sys

from ..harness.kernels import need, python_kernels, typed_args
from ..harness.model import LAUNCH, RowSpec, Skip, Source, only_on
from ..harness.timing import argenv, arglist, capped, plain, spelled_loop


def _fresh(module: str, variable: str) -> None:
    if module in sys.modules and os.environ.get(variable) != "1":
        raise RuntimeError(f"{module} was imported in this process before {variable}=1 "
                           f"could be set; this row runs in a child process of its own")
    os.environ[variable] = "1"


def _setup_cudasim(ctx):
    only_on(ctx, "cpu")
    _fresh("numba", "NUMBA_ENABLE_CUDASIM")
    numba = need("numba", "numba")
    cuda = need("numba.cuda", "numba")
    if not getattr(numba.config, "ENABLE_CUDASIM", 0):
        raise RuntimeError("numba.config.ENABLE_CUDASIM is off although "
                           "NUMBA_ENABLE_CUDASIM=1 was set before importing numba")
    kernels = python_kernels(cuda.jit)
    out = {"cudasim.launch": {}}
    for n in ctx.params:
        args = typed_args(n, cuda.to_device, "python")
        env = {"kern": kernels[n], **argenv(args)}
        out["cudasim.launch"][n] = capped(plain(spelled_loop(f"kern[1, 1]({arglist(n)})",
                                                             env)))
    return out


def _setup_triton_interpreter(ctx):
    only_on(ctx, "cpu")
    _fresh("triton", "TRITON_INTERPRET")
    triton = need("triton", "triton")
    try:
        import torch
    except ImportError:
        torch = None
    kernels = python_kernels(triton.jit)
    if type(kernels[4]).__name__ != "InterpretedFunction":
        raise Skip(f"triton.jit gave a {type(kernels[4]).__name__}, not the interpreter's "
                   f"InterpretedFunction, with TRITON_INTERPRET=1 (triton "
                   f"{getattr(triton, '__version__', '?')})")
    if torch is not None:
        ctx.info["triton_interpreter_arrays"] = "torch CPU tensors"

        def make(a):
            return torch.from_numpy(a.copy())
    else:
        ctx.info["triton_interpreter_arrays"] = (
            "NumPy arrays in the pointer slots (torch is not installed; the empty kernel "
            "never reads them)")

        def make(a):
            return a.copy()
    out = {"triton_interp.launch": {}}
    for n in ctx.params:
        args = typed_args(n, make, "python")
        env = {"kern": kernels[n], **argenv(args)}
        out["triton_interp.launch"][n] = capped(plain(spelled_loop(
            f"kern[(1,)]({arglist(n)})", env)))
    return out


INTERPRETERS = [
    Source("numba-cudasim", (RowSpec(
        "cudasim.launch", "Numba CUDA simulator k[1, 1](...)", LAUNCH,
        "NUMBA_ENABLE_CUDASIM=1 in a child process; @cuda.jit kernel, cuda.to_device "
        "arrays; each CUDA thread runs as a Python thread"),),
        _setup_cudasim, ("numba",)),
    Source("triton-interpreter", (RowSpec(
        "triton_interp.launch", "Triton interpreter k[(1,)](...)", LAUNCH,
        "TRITON_INTERPRET=1 in a child process; @triton.jit kernel run by Triton's "
        "NumPy interpreter; pointer arguments are torch CPU tensors where torch is "
        "installed, else NumPy arrays the empty kernel never reads (see checks)"),),
        _setup_triton_interpreter, ("triton", "torch")),
]

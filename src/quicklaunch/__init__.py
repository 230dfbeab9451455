"""quicklaunch: compile CUDA C++ kernels and launch them with the lowest host
overhead CPython allows, on GPUs and on the CPU, from the same source."""
from __future__ import annotations

from . import _launch
from .devices import Device, default_device, device
from .errors import (CacheError, CompileError, CompileLogWarning, CompileWarning, CudaError,
                     DeviceError,
                     LaunchError, LaunchOverflowError, LaunchTypeError, LaunchValueError,
                     QuicklaunchError)
from .memory import Buffer, asarray, empty, zeros
from .elements import reinterpret
from .module import Kernel, KernelNotFoundError, Module, Param, compile
from .debug import LaunchWarning
from .trace import trace
from .streams import Event, Stream
from .graphs import Graph, graph
from .textures import Texture   # texture objects (docs/textures.md)
from .loading import load   # also makes Module, Kernel and k[grid, block] picklable
from .bundles import BundleError, build   # ql.build: bundles (ql.load loads them)

_launch._register_errors(LaunchError, LaunchTypeError, LaunchValueError, LaunchOverflowError)
from .trace import _from_environment  # noqa: E402
from . import env as _env  # noqa: E402

_env.check()   # a bad value of a variable quicklaunch reads is an error here, naming it
# pdb's `break mod.saxpy` reads the kernel's __code__ (quicklaunch.debug.kernel_code)
from .module import DebugKernel as _DebugKernel  # noqa: E402
from .debug import kernel_code as _kernel_code  # noqa: E402

_DebugKernel.__code__ = property(_kernel_code, doc=_kernel_code.__doc__)
_from_environment()
Launcher = _launch.Launcher

__version__ = "0.1.0"


def __getattr__(name: str):
    """``ql.cuda`` and ``ql.hip`` (offline compilers) import on first use,
    so ``import quicklaunch`` loads no backend."""
    if name in ("cuda", "hip"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("torch", "jax"):  # ql.torch, ql.jax: framework integrations
        import importlib
        return importlib.import_module(f"{__name__}.frameworks.{name}")
    raise AttributeError(f"module 'quicklaunch' has no attribute {name!r}")

__all__ = [
    "compile", "Module", "Kernel", "Launcher", "Param", "device", "default_device", "Device",
    "Buffer", "empty", "zeros", "asarray", "reinterpret", "QuicklaunchError", "CompileError",
    "CompileWarning", "LaunchError",
    "LaunchTypeError", "LaunchValueError", "LaunchOverflowError", "CacheError",
    "DeviceError", "CudaError", "KernelNotFoundError", "LaunchWarning", "trace",
    "Stream", "Event", "graph", "Graph", "__version__",
    "cuda", "hip", "load", "CompileLogWarning", "build", "BundleError", "Texture",
]

"""Kernels that leave the process: pickling (and, below, loading binaries).

Pickle
------
A ``Module`` pickles as *how to make it again*: its source, the options and
name expressions ``ql.compile`` was given, the debug / memcheck / stub
switches, and the device's name ("cpu", "cuda:0"). Unpickling calls
``ql.compile`` with those in the receiving process, which finds the module in
the on-disk compile cache when that process shares the cache directory
(``QUICKLAUNCH_CACHE_DIR``, inherited by ``multiprocessing`` children, spawn
included) and compiles it otherwise. A ``Kernel`` pickles as (module, name);
a configured launcher ``k[grid, block, shared_mem]`` as (kernel, config).
Nothing of the device's state travels: buffers, the values of ``__device__``
globals, streams (a launcher configured on a non-default stream is refused).
Modules unpickled in one process are shared: every kernel of one pickled
module comes back on one module object. Module and Kernel reduce themselves
(module.py); the launcher (a C type) is registered with copyreg here. See
docs/loading.md.
"""
from __future__ import annotations

import copyreg
import pickle

from . import _launch

__all__ = ["load"]


def _rebuild_launcher(kernel, grid, block, shared_mem):
    """A configured launcher again: what ``kernel[grid, block, shared_mem]`` gives."""
    return kernel[grid, block, shared_mem]


def _launcher_args(launcher) -> tuple:
    if launcher.stream is not None:
        raise pickle.PicklingError(f"{launcher!r} is configured on a stream; streams do not travel to "
                          f"another process: pickle the kernel (or k[grid, block, shared_mem]) "
                          f"and configure the stream there")
    return (launcher.kernel, launcher.grid, launcher.block, launcher.shared_mem)


def _reduce_launcher(launcher):
    return _rebuild_launcher, _launcher_args(launcher)


_builtin = type(len)


def _reduce_builtin(fn):
    """``k[grid, block]`` is the Launcher's bound builtin method; everything else
    of this type reduces as it always does."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, _launch.Launcher):
        return _rebuild_launcher, _launcher_args(owner)
    return fn.__reduce_ex__(pickle.HIGHEST_PROTOCOL)


copyreg.pickle(_launch.Launcher, _reduce_launcher)
copyreg.pickle(_builtin, _reduce_builtin)


def load(*args, **kwargs):  # replaced below when binary loading is present
    raise NotImplementedError("ql.load is not available in this build")

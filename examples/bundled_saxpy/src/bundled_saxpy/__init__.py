"""bundled_saxpy: y = a * x + y and a dot product, from quicklaunch kernels
that were compiled when this wheel was built (kernels.qlb, a quicklaunch
bundle). Nothing is compiled at run time: no NVRTC, no C++ compiler."""
from __future__ import annotations

from importlib import resources

import numpy as np

import quicklaunch as ql

__all__ = ["module", "saxpy", "dot"]
BLOCK = 256
_modules: dict = {}


def module(device=None) -> ql.Module:
    """The bundle's kernels on ``device`` (default: ql.device()), loaded once."""
    dev = ql.device(device)
    mod = _modules.get(dev.name)
    if mod is None:
        with resources.as_file(resources.files(__name__).joinpath("kernels.qlb")) as path:
            mod = _modules[dev.name] = ql.load(path, device=dev)
    return mod


def saxpy(a: float, x, y, device=None):
    """y = a * x + y, in place (float32 arrays of the device)."""
    n = len(x)
    module(device).saxpy[(n + BLOCK - 1) // BLOCK, BLOCK](a, x, y, n)
    return y


def dot(x, y, device=None) -> float:
    """The dot product of two float32 arrays (one partial sum per block on
    the device, added up here)."""
    n = len(x)
    blocks = max((n + BLOCK - 1) // BLOCK, 1)
    mod = module(device)
    part = ql.empty(blocks, np.float32, device=mod.device)
    mod.dot_partial[blocks, BLOCK](x, y, part, n)
    return float(part.numpy().sum(dtype=np.float64))

"""Bundles: one source compiled ahead of time for a list of targets (CUDA
SASS and PTX, HIP code objects, the host CPU) into one file or folder with
a manifest, loaded on any device the bundle has an entry for with no
compiler (docs/bundles.md).

    ql.build(SOURCE, targets=["sm_80", "sm_90", "compute_90", "cpu"], out="k.qlb")
    mod = ql.load("k.qlb")          # the best entry for ql.device()

build.py writes them, load.py chooses and loads an entry, manifest.py is
the format; each device's part is in backends/<kind>/bundle.py.
"""
from __future__ import annotations

from .manifest import BundleError

__all__ = ["build", "load_bundle", "is_bundle", "BundleError"]


def build(source, targets, out=None, options=(), name_expressions=(), include_source=True):
    """Compiles ``source`` for ``targets`` ("sm_80,sm_90,compute_90,gfx90a,cpu")
    into one bundle at ``out`` (a zip file, or a folder when ``out`` ends
    with "/"), or returns its bytes when ``out`` is None; see build.py."""
    from .build import build as _build
    return _build(source, targets, out, options, name_expressions, include_source)


def load_bundle(source, device=None):
    """Loads a bundle (path or bytes) on ``device``; see load.py."""
    from .load import load_bundle as _load
    return _load(source, device)


def is_bundle(source) -> bool:
    from .load import is_bundle as _is
    return _is(source)


def _rebuild(state):
    from .load import rebuild
    return rebuild(state)


def _register() -> None:
    from ..module import Module
    Module._rebuilders["bundle"] = _rebuild


_register()

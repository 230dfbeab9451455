"""``registry()``: every CG implementation the benchmark knows, by row name,
in table order (the runner and the probes' children both look rows up here)."""
from __future__ import annotations


def registry() -> dict:
    """{name: Implementation} of every known row, in table order."""
    from .numba_impl import NumbaCG
    from .numpy_impl import NumpyCG, ScipySparseCG
    from .opencl_impl import OpenCLCG
    from .ql_impl import QuicklaunchCG
    from .warp_impl import WarpCG
    impls = [NumpyCG(), ScipySparseCG(), QuicklaunchCG(graph=False), QuicklaunchCG(graph=True),
             WarpCG(graph=False), WarpCG(graph=True), NumbaCG(), OpenCLCG()]
    return {i.name: i for i in impls}

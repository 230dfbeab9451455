"""``ql.cuda``: offline CUDA compilation with NVRTC, no GPU needed.

    prog = ql.cuda.compile(SOURCE, arch="sm_90", name_expressions=["scale<float, 5>"])
    prog.ptx, prog.cubin, prog.log, prog.arch
    prog.kernels["scale<float, 5>"].params[0].size

NVRTC is opened on the first call that needs it (never at import); see
backends/cuda/nvrtc.py for where it is looked for.
"""
from __future__ import annotations

from .backends.cuda import nvrtc as _nvrtc
from .backends.cuda.program import KernelInfo, ParamInfo, Program, arch_for, compile

__all__ = ["compile", "Program", "KernelInfo", "ParamInfo", "nvrtc_version",
           "supported_archs", "arch_for"]


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC in use; CompileError if there is none."""
    return _nvrtc.load().version


def supported_archs() -> tuple[str, ...]:
    """The real architectures NVRTC can compile for ("sm_75", ..., ascending)."""
    return tuple(f"sm_{a}" for a in _nvrtc.load().archs)

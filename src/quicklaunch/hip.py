"""``ql.hip``: offline HIP compilation with hiprtc, no GPU needed.

    prog = ql.hip.compile(SOURCE, arch="gfx90a", name_expressions=["scale<float, 5>"])
    prog.code_object, prog.log, prog.arch, prog.wave_size
    prog.kernels["scale<float, 5>"].params[0].size

The source is CUDA C++ as quicklaunch's other devices take it: a prelude
maps CUDA's spellings onto HIP (see docs/hip-device.md). hiprtc is opened on
the first call that needs it (never at import) and compiles in a separate
process; see backends/hip/hiprtc.py for where it is looked for.
"""
from __future__ import annotations

from .backends.hip import hiprtc as _hiprtc
from .backends.hip.program import KernelInfo, ParamInfo, Program, compile, wave_size

__all__ = ["compile", "Program", "KernelInfo", "ParamInfo", "hiprtc_version",
           "supported_archs", "wave_size"]


def hiprtc_version() -> tuple[int, int]:
    """(major, minor) as hiprtcVersion reports it; CompileError if there is
    no hiprtc."""
    return _hiprtc.load().version


def supported_archs() -> tuple[str, ...]:
    """The AMDGPU targets hiprtc can compile for ("gfx90a", ...), as its
    code-object manager lists them."""
    return _hiprtc.load().isas

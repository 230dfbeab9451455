"""CUDA's shift semantics on AMD GPUs: hiprtc compiles the source with its
shifts' counts clamped, as on the CPU device.

An NVIDIA GPU clamps a shift's count to the width (PTX shl/shr: a 32-bit
`x << 32` is 0); AMD's shift instructions, like x86's, take it modulo the
width (v_lshlrev_b32 reads the count's low 5 bits), so a CUDA kernel relying
on the clamp ran silently wrong there too. The CPU device's rewrite
(backends/cpu/shifts.py, shift_macros.py) is applied to the source hiprtc
gets: the parse reads it as the CPU device would (the same CUDA dialect),
and the operators are the same header (include/ql_shift.h, included by
ql_hip_prelude.h). A source the parse cannot read (HIP-only headers, no
libclang or host compiler) is compiled as written.
"""
from __future__ import annotations


def identity() -> str:
    from ..cpu import shifts
    return shifts.identity()


def _parse_options(options) -> tuple[str, ...]:
    """The user's -D/-U/-I options (the parse needs no others)."""
    out, options = [], list(options)
    for i, o in enumerate(options):
        if o in ("-D", "-U", "-I") and i + 1 < len(options):
            out.append(o + options[i + 1])
        elif o.startswith(("-D", "-U", "-I")) and len(o) > 2:
            out.append(o)
    return tuple(out)


def clamped(source: str, options=()) -> str:
    """`source` with its shifts clamped as an NVIDIA GPU computes them; as
    written when that cannot be done (the rewrite never breaks a compile)."""
    try:
        from ..cpu import compiler, shifts, toolchain
        if not shifts.enabled():
            return source
        return shifts.rewrite(source, _parse_options(options),
                              toolchain.find_compiler().path, compiler._cache).text
    except Exception:
        return source

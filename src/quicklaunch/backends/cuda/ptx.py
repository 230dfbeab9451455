"""Reading what NVRTC left in PTX text: each ``.entry``'s parameter list, the
words of the reflection tables that ql_reflect.cuh asked the compiler to
emit (decoded by gpu/reflect.py), and the cross-check of one against the
other.

An entry looks like (``.ptr [.global] .align N`` may follow a pointer's
type: the alignment of what it points to)::

    .visible .entry _Z5scaleIfLi5EEvPT_S0_(
        .param .u64 _Z5scaleIfLi5EEvPT_S0__param_0,
        .param .align 16 .b8 _Z5scaleIfLi5EEvPT_S0__param_1[16]
    )

and a reflection table like (trailing zero bytes are left out by NVVM)::

    .global .align 4 .b8 __ql_reflect_0[36] = {81, 76, 82, 70, 1, 0, 0, 0, 1};
"""
from __future__ import annotations

import re
from typing import NamedTuple

from ..gpu.reflect import ReflectError, words

__all__ = ["PtxParam", "entries", "global_words", "check", "ReflectError"]

_ELEMENT = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
            "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
            "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16}
_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)")
_ALIGN = re.compile(r"\.align\s+(\d+)")
_TYPE = re.compile(r"\.(" + "|".join(sorted(_ELEMENT, key=len, reverse=True)) + r")\b")
_NAME = re.compile(r"([\w$.]+)\s*(?:\[\s*(\d+)\s*\])?\s*$")


class PtxParam(NamedTuple):
    size: int
    align: int
    text: str     # the .param declaration as written (for messages)


def _param(text: str) -> PtxParam:
    decl = " ".join(text.split())
    types = _TYPE.findall(decl)
    name = _NAME.search(decl)
    if not decl.startswith(".param") or not types or not name:
        raise ReflectError(f"unrecognised PTX parameter declaration {decl!r}")
    element = _ELEMENT[types[0]]
    size = element * int(name.group(2) or 1)
    # ".ptr [.space] .align N" describes the memory a pointer points to, not the
    # parameter: only an .align before .ptr is the parameter's own.
    align = _ALIGN.search(decl.split(".ptr")[0])
    return PtxParam(size, int(align.group(1)) if align else element, decl)


def entries(ptx: str) -> dict[str, tuple[PtxParam, ...]]:
    """Every ``.entry`` (kernel) of the module: symbol -> its parameters."""
    out = {}
    for m in _ENTRY.finditer(ptx):
        body = m.group(2).strip()
        out[m.group(1)] = tuple(_param(p) for p in body.split(",")) if body else ()
    return out


def global_words(ptx: str, name: str) -> list[int] | None:
    """The initialiser of global variable `name` as little-endian 32-bit
    words (zero-padded to the declared size), or None if it is not there."""
    pat = re.compile(r"^[ \t]*(?:\.\w+[ \t]+)*?\.global[ \t]+([^=;\n]*?)\b" + re.escape(name)
                     + r"[ \t]*(?:\[[ \t]*(\d+)[ \t]*\])?[ \t]*(?:=[ \t]*([^;]*))?;", re.M)
    m = pat.search(ptx)
    if m is None:
        return None
    types = _TYPE.findall(m.group(1))
    if not types:
        raise ReflectError(f"unrecognised PTX declaration of {name}: {m.group(0)!r}")
    element = _ELEMENT[types[-1]]
    count = int(m.group(2) or 1)
    try:
        values = [int(v, 0) for v in re.split(r"[\s,{}]+", m.group(3) or "") if v]
    except ValueError:
        raise ReflectError(f"unrecognised PTX initialiser of {name}: {m.group(0)[:200]!r}") \
            from None
    if len(values) > count:
        raise ReflectError(f"PTX initialiser of {name} has {len(values)} values for {count}")
    data = b"".join((v % (1 << (8 * element))).to_bytes(element, "little") for v in values)
    data += bytes(element * count - len(data))
    return words(data + bytes(-len(data) % 4))


def check(kernel: str, reflected: list[tuple[int, int, int]],
          params: tuple[PtxParam, ...]) -> None:
    """Raise ReflectError unless the reflected parameters are exactly what
    the PTX entry declares: the same count, sizes and alignments."""
    if len(reflected) != len(params):
        raise ReflectError(f"kernel '{kernel}': reflection found {len(reflected)} parameters "
                           f"but its PTX entry declares {len(params)}")
    for i, ((size, align, _), p) in enumerate(zip(reflected, params)):
        if (size, align) != (p.size, p.align):
            raise ReflectError(f"kernel '{kernel}': parameter {i + 1} reflects as {size} bytes "
                               f"aligned to {align}, but its PTX entry declares '{p.text}' "
                               f"({p.size} bytes aligned to {p.align}). The compiler's front "
                               f"end and code generator disagree on the type's layout, so no "
                               f"launch could pass it reliably; an __align__ smaller than "
                               f"the type's natural alignment is one known cause")

"""What a GPU compilation knows about its kernels: KernelInfo (name,
lowered name, parameters, source line), ParamInfo, the table that finds a
kernel by any spelling of its name, and the rows they are kept as in the
compile cache's JSON."""
from __future__ import annotations

from dataclasses import dataclass

from ...signature import normalize_name

__all__ = ["ParamInfo", "KernelInfo", "KernelTable", "to_rows", "from_rows"]


@dataclass(frozen=True)
class ParamInfo:
    name: str    # as declared ("arg<i>" when unnamed)
    ctype: str   # C type text from the source ("" if the declaration could not be matched)
    size: int    # bytes, from the compiler
    align: int
    kind: int    # the parameter's kind (kinds.h; quicklaunch.kinds)


@dataclass(frozen=True)
class KernelInfo:
    name: str            # the kernel's qualified name, or the name expression as given
    lowered_name: str    # the symbol in the compiled code (PTX/cubin, code object)
    params: tuple[ParamInfo, ...]
    line: int = 1        # line of the declaration in the source


class KernelTable(dict):
    """name -> KernelInfo; also answers normalized spellings and lowered names."""

    def __missing__(self, key):
        if isinstance(key, str):
            for k, info in self.items():
                if normalize_name(k) == normalize_name(key) or info.lowered_name == key:
                    return info
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


def to_rows(kernels) -> list:
    """KernelInfo objects as the cache's JSON rows."""
    return [[k.name, k.lowered_name, k.line,
             [[p.name, p.ctype, p.size, p.align, p.kind] for p in k.params]]
            for k in kernels]


def from_rows(rows) -> list[KernelInfo]:
    """The cache's JSON rows back as KernelInfo objects (TypeError or
    ValueError when damaged)."""
    return [KernelInfo(str(name), str(symbol), tuple(
                ParamInfo(str(p), str(ctype), int(size), int(align), int(kind))
                for p, ctype, size, align, kind in params), int(line))
            for name, symbol, line, params in rows]

"""What a prebuilt GPU binary says about a kernel parameter, for ql.load
(quicklaunch.loading): one ``Row`` per parameter, from the CUDA readers
(cuda/binary.py) and the HIP one (hip/binary.py)."""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Row", "rows_from_offsets"]


class Row(NamedTuple):
    """One parameter as the binary gives it: size, alignment, a kind tag
    (quicklaunch.kinds: "PTR", "F32", "STRUCT" for raw bytes) and the text
    messages show."""
    size: int
    align: int
    kind: str
    text: str


def _pow2_align(offset: int, size: int) -> int:
    align = 1
    while align < 16 and align < size and offset % (align * 2) == 0:
        align *= 2
    return align


def rows_from_offsets(params) -> list[Row]:
    """Rows for (offset, size[, is pointer]) parameters: the alignment is the
    largest power of two the offset allows (at most the size, at most 16), so
    C's layout rules land on the same offsets."""
    return [Row(p[1], _pow2_align(p[0], p[1]), "PTR" if len(p) > 2 and p[2] else "STRUCT",
                f"{p[1]} bytes at offset {p[0]}") for p in params]

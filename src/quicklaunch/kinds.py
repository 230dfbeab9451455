"""The parameter kinds, read from ``kinds.h`` (the one table the C launcher,
the CPU shim and the GPU reflection include), so Python never restates them.

``NAMES[code]`` is a kind's name ("pointer", "int32", ...), ``CODES[tag]``
its number ("PTR" -> 1)."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["HEADER", "NAMES", "CODES", "POINTER", "INVALID", "STRUCT"]

HEADER = Path(__file__).with_name("kinds.h")
_ROW = re.compile(r'X\(\s*(\w+)\s*,\s*(\d+)\s*,\s*"([^"]*)"\s*\)')


def _read() -> tuple[dict[int, str], dict[str, int]]:
    rows = _ROW.findall(HEADER.read_text())
    return ({int(code): name for _, code, name in rows},
            {tag: int(code) for tag, code, _ in rows})


NAMES, CODES = _read()
POINTER = (CODES["PTR"], CODES["PTR_CONST"])
INVALID = CODES["INVALID"]
STRUCT = CODES["STRUCT"]

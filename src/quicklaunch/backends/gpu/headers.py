"""The headers a GPU compiler (NVRTC, hiprtc) is handed in memory, by name:
the shared stand-ins and ql_reflect.cuh (gpu/include/), quicklaunch's one
kind table (kinds.h, as ``ql_kinds.h``), then the backend's own include/
(its prelude and the stand-ins that differ). Names are paths relative to
their folder ("cooperative_groups/reduce.h"). Every file they come from is
read, so a compile cache key over them changes with any of them."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ... import kinds

__all__ = ["SHARED_DIR", "KINDS_HEADER", "headers"]

SHARED_DIR = Path(__file__).with_name("include")
KINDS_HEADER = "ql_kinds.h"   # ql_ like every name quicklaunch adds: no user header is shadowed


def _read(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@lru_cache(maxsize=None)
def headers(own_dir: Path) -> dict[str, str]:
    """name -> text of every header handed to the compiler of the backend
    whose include/ is ``own_dir``. A name in both include/ folders is a
    packaging mistake (one copy of a shared header): RuntimeError."""
    found = _read(SHARED_DIR)
    found[KINDS_HEADER] = kinds.HEADER.read_text()
    for name, text in _read(own_dir).items():
        if name in found:
            raise RuntimeError(f"{name} is both in {SHARED_DIR} and in {own_dir}: keep one")
        found[name] = text
    return found

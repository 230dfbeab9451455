"""Device backends, one folder each behind the interface in ``base.py``.

This is the registry: one row per device kind, in device-id order (a
device's id is ``row index << 8 | ordinal``, the tag its buffers carry).
``default`` rows are tried, in order, for ``ql.device()`` when
``$QUICKLAUNCH_DEVICE`` is not set; the CPU answers when none is usable. A new
device is one folder with a module that has ``open(ordinal) -> Backend`` (and
``usable() -> bool`` when it is a default row), plus one row here.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Entry", "REGISTRY", "entry"]


class Entry(NamedTuple):
    kind: str          # the name in ql.device("kind:N")
    module: str        # the module with open(ordinal) (and usable())
    default: bool      # probed for the default device
    single: bool       # only ordinal 0 exists


REGISTRY: tuple[Entry, ...] = (
    Entry("cpu", "quicklaunch.backends.cpu.device", default=False, single=True),
    Entry("cuda", "quicklaunch.backends.cuda.device", default=True, single=False),
    Entry("hip", "quicklaunch.backends.hip.device", default=False, single=False),
)


def entry(kind: str) -> tuple[int, Entry] | None:
    """The registry row of ``kind`` and its index, or None."""
    for i, e in enumerate(REGISTRY):
        if e.kind == kind:
            return i, e
    return None

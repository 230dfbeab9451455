"""The error of the CUDA binary readers (cubin.py, fatbin.py, zstd.py's
caller): a binary quicklaunch cannot read. A module of its own so the
readers share it without importing one another."""
from __future__ import annotations

__all__ = ["CubinError", "FATBIN_MAGIC"]

FATBIN_MAGIC = 0xBA55ED50


class CubinError(ValueError):
    """Not a cubin (or fatbin) quicklaunch can read."""

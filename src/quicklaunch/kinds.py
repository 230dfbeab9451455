"""The parameter kinds, read from ``kinds.h`` (the one table the C launcher,
the CPU shim and the GPU reflection include), so Python never restates them.

``NAMES[code]`` is a kind's name ("pointer", "int32", ...), ``CODES[tag]``
its number ("PTR" -> 1)."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["HEADER", "NAMES", "CODES", "POINTER", "INVALID", "STRUCT", "char_is_signed",
           "char_dtype"]

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


# Plain `char`: what the target's ABI says, as the host compiler and NVRTC on
# that host both see it (the compiled code reflects parameters with
# (char)-1 < (char)0, so parameters follow it by construction; get_global
# and the docs follow this rule). Unsigned on Linux aarch64/arm, POWER,
# s390x and RISC-V; signed on x86 and x86-64, and on Apple's arm64 (whose
# ABI departs from AAPCS64 here).
_UNSIGNED_CHAR_MACHINES = ("aarch64", "arm64", "armv", "arm", "ppc", "powerpc", "s390", "riscv")


def char_is_signed(machine: str | None = None, system: str | None = None) -> bool:
    """Whether plain ``char`` is signed on ``machine`` (platform.machine()
    spelling; this host's by default) under ``system`` (platform.system())."""
    import platform
    machine = (machine if machine is not None else platform.machine()).lower()
    system = (system if system is not None else platform.system()).lower()
    if system == "darwin":
        return True
    return not machine.startswith(_UNSIGNED_CHAR_MACHINES)


def char_dtype(machine: str | None = None, system: str | None = None) -> str:
    """The NumPy dtype name of plain ``char`` on the target: int8 or uint8."""
    return "int8" if char_is_signed(machine, system) else "uint8"

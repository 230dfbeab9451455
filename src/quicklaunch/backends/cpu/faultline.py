"""Where a debug build's CPU kernel faulted, in its source: the faulting
instruction the fault handler names (fault.c) mapped through the module's
debug info with addr2line (binutils) to the line of the Python file that
holds the kernel source. Called by the error hook (runtime.py) for debug
builds only: the error's cold path, one addr2line run per error."""
from __future__ import annotations

import ctypes
import linecache
import os
import re
import subprocess

# The faulting instruction in a CPU fault's message (fault.c): "[at instruction
# 0x...]" (SIGSEGV, SIGBUS), "at instruction 0x..." (SIGFPE, a general
# protection fault), "(SIGILL) at 0x...".
_FAULT_PC = re.compile(r"(?:at instruction|\(SIGILL\) at) (0x[0-9a-f]+)")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_dladdr = ctypes.CDLL(None).dladdr
_dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
_dladdr.restype = ctypes.c_int


def fault_location(kernel, detail: str) -> str:
    """Where a debug build's kernel faulted, from the module's debug info:
    ``"; the fault is at <file>:<line> (in <kernel>): <the
    source line>"``, or "" when the message names no instruction, the
    instruction is not in the kernel's module (a C library function) or
    addr2line cannot say. The error's cold path only: one addr2line run."""
    m = _FAULT_PC.search(detail)
    library = getattr(getattr(kernel, "module", None), "_library", None)
    if m is None or library is None:
        return ""
    pc, info = int(m.group(1), 16), _DlInfo()
    if not _dladdr(pc, ctypes.byref(info)) or not info.dli_fbase:
        return ""
    name = os.fsdecode(info.dli_fname or b"")
    if name != getattr(library, "_name", None):
        return ""   # the fault is outside the kernel's module
    try:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", name, f"{pc - info.dli_fbase:#x}"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = out.stdout.splitlines()
    if len(lines) < 2 or lines[1].startswith("??"):
        return ""
    where = re.sub(r" \(discriminator \d+\)$", "", lines[1])
    file, _, line = where.rpartition(":")
    if not line.isdigit() or int(line) == 0:
        return ""
    func = lines[0].split("(")[0]
    text = linecache.getline(file, int(line)).strip()
    return (f"; the fault is at {file}:{line}"
            + (f" (in {func})" if func and func != "??" else "")
            + (f": {text}" if text else ""))

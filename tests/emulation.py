"""Whether the suite runs under user-mode emulation (qemu-user, as
.ci/aarch64 runs it), for the tests that cannot run there to skip saying why.

Emulated when any of these holds:
  - ``QUICKLAUNCH_EMULATED`` is set to anything but ``0`` (.ci/aarch64 sets
    ``qemu-user``; a test-suite variable, not one quicklaunch reads);
  - ``/proc/cpuinfo`` describes another architecture than the process runs
    as (qemu-user before 8.2 passes the host's file through: an aarch64
    process that reads x86 ``vendor_id``/``flags`` lines);
  - ``binfmt_misc`` has an enabled qemu entry for the process's own
    architecture (a native host registers no emulator for itself).
"""
from __future__ import annotations

import functools
import os
import platform

import pytest

_ARCH = {"x86_64": "x86", "amd64": "x86", "i386": "x86", "i686": "x86",
         "aarch64": "arm", "arm64": "arm", "armv7l": "arm", "armv8l": "arm"}


def _cpuinfo_arch() -> str | None:
    """The architecture /proc/cpuinfo's fields belong to ("x86", "arm"), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            keys = {line.partition(":")[0].strip() for line in f}
    except OSError:
        return None
    if "vendor_id" in keys and "flags" in keys:
        return "x86"
    if "CPU implementer" in keys or "Features" in keys:
        return "arm"
    return None


def _own_binfmt(machine: str) -> bool:
    name = {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)
    try:
        with open(f"/proc/sys/fs/binfmt_misc/qemu-{name}") as f:
            return f.readline().strip() == "enabled"
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def emulator() -> str | None:
    """What emulates this process, in words, or None when it runs natively."""
    value = os.environ.get("QUICKLAUNCH_EMULATED", "").strip()
    if value and value != "0":
        return f"QUICKLAUNCH_EMULATED={value}"
    machine = platform.machine().lower()
    cpu = _cpuinfo_arch()
    if cpu and machine in _ARCH and _ARCH[machine] != cpu:
        return f"an emulator (a {machine} process on a CPU /proc/cpuinfo calls {cpu})"
    if _own_binfmt(machine):
        return f"qemu-user (binfmt_misc runs {machine} binaries through qemu-{machine})"
    return None


def gdb_reason(gdb: str | None) -> str | None:
    """Why a gdb test cannot run here (``gdb`` is shutil.which("gdb")), or None."""
    if gdb is None:
        return "gdb is not installed"
    if emulator():
        return (f"gdb needs ptrace, which user-mode emulation does not implement "
                f"(running under {emulator()})")
    return None


def skip_gdb(gdb: str | None):
    """A skipif mark for a test that drives gdb."""
    reason = gdb_reason(gdb)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def skip_emulated(why: str):
    """A skipif mark for a test whose premise emulation breaks; ``why`` says how."""
    return pytest.mark.skipif(emulator() is not None,
                              reason=f"under emulation ({emulator()}): {why}")

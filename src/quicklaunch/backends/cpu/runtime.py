"""The CPU runtime library (runtime.c), loaded once with ctypes.

It gives the launcher its cuLaunchKernel-shaped entry, the threshold under
which launches run on the calling thread, and the meaning of its status codes.
"""
from __future__ import annotations

import ctypes
import functools
from importlib import machinery
from pathlib import Path

from ...errors import LaunchError

_STATUS = {
    1: ("invalid value", "a grid or block dimension was zero"),
    400: ("invalid handle", "the kernel or stream handle is not valid on the CPU device "
                            "(a closed stream, or another device's?)"),
    801: ("not supported", "the CPU runtime does not take 'extra' launch parameters"),
}

# Statuses that come with a message (ql_cpu_last_error): a fault in the kernel
# (700 illegal address, 715 illegal instruction, 716 misaligned), a failed
# device-side assert (710), a deadlock or bad warp mask or SIGFPE (719).
_REPORTED = frozenset({700, 710, 715, 716, 719})


@functools.lru_cache(maxsize=1)
def library_path() -> Path:
    here = Path(__file__).parent
    for suffix in machinery.EXTENSION_SUFFIXES:
        candidate = here / f"_runtime{suffix}"
        if candidate.exists():
            return candidate
    raise LaunchError(f"the CPU runtime library is missing from {here}; reinstall "
                      "quicklaunch ('pip install --force-reinstall quicklaunch')")


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path()), mode=ctypes.RTLD_LOCAL)
    lib.ql_cpu_threads.restype = ctypes.c_int
    lib.ql_cpu_set_threads.restype = ctypes.c_int
    lib.ql_cpu_set_threads.argtypes = [ctypes.c_int]
    lib.ql_cpu_last_error.restype = ctypes.c_char_p
    return lib


def launch_entry() -> int:
    """Address of ``ql_cpu_launch``, for the C launcher."""
    return ctypes.cast(library().ql_cpu_launch, ctypes.c_void_p).value


def inline_threads() -> int:
    """Launches with at most this many CUDA threads run on the caller."""
    return ctypes.c_uint64.in_dll(library(), "ql_cpu_inline_threads").value


def threads() -> int:
    """Threads that execute blocks, the launching thread included."""
    return library().ql_cpu_threads()


def error_hook(kernel, status: int) -> LaunchError:
    """Turns a runtime status into the exception the launcher raises; runs on
    the launching thread, right after the failed launch."""
    if status in _REPORTED:  # reported with a message: by the module or a fault
        detail = library().ql_cpu_last_error().decode(errors="replace")
        own = f"kernel '{kernel.name}' "  # a stream's kept failure names it already
        if detail.startswith(own):
            detail = detail[len(own):]
        return LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {detail}")
    what, why = _STATUS.get(status, ("unknown status", "an internal error"))
    return LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {what} "
                       f"(status {status}): {why}")

"""The CPU runtime library (runtime.c), loaded once with ctypes.

It gives the launcher its cuLaunchKernel-shaped entry, the threshold under
which launches run on the calling thread, and the meaning of its status codes.
"""
from __future__ import annotations

import ctypes
import functools
from typing import NamedTuple
from importlib import machinery
from pathlib import Path

from ...errors import LaunchError

_STATUS = {
    1: ("invalid value", "a grid or block dimension was zero"),
    2: ("out of memory", "the CPU device could not allocate what the launch needs (fiber "
                         "stacks, a stream's queue): free memory, or use smaller blocks or "
                         "a smaller QUICKLAUNCH_CPU_STACK"),
    400: ("invalid handle", "the kernel or stream handle is not valid on the CPU device "
                            "(a closed stream, or another device's?)"),
    801: ("not supported", "the CPU runtime does not take 'extra' launch parameters"),
    720: ("cooperative launch too large", "the grid cannot be co-resident on the CPU device"),
}

# Statuses that come with a message (ql_cpu_last_error): a fault in the kernel
# (700 illegal address, 715 illegal instruction, 716 misaligned), a failed
# device-side assert (710), a deadlock or bad warp mask or SIGFPE or a kernel's
# abort()/exit() (719), a timeout (702), Ctrl-C (9001: interrupt.c).
_REPORTED = frozenset({700, 702, 710, 715, 716, 719, INTERRUPTED := 9001})


@functools.lru_cache(maxsize=1)
def library_path() -> Path:
    here = Path(__file__).parent
    for suffix in machinery.EXTENSION_SUFFIXES:
        candidate = here / f"_runtime{suffix}"
        if candidate.exists():
            return candidate
    raise LaunchError(f"the CPU runtime library is missing from {here}; reinstall "
                      "quicklaunch ('pip install --force-reinstall quicklaunch')")


class StreamsSeen:
    """``made`` turns true when the first CPU stream is created: until then
    no launch can be queued (only streams queue), so a caller that would
    ask ql_cpu_queued_work (a ctypes call, ~150 ns) can skip it."""
    made = False


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(library_path()), mode=ctypes.RTLD_LOCAL)
    lib.ql_cpu_threads.restype = ctypes.c_int
    lib.ql_cpu_set_threads.restype = ctypes.c_int
    lib.ql_cpu_set_threads.argtypes = [ctypes.c_int]
    lib.ql_cpu_last_error.restype = ctypes.c_char_p
    lib.ql_cpu_cooperative_limit.restype = ctypes.c_uint64
    lib.ql_cpu_cooperative_limit.argtypes = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
    lib.ql_cpu_queued_work.restype = ctypes.c_uint64
    lib.ql_cpu_queued_work.argtypes = []
    lib.ql_cpu_set_timeout.restype = ctypes.c_double
    lib.ql_cpu_set_timeout.argtypes = [ctypes.c_double]
    lib.ql_cpu_launch_cooperative.restype = ctypes.c_int
    lib.ql_cpu_launch_cooperative.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
        ctypes.c_void_p]
    return lib


def launch_entry() -> int:
    """Address of ``ql_cpu_launch``, for the C launcher."""
    return ctypes.cast(library().ql_cpu_launch, ctypes.c_void_p).value


def plan_entry() -> int:
    """Address of ``ql_cpu_plan_launch``: a configured launcher's planner."""
    return ctypes.cast(library().ql_cpu_plan_launch, ctypes.c_void_p).value


def plan_direct_entry() -> int:
    """Address of ``ql_cpu_plan_direct``: a planned launcher's direct launch,
    where its kernel's module reads the Python arguments itself."""
    return ctypes.cast(library().ql_cpu_plan_direct, ctypes.c_void_p).value


def inline_threads() -> int:
    """Launches with at most this many CUDA threads run on the caller."""
    return ctypes.c_uint64.in_dll(library(), "ql_cpu_inline_threads").value


def threads() -> int:
    """Threads that execute blocks, the launching thread included."""
    return library().ql_cpu_threads()


def set_timeout(seconds: float | None) -> float:
    """Every CPU launch from now on that runs longer than `seconds` is stopped
    and fails with a LaunchError naming the kernel and the blocks still
    running (0 or None: no timeout, the default). QUICKLAUNCH_CPU_TIMEOUT sets
    it at start-up; a stream's own timeout (Stream(timeout=...)) wins. Returns
    the timeout in force. A timeout sends every launch down the runtime's
    slower path (a few hundred ns more per launch): meant for tests and
    debugging sessions, not production loops."""
    value = float(seconds or 0)
    if not 0 <= value < 1e9:
        raise ValueError(f"timeout: {seconds!r} is not a number of seconds >= 0")
    return library().ql_cpu_set_timeout(value)


def timeout() -> float:
    """The device-wide timeout in seconds (0: none)."""
    return library().ql_cpu_set_timeout(-1.0)


class CooperativeLimit(NamedTuple):
    """What bounds a cooperative launch on the CPU device now (cooperative.c)."""
    blocks: int          # the most blocks of this size: the least of the three below
    stack_bytes: int     # one fiber stack, guard page included
    memory_budget: int   # bytes all stacks may take: a quarter of the host's memory
    by_memory: int       # blocks that budget holds
    max_maps: int        # vm.max_map_count
    maps_in_use: int     # the process's memory mappings now
    by_maps: int         # blocks the mappings left hold (two a stack, four a block thread)
    max_blocks: int      # threads the launch may start, one a block


def cooperative_limit(threads_per_block: int) -> CooperativeLimit:
    out = (ctypes.c_uint64 * 7)()
    n = library().ql_cpu_cooperative_limit(threads_per_block, out)
    return CooperativeLimit(n, *out)


def launch_cooperative(kernel, grid, block, shared: int, params_address: int) -> None:
    """Runs a cooperative launch now (cooperative.c); raises LaunchError."""
    threads, nblocks = block[0] * block[1] * block[2], grid[0] * grid[1] * grid[2]
    lim = cooperative_limit(threads)
    if nblocks > lim.blocks:
        raise LaunchError(
            f"kernel '{kernel.name}': a cooperative launch of {nblocks} blocks of {threads} "
            f"threads cannot be co-resident on the CPU device, which holds at most "
            f"{lim.blocks} such blocks now: every block runs at once, on a thread of its own "
            f"(at most {lim.max_blocks}), its {threads} threads as fibers with "
            f"{lim.stack_bytes // 1024}-KiB stacks (guard page included); the stacks may "
            f"take at most a quarter of the host's memory ({lim.memory_budget / 2**30:.1f} "
            f"GiB: {lim.by_memory} blocks), and each stack and its guard are two memory "
            f"mappings, of which the process has {lim.max_maps - lim.maps_in_use} left under "
            f"vm.max_map_count={lim.max_maps} ({lim.by_maps} blocks); use a grid of at most "
            f"{lim.blocks} blocks (a grid-stride loop covers any size), smaller blocks, or a "
            f"smaller QUICKLAUNCH_CPU_STACK")
    status = library().ql_cpu_launch_cooperative(kernel.handle, *grid, *block, shared,
                                                 params_address)
    if status == 2:
        detail = library().ql_cpu_last_error().decode(errors="replace")
        raise LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {detail}")
    if status:
        raise error_hook(kernel, status)


def error_hook(kernel, status: int) -> LaunchError:
    """Turns a runtime status into the exception the launcher raises; runs on
    the launching thread, right after the failed launch."""
    if status in _REPORTED:  # reported with a message: by the module or a fault
        detail = library().ql_cpu_last_error().decode(errors="replace")
        if status == INTERRUPTED:
            # Ctrl-C: Python's SIGINT handler ran before this function's first
            # line (a KeyboardInterrupt is raised here by default); a handler
            # of the user's that returns leaves the launch failed.
            return _interrupted(kernel, detail)
        own = f"kernel '{kernel.name}' "  # a stream's kept failure names it already
        if detail.startswith(own):
            detail = detail[len(own):]
        if getattr(getattr(kernel, "module", None), "debug", False):
            from .faultline import fault_location   # a debug build: name the source line
            detail += fault_location(kernel, detail)
        return LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {detail}")
    what, why = _STATUS.get(status, ("unknown status", "an internal error"))
    return LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {what} "
                       f"(status {status}): {why}")


def _interrupted(kernel, detail: str) -> LaunchError:
    """Only reached when Python's SIGINT handler did not raise (a handler of
    the user's, or a launch on another thread than the main one)."""
    own = f"kernel '{kernel.name}' "
    if detail.startswith(own):
        detail = detail[len(own):]
    return LaunchError(f"kernel '{kernel.name}' failed on the CPU device: {detail}")

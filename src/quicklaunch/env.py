"""Every environment variable quicklaunch reads, what each takes, and the
check that a set one holds such a value.

Several are read by C code (the CPU runtime's pool, watchdog, streams and
fault handler) that has no way to report a bad value and would silently use
its default; others are read late, by the first compile or launch that needs
them. :func:`check` validates them all at ``import quicklaunch`` and raises
:class:`EnvironmentConfigError` naming the variable, the value and what it
takes (``QUICKLAUNCH_CPU_THREADS='abc': expected a whole number of threads,
at least 1``). ``quicklaunch info`` lists them with their values. The
README's configuration table lists the same set (tests/unit/test_env.py
holds the two together).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from .errors import QuicklaunchError

__all__ = ["VARIABLES", "EnvironmentConfigError", "check", "listing"]


class EnvironmentConfigError(QuicklaunchError, ValueError):
    """An environment variable quicklaunch reads holds a value it does not take."""


def _flag(value: str) -> bool:
    return value in ("0", "1")


def _positive_int(value: str) -> bool:
    return value.isdigit() and int(value) >= 1


def _seconds(value: str) -> bool:
    try:
        v = float(value)
    except ValueError:
        return False
    return 0 < v < 1e9


def _stack(value: str) -> bool:
    m = re.fullmatch(r"(\d+)([kKmM]?)", value)
    if not m:
        return False
    n = int(m.group(1)) << {"": 0, "k": 10, "K": 10, "m": 20, "M": 20}[m.group(2)]
    return n >= 16384


def _fission(value: str) -> bool:
    return value.strip().lower() in ("0", "1", "no", "yes", "off", "on", "false", "true")


def _hip_arch(value: str) -> bool:
    return re.fullmatch(r"gfx[0-9a-f]+(:[a-z0-9_-]+[+-])*", value) is not None


def _cuda_version(value: str) -> bool:
    return re.fullmatch(r"\d+\.\d+(\.\d+)?", value.strip()) is not None


def _any(value: str) -> bool:
    return True


@dataclass(frozen=True)
class Variable:
    name: str
    takes: str                       # what the error says it expects
    valid: Callable[[str], bool]
    effect: str                      # one line, for `quicklaunch info`


VARIABLES: tuple[Variable, ...] = (
    # checked where it is used, by ql.device() ("unknown device 'tpu'; ...")
    Variable("QUICKLAUNCH_DEVICE", "a device: cpu, cuda, cuda:N, hip or hip:N", _any,
             "default device"),
    Variable("QUICKLAUNCH_CACHE_DIR", "a directory path", _any, "compile cache directory"),
    Variable("QUICKLAUNCH_DEBUG", "0 or 1", _flag, "1: compile kernels for debugging"),
    Variable("QUICKLAUNCH_MEMCHECK", "0 or 1", _flag,
             "1: CPU memcheck builds (every load and store checked)"),
    Variable("QUICKLAUNCH_STUB", "0 or 1", _flag, "1: launch through C host stubs"),
    Variable("QUICKLAUNCH_TRACE", "a file path", _any, "trace every launch to this file"),
    Variable("QUICKLAUNCH_LAUNCH_BLOCKING", "0 or 1", _flag,
             "1: every stream launch waits for itself"),
    Variable("QUICKLAUNCH_CPU_THREADS", "a whole number of threads, at least 1",
             _positive_int, "threads that run CPU blocks"),
    Variable("QUICKLAUNCH_CPU_STACK", "a size in bytes, at least 16384, with an optional "
             "k or m suffix (64k, 1m)", _stack, "fiber stack size"),
    Variable("QUICKLAUNCH_CPU_TIMEOUT", "a positive number of seconds", _seconds,
             "CPU launch timeout"),
    Variable("QUICKLAUNCH_CPU_CATCH_FAULTS", "0 or 1", _flag,
             "0: faulting kernels kill the process"),
    Variable("QUICKLAUNCH_CPU_FISSION", "0 or 1 (or no/yes, off/on, false/true)", _fission,
             "0: barrier kernels run as fibers, not region fission"),
    Variable("QUICKLAUNCH_CPU_CLAMP_SHIFTS", "0 or 1 (or no/yes, off/on, false/true)", _fission,
             "0: CPU shifts by the width or more as the host does them, not clamped as on "
             "a GPU (for measuring)"),
    Variable("QUICKLAUNCH_CPU_PCH", "0 or 1 (or no/yes, off/on, false/true)", _fission,
             "0: GCC builds of CPU kernels parse the shim's headers every time, without "
             "its precompiled header"),
    Variable("QUICKLAUNCH_CUDA_VERSION", "a CUDA version such as 12.8 or 12.8.93",
             _cuda_version, "the CUDA version the CPU and HIP devices' version macros "
             "(CUDART_VERSION, ...) say, instead of the NVRTC wheel's"),
    Variable("QUICKLAUNCH_COMPILE_TIMEOUT", "a positive number of seconds", _seconds,
             "limit of one CPU compiler run"),
    Variable("QUICKLAUNCH_COMPILE_LOCK_TIMEOUT", "a positive number of seconds", _seconds,
             "wait for another process's compile of the same module"),
    Variable("QUICKLAUNCH_UNCHECKED_OPTIONS", "0 or 1", _flag,
             "1: compile options passed unchecked"),
    Variable("CXX", "a C++ compiler command (with optional flags)", _any,
             "host C++ compiler for the CPU device"),
    Variable("QUICKLAUNCH_NVRTC", "a path to libnvrtc", _any, "NVRTC library"),
    Variable("QUICKLAUNCH_LIBCUDA", "a path to libcuda", _any, "CUDA driver library"),
    Variable("CUDA_HOME", "a directory", _any, "CUDA toolkit (NVRTC search)"),
    Variable("CUDA_PATH", "a directory", _any, "CUDA toolkit (NVRTC search)"),
    Variable("QUICKLAUNCH_HIPRTC", "a path to libhiprtc", _any, "hiprtc library"),
    Variable("QUICKLAUNCH_LIBHIP", "a path to libamdhip64", _any, "HIP runtime library"),
    Variable("QUICKLAUNCH_HIP_ARCH", "an AMD GPU target id (gfx90a, gfx942:xnack-)",
             _hip_arch, "the HIP device's architecture, instead of the one it reports"),
    Variable("ROCM_PATH", "a directory", _any, "ROCm (hiprtc and HIP runtime search)"),
    Variable("HIP_PATH", "a directory", _any, "ROCm (hiprtc and HIP runtime search)"),
    Variable("QUICKLAUNCH_MPI_PIN", "0 or 1", _flag,
             "0: MPI ranks' CPU pools are not pinned to their share of the cores"),
    Variable("QUICKLAUNCH_MPI_ABORT", "0 or 1", _flag,
             "0: an uncaught error on one rank does not abort the job"),
    Variable("XDG_CACHE_HOME", "a directory", _any, "default cache's parent"),
    Variable("QUICKLAUNCH_BENCH_NULL_DRIVER", "0 or 1", _flag,
             "0: quicklaunch bench leaves the null-driver section out"),
    Variable("CC", "a C compiler command", _any, "quicklaunch bench's C baseline compiler"),
)
# Read but not quicklaunch's to define: the MPI launchers' local-rank
# variables (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, ...; mpi/local.py).


def check(environ=None) -> None:
    """Raises EnvironmentConfigError for the first set variable whose value
    quicklaunch does not take (an empty value counts as unset)."""
    environ = os.environ if environ is None else environ
    for v in VARIABLES:
        value = environ.get(v.name)
        if value and not v.valid(value.strip() if v.name != "CXX" else value):
            raise EnvironmentConfigError(f"{v.name}={value!r}: expected {v.takes}")


def listing(environ=None) -> list[tuple[str, str, str]]:
    """(name, value or "(unset)", "ok" or the error) for each variable."""
    environ = os.environ if environ is None else environ
    out = []
    for v in VARIABLES:
        value = environ.get(v.name)
        if not value:
            out.append((v.name, "(unset)", v.effect))
        elif v.valid(value.strip() if v.name != "CXX" else value):
            out.append((v.name, repr(value), v.effect))
        else:
            out.append((v.name, repr(value), f"INVALID: expected {v.takes}"))
    return out

"""hiprtc, the HIP runtime compiler, opened at run time with ctypes.

Nothing links against ROCm. The library is looked for at
``$QUICKLAUNCH_HIPRTC`` (a path; a library that does not load is an error,
never silently replaced), then ``libhiprtc.so`` in ``$ROCM_PATH/lib`` and
``/opt/rocm/lib`` (ROCm 5.3 and later ship hiprtc as its own library), then
``libamdhip64.so`` there (ROCm 5.2 and older keep hiprtc inside the HIP
runtime), then the distribution's copies (Debian/Ubuntu:
``/usr/lib/x86_64-linux-gnu/libamdhip64.so.5``), then
``ctypes.util.find_library``.

hiprtc hands the architecture to the code-object manager (comgr), which in
the versions tested here corrupts the heap and aborts the process when it
does not know the architecture, and LLVM aborts on code it cannot select
instructions for. So the architecture is checked against comgr's own list
of ISAs first (``Hiprtc.isas``), and compilations run in a separate process
(worker.py, rtc_worker.py): a crash there is a CompileError here.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import threading
from dataclasses import dataclass, field

from ...errors import CompileError
from ..gpu.library import LibrarySearch

__all__ = ["Hiprtc", "Result", "load", "reset", "candidates", "INSTALL_HINT", "COMPILATION"]

INSTALL_HINT = ("install ROCm (https://rocm.docs.amd.com), or on Debian 12 / Ubuntu: "
                "apt-get install libamdhip64-5 libhiprtc-builtins5 libamd-comgr2; or set "
                "QUICKLAUNCH_HIPRTC to the path of libhiprtc.so (or libamdhip64.so)")
SUCCESS, COMPILATION = 0, 6
_ARCH = re.compile(r"gfx[0-9a-f]{1,5}(?:-[0-9a-f]+)*(?:-generic)?(?::[a-z_]+[+-])*")
_SEARCH = LibrarySearch("QUICKLAUNCH_HIPRTC", "hiprtc", "the HIP runtime compiler",
                        "libhiprtc.so or libamdhip64.so", "compile for AMD GPUs", INSTALL_HINT)
_lock = threading.RLock()
_loaded: "Hiprtc | None" = None
_MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu")


def rocm_dirs() -> list[str]:
    roots = [os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"]
    return [os.path.join(r, "lib") for r in dict.fromkeys(roots) if r]


def _versioned(pattern: str) -> list[str]:
    """Files matching ``pattern`` (a glob), highest soname version first."""
    def key(p):
        tail = p.split(".so")[-1].lstrip(".")
        return tuple(int(x) for x in tail.split(".") if x.isdigit()), p
    return sorted(set(glob.glob(pattern)), key=key, reverse=True)


def candidates() -> list[str]:
    """Every library path to try, in order (after $QUICKLAUNCH_HIPRTC)."""
    found: list[str] = []
    dirs = rocm_dirs() + [f"/usr/lib/{m}" for m in _MULTIARCH] + ["/usr/lib64", "/usr/lib"]
    for name in ("libhiprtc.so", "libamdhip64.so"):
        for d in dirs:
            found += _versioned(os.path.join(d, name + "*"))
    for name in ("hiprtc", "amdhip64"):
        system = ctypes.util.find_library(name)
        if system:
            found.append(system)
    return [p for p in dict.fromkeys(found) if "builtins" not in os.path.basename(p)]


@dataclass
class Result:
    """What one compilation produced."""
    ok: bool
    log: str
    status: int = SUCCESS
    error: str = ""
    code: bytes = b""
    lowered: dict[str, str] = field(default_factory=dict)


class Hiprtc:
    """One opened hiprtc library (and the comgr it compiles with)."""

    def __init__(self, path: str):
        self.path = path
        self._lib = lib = ctypes.CDLL(path)
        for name in ("hiprtcCreateProgram", "hiprtcCompileProgram", "hiprtcGetCode",
                     "hiprtcGetProgramLog", "hiprtcDestroyProgram"):
            getattr(lib, name)   # AttributeError: not hiprtc (the worker calls these)
        pi = ctypes.POINTER(ctypes.c_int)
        lib.hiprtcVersion.argtypes, lib.hiprtcVersion.restype = [pi, pi], ctypes.c_int
        lib.hiprtcGetErrorString.argtypes = [ctypes.c_int]
        lib.hiprtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(lib.hiprtcVersion(ctypes.byref(major), ctypes.byref(minor)), "hiprtcVersion")
        self.version: tuple[int, int] = (major.value, minor.value)
        self.comgr_path, self.comgr_version, isas = _comgr_isas(path)
        # hiprtcVersion answers 9.0 in ROCm 5.2: the library's file name says more
        self.description = (f"hiprtc ({os.path.basename(os.path.realpath(path))}, comgr "
                            f"{self.comgr_version})")
        self.isas: tuple[str, ...] = isas          # "gfx90a", "gfx1030", ... as comgr knows them

    def _check(self, status: int, what: str) -> None:
        if status != SUCCESS:
            raise CompileError(f"{what} failed: {self.error_name(status)} ({status}) "
                               f"[hiprtc at {self.path}]")

    def error_name(self, status: int) -> str:
        return (self._lib.hiprtcGetErrorString(status) or b"unknown").decode(errors="replace")

    # ----------------------------------------------------------- archs
    def arch_error(self, arch) -> str | None:
        """Why hiprtc cannot compile for ``arch`` ("gfx90a", "gfx90a:xnack-"),
        or None when it can."""
        if not isinstance(arch, str) or not _ARCH.fullmatch(arch):
            return (f"arch {arch!r} is not an AMDGPU target name such as 'gfx90a' or "
                    f"'gfx1100' (optionally with features, 'gfx90a:xnack-')")
        if arch.split(":")[0] in self.isas:
            return None
        return (f"{self.description} does not support arch {arch!r}; supported: "
                f"{', '.join(self.isas)}. A newer ROCm knows newer GPUs")

    # ----------------------------------------------------------- compile
    def compile(self, source: str, name: str, options: list[str], headers: dict[str, str],
                name_expressions: list[str]) -> Result:
        """Compile ``source`` (called ``name`` in messages) with in-memory
        ``headers``; the lowered name of each name expression is looked up.
        Runs in the compiler process (worker.py); the caller has checked the
        arch."""
        from . import worker
        r = worker.get(self.path).compile(source, name, options, headers, name_expressions)
        return Result(r["status"] == SUCCESS, r.get("log", ""), r["status"], r.get("error", ""),
                      r.get("code", b""), r.get("lowered", {}))


def _comgr_isas(hiprtc_path: str) -> tuple[str, str, tuple[str, ...]]:
    """(path, version, ISA names) of the comgr next to hiprtc: the soname
    resolves to the copy hiprtc itself loaded."""
    names = ["libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"]
    here = os.path.dirname(os.path.realpath(hiprtc_path))
    tried = []
    for path in [os.path.join(here, n) for n in names] + names:
        try:
            lib = ctypes.CDLL(path)
            count = ctypes.c_size_t()
            if lib.amd_comgr_get_isa_count(ctypes.byref(count)) != 0:
                raise OSError("amd_comgr_get_isa_count failed")
        except (OSError, AttributeError) as exc:
            tried.append(f"{path}: {exc}")
            continue
        lib.amd_comgr_get_isa_name.argtypes = [ctypes.c_size_t,
                                               ctypes.POINTER(ctypes.c_char_p)]
        isas = []
        for i in range(count.value):
            out = ctypes.c_char_p()
            if lib.amd_comgr_get_isa_name(i, ctypes.byref(out)) == 0 and out.value:
                target = out.value.decode().rsplit("--", 1)[-1].split(":")[0]
                isas.append(target)
        major, minor = ctypes.c_size_t(), ctypes.c_size_t()
        version = "?"
        if hasattr(lib, "amd_comgr_get_version"):
            lib.amd_comgr_get_version(ctypes.byref(major), ctypes.byref(minor))
            version = f"{major.value}.{minor.value}"
        return path, version, tuple(dict.fromkeys(isas))
    raise OSError(f"{hiprtc_path}: the code-object manager (libamd_comgr) it compiles with "
                  f"could not be opened ({'; '.join(tried)})")


def load() -> Hiprtc:
    """The process's hiprtc, opened on first use; CompileError if none loads."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _SEARCH.find(Hiprtc, candidates)
    return _loaded


def reset() -> None:
    """Forget the opened library (tests; the next load() searches again)."""
    global _loaded
    with _lock:
        _loaded = None

"""NVRTC, the CUDA runtime compiler, opened at run time with ctypes.

Nothing links against CUDA: the library is looked for, in order, at
``$QUICKLAUNCH_NVRTC`` (a path to the library itself), in the pip wheels
(``nvidia-cuda-nvrtc``: ``nvidia/cu13/lib/libnvrtc.so.13``,
``nvidia/cuda_nvrtc/lib/libnvrtc.so.12``, ...), in a CUDA toolkit
(``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``), and finally through
``ctypes.util.find_library("nvrtc")``. A ``$QUICKLAUNCH_NVRTC`` that cannot
be loaded is an error, never silently replaced by another library.

:func:`load` opens it once per process (thread-safe); :meth:`Nvrtc.compile`
runs one compilation and returns everything it produced.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib.util
import os
import re
import sys
import threading
from dataclasses import dataclass, field

from ...cache import cache_key
from ...errors import CacheError, CompileError
from ..gpu.library import LibrarySearch

__all__ = ["Nvrtc", "Result", "load", "reset", "candidates", "arch_for", "INSTALL_HINT",
           "COMPILATION"]

INSTALL_HINT = ("install it with: pip install 'quicklaunch[cuda]' (the nvidia-cuda-nvrtc "
                "wheel), or install a CUDA toolkit, or set QUICKLAUNCH_NVRTC to the path "
                "of libnvrtc")
SUCCESS, COMPILATION = 0, 6
_ARCH = re.compile(r"(sm|compute)_(\d+)([af]?)")
_SEARCH = LibrarySearch("QUICKLAUNCH_NVRTC", "NVRTC", "the CUDA runtime compiler", "libnvrtc",
                        "compile for CUDA GPUs", INSTALL_HINT)
_lock = threading.RLock()
_loaded: "Nvrtc | None" = None

if sys.platform == "win32":   # pragma: no cover - best effort
    _WHEEL_GLOBS = ("cu*/bin/nvrtc64_*.dll", "cuda_nvrtc/bin/nvrtc64_*.dll")
    _TOOLKIT_GLOBS = ("bin/nvrtc64_*.dll", "bin/x64/nvrtc64_*.dll")
else:
    _WHEEL_GLOBS = ("cu*/lib/libnvrtc.so.*", "cuda_nvrtc/lib/libnvrtc.so.*")
    _TOOLKIT_GLOBS = ("lib64/libnvrtc.so", "lib64/libnvrtc.so.*", "lib/libnvrtc.so")


def _newest_first(paths: list[str]) -> list[str]:
    """Library files, newest CUDA first, skipping the builtins companion."""
    def version(p: str) -> tuple:
        tail = os.path.basename(p).split(".so")[-1].lstrip(".") or "0"
        if p.endswith(".dll"):
            tail = os.path.basename(p)[len("nvrtc64_"):].split("_")[0] or "0"
        return tuple(int(x) if x.isdigit() else 0 for x in tail.split("."))
    keep = [p for p in paths if "builtins" not in os.path.basename(p)]
    return sorted(set(keep), key=lambda p: (version(p), p), reverse=True)


def wheel_dirs() -> list[str]:
    """The directories of the ``nvidia`` namespace package (pip wheels)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def toolkit_dirs() -> list[str]:
    """CUDA toolkit roots: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [r for r in dict.fromkeys(roots) if r]


def candidates() -> list[str]:
    """Every library path to try, in order (after $QUICKLAUNCH_NVRTC)."""
    found: list[str] = []
    for root in wheel_dirs():
        found += _newest_first([p for g in _WHEEL_GLOBS for p in glob.glob(os.path.join(root, g))])
    for root in toolkit_dirs():
        found += _newest_first([p for g in _TOOLKIT_GLOBS
                                for p in glob.glob(os.path.join(root, g))])
    system = ctypes.util.find_library("nvrtc")
    if system:
        found.append(system)
    return list(dict.fromkeys(found))


@dataclass
class Result:
    """What one compilation produced."""
    ok: bool
    log: str
    status: int = SUCCESS       # nvrtcResult of nvrtcCompileProgram
    error: str = ""             # its name, when not NVRTC_SUCCESS
    ptx: str = ""
    cubin: bytes | None = None
    lowered: dict[str, str] = field(default_factory=dict)   # name expression -> symbol


class Nvrtc:
    """One opened NVRTC library."""

    def __init__(self, path: str):
        self.path = path
        self._lib = lib = ctypes.CDLL(path)
        p, c, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        pi = ctypes.POINTER(ctypes.c_int)
        for name, args in {
            "nvrtcVersion": [pi, pi], "nvrtcGetNumSupportedArchs": [pi],
            "nvrtcGetSupportedArchs": [pi],
            "nvrtcCreateProgram": [ctypes.POINTER(p), c, c, ctypes.c_int,
                                   ctypes.POINTER(c), ctypes.POINTER(c)],
            "nvrtcDestroyProgram": [ctypes.POINTER(p)],
            "nvrtcCompileProgram": [p, ctypes.c_int, ctypes.POINTER(c)],
            "nvrtcGetPTXSize": [p, ctypes.POINTER(sz)], "nvrtcGetPTX": [p, c],
            "nvrtcGetCUBINSize": [p, ctypes.POINTER(sz)], "nvrtcGetCUBIN": [p, c],
            "nvrtcGetProgramLogSize": [p, ctypes.POINTER(sz)], "nvrtcGetProgramLog": [p, c],
            "nvrtcAddNameExpression": [p, c],
            "nvrtcGetLoweredName": [p, c, ctypes.POINTER(c)],
        }.items():
            fn = getattr(lib, name)     # AttributeError: too old a library
            fn.argtypes, fn.restype = args, ctypes.c_int
        lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [ctypes.c_int], c
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version: tuple[int, int] = (major.value, minor.value)
        n = ctypes.c_int()
        self._check(lib.nvrtcGetNumSupportedArchs(ctypes.byref(n)), "nvrtcGetNumSupportedArchs")
        archs = (ctypes.c_int * max(n.value, 1))()
        self._check(lib.nvrtcGetSupportedArchs(archs), "nvrtcGetSupportedArchs")
        self.archs: tuple[int, ...] = tuple(sorted(archs[:n.value]))
        self._include: dict[str, list[str]] = {}   # cache root -> -I options

    def _check(self, status: int, what: str) -> None:
        if status != SUCCESS:
            raise CompileError(f"{what} failed: {self.error_name(status)} ({status}) "
                               f"[NVRTC at {self.path}]")

    def error_name(self, status: int) -> str:
        return (self._lib.nvrtcGetErrorString(status) or b"unknown").decode(errors="replace")

    def _read(self, prog, size_fn, read_fn) -> bytes:
        size = ctypes.c_size_t()
        self._check(size_fn(prog, ctypes.byref(size)), size_fn.__name__)
        buf = ctypes.create_string_buffer(size.value)
        self._check(read_fn(prog, buf), read_fn.__name__)
        return buf.raw[:size.value]

    def compile(self, source: str, name: str, options: list[str],
                headers: dict[str, str], name_expressions: list[str],
                cubin: bool) -> Result:
        """Compile `source` (called `name` in messages) with in-memory
        `headers`; the lowered name of each name expression is looked up."""
        lib, prog = self._lib, ctypes.c_void_p()
        enc = lambda items: (ctypes.c_char_p * max(len(items), 1))(
            *[s.encode("utf-8") for s in items])
        hnames = list(headers)
        self._check(lib.nvrtcCreateProgram(
            ctypes.byref(prog), source.encode("utf-8"), name.encode("utf-8"), len(hnames),
            enc([headers[h] for h in hnames]), enc(hnames)), "nvrtcCreateProgram")
        try:
            for e in name_expressions:
                self._check(lib.nvrtcAddNameExpression(prog, e.encode("utf-8")),
                            "nvrtcAddNameExpression")
            status = lib.nvrtcCompileProgram(prog, len(options), enc(options))
            log = self._read(prog, lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog)
            log_text = log.rstrip(b"\0").decode("utf-8", "replace")
            if status != SUCCESS:
                return Result(False, log_text, status, self.error_name(status))
            ptx = self._read(prog, lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
            code = self._read(prog, lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if cubin else None
            lowered = {}
            for e in name_expressions:
                out = ctypes.c_char_p()
                self._check(lib.nvrtcGetLoweredName(prog, e.encode("utf-8"), ctypes.byref(out)),
                            f"nvrtcGetLoweredName({e!r})")
                lowered[e] = out.value.decode("utf-8")
            return Result(True, log_text, ptx=ptx.rstrip(b"\0").decode("utf-8", "replace"),
                          cubin=code, lowered=lowered)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))

    def arch_error(self, arch) -> str | None:
        """Why NVRTC cannot compile for `arch` ("sm_90", "sm_90a", "compute_90"),
        or None if it can."""
        m = _ARCH.fullmatch(arch) if isinstance(arch, str) else None
        if m is not None and int(m.group(2)) in self.archs:
            return None
        return (f"NVRTC {self.version[0]}.{self.version[1]} does not support arch {arch!r}; "
                f"supported: {self.archs_text()} (or compute_XX for PTX only)")

    def archs_text(self) -> str:
        return ", ".join(f"sm_{a}" for a in self.archs)

    def bundled_include(self, cache) -> list[str]:
        """-I options for the CUDA headers bundled in NVRTC (cuda_fp16.h,
        cooperative_groups.h, CCCL), extracted once into the compile cache;
        [] when NVRTC has none to extract or extracting failed (a missing
        header then says so in the compiler's log)."""
        with _lock:
            root = str(cache.root)
            known = self._include.get(root)
            if known is None or (known and not os.path.isdir(known[0][2:])):
                key = cache_key("nvrtc-bundled-headers", repr(self.version), self.path)
                try:
                    stamp = cache.put("cuda", key, ".headers", b"NVRTC bundled headers\n")
                    known = self.install_headers(str(stamp) + ".d")
                except (OSError, CompileError, CacheError):
                    known = []
                self._include[root] = known
            return known

    def install_headers(self, path: str) -> list[str]:
        """Extract the CUDA headers bundled with NVRTC (CUDA 13.x+) into `path`
        once; the -I options that find them, or [] when NVRTC bundles none."""
        install = getattr(self._lib, "nvrtcInstallBundledHeaders", None)
        if install is None:
            return []   # older NVRTC: cuda_fp16.h and friends are built in
        install.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_char_p)]
        install.restype = ctypes.c_int
        detail = ctypes.c_char_p()
        status = install(path.encode(), 0, ctypes.byref(detail))
        if status != SUCCESS:
            why = (detail.value or b"").decode(errors="replace")
            raise CompileError(f"NVRTC could not install its bundled headers into {path}: "
                               f"{self.error_name(status)} {why}")
        return [f"-I{path}", f"-I{os.path.join(path, 'cccl')}"]


def load() -> Nvrtc:
    """The process's NVRTC, opened on first use; CompileError if none loads."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = _SEARCH.find(Nvrtc, candidates)
    return _loaded


def arch_for(capability: tuple[int, int]) -> str:
    """The arch to compile for a GPU of `capability` (major, minor): its own
    sm_XX when NVRTC knows it, else PTX for the newest arch NVRTC knows below
    it (the driver compiles that PTX for the GPU)."""
    lib = load()
    cc = capability[0] * 10 + capability[1]
    if cc in lib.archs:
        return f"sm_{cc}"
    older = [a for a in lib.archs if a < cc]
    if not older:
        raise CompileError(f"NVRTC {lib.version[0]}.{lib.version[1]} cannot compile for a GPU of "
                           f"compute capability {capability[0]}.{capability[1]}; it supports "
                           f"{lib.archs_text()}. Use the NVRTC of an older CUDA "
                           f"(QUICKLAUNCH_NVRTC)")
    return f"compute_{max(older)}"


def reset() -> None:
    """Forget the opened library (tests; the next load() searches again)."""
    global _loaded
    with _lock:
        _loaded = None

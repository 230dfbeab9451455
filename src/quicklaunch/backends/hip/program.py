"""Offline HIP compilation with hiprtc: source -> AMDGPU code object and each
kernel's parameters, reflected by the compiler, cached on disk.

The source is compiled as written, after the CUDA prelude (include/
ql_hip_prelude.h; a ``#line`` directive keeps the user's line numbers) and
followed by the same reflection tables as the CUDA device's
(cuda/include/ql_reflect.cuh): one ``extern "C" __device__`` table per
kernel or name expression, initialised by the compiler. The tables are read
back from the code object's data (elf.py) and cross-checked against the
kernels' own metadata, the AMDGPU note (metadata.py); a disagreement is a
CompileError, never a launch with the wrong layout.

A kernel the parser sees that the preprocessor removes (``#if 0``) makes its
table fail to compile with "undeclared identifier"; those kernels are
dropped and the source compiled once more.
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import cache as cache_mod
from ...errors import CompileError
from ...signature import SignatureError, normalize_name, parse_kernels
from ..cuda.program import (INCLUDE_DIR as CUDA_INCLUDE, KernelInfo, ParamInfo, _KernelTable,
                            _base, _expressions, _params, _prelude)
from ..cuda import ptx
from .. import rtc_common
from . import elf, hiprtc, metadata
from .worker import CompilerCrash

__all__ = ["Program", "KernelInfo", "ParamInfo", "compile", "wave_size"]

FORMAT = "hip-program-1"
FILENAME = "kernel.cu"
REFLECT_FILE = "<quicklaunch reflection>"
ADDRESS_FILE = "<quicklaunch kernel addresses>"
INCLUDE_DIR = Path(__file__).parent / "include"
DEFAULT_STD = "-std=c++17"
_DIAG = re.compile(r"^(.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$", re.M)
_PRELUDE_ERROR = re.compile(r"error: static assertion failed[^\n]*?: (quicklaunch HIP[^\n]*)")
_CRASH_HINTS = {   # what LLVM says -> what the source did
    "GlobalTLSAddress": ": the source uses thread_local, which device code cannot have",
}
_cache = cache_mod.CompileCache()
_headers: dict[str, str] | None = None


class Program:
    """One hiprtc compilation: ``code_object`` (bytes), ``log``, ``arch``,
    ``wave_size`` and ``kernels`` (name -> KernelInfo)."""

    def __init__(self, source, arch, options, name_expressions, code_object, log, kernels,
                 wave, from_cache=False):
        self.source = source
        self.arch = arch
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions)
        self.code_object: bytes = code_object
        self.log: str = log
        self.kernels: dict[str, KernelInfo] = _KernelTable((k.name, k) for k in kernels)
        self.wave_size: int = wave
        self.from_cache = from_cache

    def __repr__(self) -> str:
        return (f"<quicklaunch.hip.Program {self.arch} (wave{self.wave_size}): "
                f"{len(self.kernels)} kernels, code object {len(self.code_object)} bytes>")


def _include_headers() -> dict[str, str]:
    """The headers handed to hiprtc in memory: the prelude, CUDA stand-ins
    and ql_reflect.cuh (shared with the CUDA device)."""
    global _headers
    if _headers is None:
        found = {p.relative_to(INCLUDE_DIR).as_posix(): p.read_text()
                 for p in sorted(INCLUDE_DIR.rglob("*")) if p.is_file()}
        found["ql_reflect.cuh"] = (CUDA_INCLUDE / "ql_reflect.cuh").read_text()
        _headers = found
    return _headers


def wave_size(arch: str, options=()) -> int:
    """The wavefront size code for ``arch`` runs with: 64 on GCN/CDNA (gfx9
    and older), 32 on RDNA (gfx10+) unless -mwavefrontsize64 is given."""
    if not arch.startswith("gfx10") and not arch.startswith("gfx11") \
            and not arch.startswith("gfx12"):
        return 64
    wave = 32
    for opt in options:
        if opt in ("-mwavefrontsize64", "--mwavefrontsize64"):
            wave = 64
        elif opt in ("-mno-wavefrontsize64", "--mno-wavefrontsize64"):
            wave = 32
    return wave


def _tidy(log: str) -> str:
    """The log with hiprtc's temporary directories taken out of the paths."""
    log = re.sub(r"/tmp/comgr-\w+/input/CompileSource", FILENAME, log)
    return re.sub(r"/tmp/comgr-\w+/include/", "<quicklaunch>/", log)


def _error(what, log, source, options, command, exprs=()) -> CompileError:
    log = _tidy(log)
    ours = _PRELUDE_ERROR.search(log)
    if ours:   # the prelude refused a CUDA construct: say that first
        what = f"{what}: {ours.group(1)}"
    shown = rtc_common.truncate_log(log)
    shown = re.sub(r"^" + re.escape(FILENAME) + r":(\d+):(\d+): ", r"line \1, column \2: ",
                   shown, flags=re.M)
    shown = rtc_common.name_reflection_rows(
        shown, r"^(?:" + re.escape(REFLECT_FILE) + "|" + re.escape(ADDRESS_FILE)
        + r"):(\d+):\d+: ", exprs)
    return rtc_common.compile_error(what, shown, log, source, options, command)


def _reflection_errors(log: str, n: int) -> dict[int, bool] | None:
    """Reflection rows with errors -> whether the kernel is simply not there.
    None when the log has errors outside the reflection rows (the kernel
    address rows fail along with their tables)."""
    rows: dict[int, bool] = {}
    for m in _DIAG.finditer(log):
        where, line, text = m.group(1), int(m.group(2)), m.group(3)
        if where not in (REFLECT_FILE, ADDRESS_FILE) or not 0 < line <= n:
            return None
        gone = bool(re.search(r"undeclared identifier|no member named|no template named",
                              text))
        rows[line - 1] = rows.get(line - 1, False) or gone
    return rows or None


def _addresses(exprs: list[str]) -> str:
    """One pointer per kernel, whose relocation in the code object names the
    kernel's symbol (hiprtc's own name expressions do the same, but do not
    lower every spelling: 'k<unsigned>' fails in ROCm 5.2)."""
    rows = "".join(f'#line {i + 1} "{ADDRESS_FILE}"\n'
                   f'extern "C" constexpr auto __ql_kernel_{i} = &{e.strip().lstrip("&")};\n'
                   for i, e in enumerate(exprs))
    return f"\n{rows}"


def _check_args(source, options, name_expressions):
    return rtc_common.check_compile_args(source, options, name_expressions, "CUDA/HIP C++",
                                         r"--?(offload-arch|amdgpu-target|mcpu|march)\b")


def compile(source: str, arch: str = "gfx90a", options=(), name_expressions=()) -> Program:
    """Compile CUDA (or HIP) C++ ``source`` with hiprtc for ``arch``
    ("gfx90a", "gfx942", "gfx1100", ...). Kernels and their parameters are
    in ``.kernels``; template kernels only through ``name_expressions``."""
    options, name_expressions = _check_args(source, options, name_expressions)
    lib = hiprtc.load()
    problem = lib.arch_error(arch)
    if problem:
        raise CompileError(problem, source=source, options=options)
    headers = _include_headers()
    key = cache_mod.cache_key(FORMAT, source, "\0".join(options), "\0".join(name_expressions),
                              arch, f"hiprtc {lib.version} {lib.path} comgr {lib.comgr_version}",
                              *(f"{n}\0{t}" for n, t in headers.items()))
    prog = _load_cached(key, source, arch, options, name_expressions)
    if prog is None:
        prog = _compile(lib, key, source, arch, options, name_expressions, headers)
    return prog


def _compile(lib, key, source, arch, options, name_expressions, headers) -> Program:
    try:
        decls = parse_kernels(source)
    except SignatureError as exc:
        raise CompileError(f"could not read the kernels' signatures: {exc}",
                           source=source, options=options) from None
    exprs = _expressions(decls, name_expressions)
    given = {normalize_name(e) for e in name_expressions}
    std = [] if any(o.startswith(("-std=", "--std=", "-std ")) for o in options) else [DEFAULT_STD]
    full = [f"--offload-arch={arch}", *std, *options]
    command = ("hiprtc", *full)
    head = f'#include "ql_hip_prelude.h"\n#line 1 "{FILENAME}"\n'

    def run(exprs):
        text = head + source + _prelude(exprs) + _addresses(exprs)
        try:
            return lib.compile(text, FILENAME, full, headers, [])
        except CompilerCrash as exc:
            hint = next((h for key, h in _CRASH_HINTS.items() if key in exc.log), "")
            raise _error(exc.headline + hint, exc.log, source, options, command, exprs) \
                from None

    result, exprs = rtc_common.compile_dropping_removed(
        run, exprs, given, _reflection_errors, hiprtc.COMPILATION, "hiprtc", arch,
        lambda what, log, exprs: _error(what, log, source, options, command, exprs))
    try:
        code = elf.unbundle(result.code, arch)
        kernels = _reflect(code, decls, exprs)
    except (elf.ElfError, metadata.MetadataError, ptx.ReflectError) as exc:
        raise _error(f"kernel parameters could not be reflected: {exc}", result.log, source,
                     options, command, exprs) from None
    prog = Program(source, arch, options, name_expressions, code, result.log, kernels,
                   wave_size(arch, options))
    _store(key, prog)
    return prog


def _reflect(code: bytes, decls, exprs) -> list[KernelInfo]:
    co = elf.CodeObject(code)
    table = metadata.kernels(co)
    lines = {d.name: d.line for d in decls}
    kernels = []
    for i, e in enumerate(exprs):
        data = co.symbol_bytes(f"__ql_reflect_{i}")
        if data is None:
            raise ptx.ReflectError(f"the reflection table of kernel '{e}' is not in the code "
                                   f"object")
        words = [int.from_bytes(data[j:j + 4], "little") for j in range(0, len(data) // 4 * 4, 4)]
        layout = ptx.decode_table(words, f"the reflection table of kernel '{e}'")
        symbol = co.pointer_target(f"__ql_kernel_{i}")
        if symbol is None:
            raise metadata.MetadataError(f"the symbol of kernel '{e}' could not be found in "
                                         f"the code object")
        if symbol not in table:
            raise metadata.MetadataError(f"kernel '{e}' ({symbol}) is not among the code "
                                         f"object's kernels")
        metadata.check(e, layout, table[symbol])
        kernels.append(KernelInfo(e, symbol, _params(decls, e, layout), lines.get(_base(e), 1)))
    return kernels


def _store(key: str, prog: Program) -> None:
    meta = {"format": FORMAT, "arch": prog.arch, "log": prog.log, "wave": prog.wave_size,
            "kernels": rtc_common.kernel_rows(prog.kernels.values())}
    rtc_common.store_entry(_cache, "hip", key, meta, [(".co", prog.code_object)])


def _load_cached(key, source, arch, options, name_expressions) -> Program | None:
    def build(meta, read):
        code = read(".co")
        if code is None:
            return None
        kernels = rtc_common.kernels_from_rows(meta["kernels"], KernelInfo, ParamInfo)
        return Program(source, arch, options, name_expressions, code, str(meta["log"]),
                       kernels, int(meta["wave"]), from_cache=True)
    return rtc_common.load_entry(_cache, "hip", key, FORMAT, arch, build)

"""Offline HIP compilation with hiprtc: source -> AMDGPU code object and each
kernel's parameters, reflected by the compiler, cached on disk.

The source is compiled as written, after the CUDA prelude (include/
ql_hip_prelude.h; a ``#line`` directive keeps the user's line numbers) and
followed by the same reflection tables as the CUDA device's (gpu/reflect.py,
gpu/include/ql_reflect.cuh): one ``extern "C" __device__`` table per
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

from ... import cache as cache_mod, compile_hints, cuda_version
from ...options import check_hiprtc
from ...host_code import device_part
from ...errors import CompileError
from ..gpu import compile_cache, expressions, kernel_table, reflect
from ..gpu.arguments import check_arch, check_compile_args
from ..gpu.diagnostics import LogStyle
from ..gpu.headers import headers as gpu_headers
from ..gpu.kernel_table import KernelInfo, ParamInfo
from ..gpu.reflect import REFLECT_FILE
from . import clamp, elf, hiprtc, metadata
from .worker import CompilerCrash

__all__ = ["Program", "KernelInfo", "ParamInfo", "compile", "wave_size"]

FORMAT = "hip-program-1"
FILENAME = "kernel.cu"
ADDRESS_FILE = "<quicklaunch kernel addresses>"
INCLUDE_DIR = Path(__file__).parent / "include"
DEFAULT_STD = "-std=c++17"
_DIAG = re.compile(r"^(.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$", re.M)
_PRELUDE_ERROR = re.compile(r"error: static assertion failed[^\n]*?: (quicklaunch HIP[^\n]*)")
_CRASH_HINTS = {   # what LLVM says -> what the source did
    "GlobalTLSAddress": ": the source uses thread_local, which device code cannot have",
}
_LOG = LogStyle(r"^" + re.escape(FILENAME) + r":(\d+):(\d+): ", r"line \1, column \2: ",
                r"^(?:" + re.escape(REFLECT_FILE) + "|" + re.escape(ADDRESS_FILE)
                + r"):(\d+):\d+: ")
_cache = cache_mod.CompileCache()


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
        self.kernels: dict[str, KernelInfo] = kernel_table.KernelTable(
            (k.name, k) for k in kernels)
        self.wave_size: int = wave
        self.from_cache = from_cache

    def __repr__(self) -> str:
        return (f"<quicklaunch.hip.Program {self.arch} (wave{self.wave_size}): "
                f"{len(self.kernels)} kernels, code object {len(self.code_object)} bytes>")


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
    return _LOG.error(what, log, source, options, command, exprs)


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


def compile(source: str, arch: str = "gfx90a", options=(), name_expressions=()) -> Program:
    """Compile CUDA (or HIP) C++ ``source`` with hiprtc for ``arch``
    ("gfx90a", "gfx942", "gfx1100", ...). Kernels and their parameters are
    in ``.kernels``; template kernels only through ``name_expressions``."""
    options, name_expressions = check_compile_args(
        source, options, name_expressions, "CUDA/HIP C++",
        r"--?(offload-arch|amdgpu-target|mcpu|march)\b")
    check_hiprtc(options, source)   # the allow-list (quicklaunch/options.py)
    source = device_part(source)
    lib = hiprtc.load()
    check_arch(lib, arch, source, options)
    headers = gpu_headers(INCLUDE_DIR)
    key = compile_cache.key(FORMAT, source, options, name_expressions, arch,
                            f"hiprtc {lib.version} {lib.path} comgr {lib.comgr_version} "
                            f"{cuda_version.prelude(options)} {clamp.identity()}", headers)
    prog = _load_cached(key, source, arch, options, name_expressions)
    if prog is None:
        with compile_cache.miss_lock(_cache, "hip", key):   # one compile per node
            prog = _load_cached(key, source, arch, options, name_expressions)
            if prog is None:
                try:
                    prog = _compile(lib, key, source, arch, options, name_expressions, headers)
                except CompileError as exc:   # what it means (compile_hints.py)
                    better = compile_hints.explain(exc, source, "hiprtc")
                    if better is exc:
                        raise
                    raise better from None
    return prog


def _compile(lib, key, source, arch, options, name_expressions, headers) -> Program:
    body = clamp.clamped(source, options)   # shifts as CUDA clamps them
    try:
        return _compile_body(lib, key, source, body, arch, options, name_expressions, headers)
    except CompileError as exc:
        if body == source or "__ql_clamp" not in exc.message:
            raise
        # a gap in the shift rewrite, not the user's error: compiled as written
        return _compile_body(lib, key, source, source, arch, options, name_expressions,
                             headers)


def _compile_body(lib, key, source, body, arch, options, name_expressions,
                  headers) -> Program:
    decls, exprs, given = expressions.to_reflect(source, options, name_expressions)
    std = [] if any(o.startswith(("-std=", "--std=", "-std ")) for o in options) else [DEFAULT_STD]
    full = [f"--offload-arch={arch}", *std, *options]
    command = ("hiprtc", *full)
    # CUDART_VERSION & co., as NVRTC has them (cuda_version.py)
    head = (f'#include "ql_hip_prelude.h"\n{cuda_version.prelude(options)}'
            f'#line 1 "{FILENAME}"\n')

    def run(exprs):
        text = head + body + reflect.tables(exprs) + _addresses(exprs)
        try:
            return lib.compile(text, FILENAME, full, headers, [])
        except CompilerCrash as exc:
            hint = next((h for key, h in _CRASH_HINTS.items() if key in exc.log), "")
            raise _error(exc.headline + hint, exc.log, source, options, command, exprs) \
                from None

    result, exprs = expressions.compile_dropping_removed(
        run, exprs, given, _reflection_errors, hiprtc.COMPILATION, "hiprtc", arch,
        lambda what, log, exprs: _error(what, log, source, options, command, exprs))
    try:
        code = elf.unbundle(result.code, arch)
        kernels = _reflect(code, decls, exprs)
    except (elf.ElfError, metadata.MetadataError, reflect.ReflectError) as exc:
        raise _error(f"kernel parameters could not be reflected: {exc}", result.log, source,
                     options, command, exprs) from None
    prog = Program(source, arch, options, name_expressions, code, result.log, kernels,
                   wave_size(arch, options))
    _store(key, prog)
    return prog


def _reflect(code: bytes, decls, exprs) -> list[KernelInfo]:
    """Each kernel's table, read from the code object's data and checked
    against the kernel's metadata; its symbol is the target of its address row."""
    co = elf.CodeObject(code)
    table = metadata.kernels(co)

    def table_words(name):
        data = co.symbol_bytes(name)
        return None if data is None else reflect.words(data)

    def resolve(i, e, layout):
        symbol = co.pointer_target(f"__ql_kernel_{i}")
        if symbol is None:
            raise metadata.MetadataError(f"the symbol of kernel '{e}' could not be found in "
                                         f"the code object")
        if symbol not in table:
            raise metadata.MetadataError(f"kernel '{e}' ({symbol}) is not among the code "
                                         f"object's kernels")
        metadata.check(e, layout, table[symbol])
        return symbol
    return reflect.kernels(decls, exprs, table_words, "the code object", resolve)


def _store(key: str, prog: Program) -> None:
    meta = {"format": FORMAT, "arch": prog.arch, "log": prog.log, "wave": prog.wave_size,
            "kernels": kernel_table.to_rows(prog.kernels.values())}
    compile_cache.store_entry(_cache, "hip", key, meta, [(".co", prog.code_object)])


def _load_cached(key, source, arch, options, name_expressions) -> Program | None:
    def build(meta, read):
        code = read(".co")
        if code is None:
            return None
        return Program(source, arch, options, name_expressions, code, str(meta["log"]),
                       kernel_table.from_rows(meta["kernels"]), int(meta["wave"]),
                       from_cache=True)
    return compile_cache.load_entry(_cache, "hip", key, FORMAT, arch, build)

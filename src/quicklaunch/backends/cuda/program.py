"""Offline CUDA compilation with NVRTC: source -> PTX (+ cubin) and each
kernel's parameters, reflected by the compiler, cached on disk.

Kernels are found by the signature parser; each one (and each template
instantiation asked for by a name expression) gets a reflection table from
ql_reflect.cuh, appended after the user's source so the user's line numbers
stay as written. The tables are read back from the PTX and cross-checked
against the kernels' ``.entry`` parameter lists (ptx.py).

A kernel the parser sees that the preprocessor removes (``#if 0``, an
``#ifdef`` not taken) makes its table fail to compile with "is undefined";
those kernels are dropped and the source compiled once more.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ... import cache as cache_mod
from ...errors import CompileError
from ...signature import KernelDecl, SignatureError, normalize_name, parse_kernels, strip_comments
from .. import rtc_common
from . import nvrtc, ptx
from .nvrtc import arch_for

__all__ = ["Program", "KernelInfo", "ParamInfo", "compile", "arch_for"]

FORMAT = "cuda-program-1"
FILENAME = "kernel.cu"
REFLECT_FILE = "<quicklaunch reflection>"
INCLUDE_DIR = Path(__file__).parent / "include"
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b", re.M)
_PRE_INCLUDE = ("--pre-include", "-include")
_cache = cache_mod.CompileCache()
_headers: dict[str, str] | None = None


@dataclass(frozen=True)
class ParamInfo:
    name: str    # as declared ("arg<i>" when unnamed)
    ctype: str   # C type text from the source ("" if the declaration could not be matched)
    size: int    # bytes, from the compiler
    align: int
    kind: int    # launcher type code (enum ql_kind in ql_cpu_abi.h)


@dataclass(frozen=True)
class KernelInfo:
    name: str            # the kernel's qualified name, or the name expression as given
    lowered_name: str    # the PTX/cubin symbol
    params: tuple[ParamInfo, ...]
    line: int = 1        # line of the declaration in the source


class _KernelTable(dict):
    """name -> KernelInfo; also answers normalized spellings and lowered names."""

    def __missing__(self, key):
        if isinstance(key, str):
            for k, info in self.items():
                if normalize_name(k) == normalize_name(key) or info.lowered_name == key:
                    return info
        raise KeyError(key)

    def __contains__(self, key) -> bool:
        return self.get(key) is not None

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default


class Program:
    """One NVRTC compilation: ``ptx``, ``cubin`` (None for a ``compute_XX``
    arch), ``log``, ``arch`` and ``kernels`` (name -> KernelInfo)."""

    def __init__(self, source, arch, options, name_expressions, ptx_text, cubin, log,
                 kernels, nvrtc_version, from_cache=False):
        self.source = source
        self.arch = arch
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions)
        self.ptx: str = ptx_text
        self.cubin: bytes | None = cubin
        self.log: str = log
        self.kernels: dict[str, KernelInfo] = _KernelTable((k.name, k) for k in kernels)
        self.nvrtc_version: tuple[int, int] = tuple(nvrtc_version)
        self.from_cache = from_cache

    def __repr__(self) -> str:
        return (f"<quicklaunch.cuda.Program {self.arch}: {len(self.kernels)} kernels, "
                f"{'cubin ' + str(len(self.cubin)) + ' bytes' if self.cubin else 'PTX only'}>")


def _include_headers() -> dict[str, str]:
    """The headers handed to NVRTC in memory: ql_reflect.cuh and stand-ins
    for host headers kernels commonly include (see include/)."""
    global _headers
    if _headers is None:
        _headers = {p.name: p.read_text() for p in sorted(INCLUDE_DIR.iterdir()) if p.is_file()}
    return _headers


def _error(what: str, log: str, source: str, options, command, exprs=()) -> CompileError:
    shown = rtc_common.truncate_log(log)
    shown = re.sub(r"^" + re.escape(FILENAME) + r"\((\d+)\): ", r"line \1: ", shown, flags=re.M)
    shown = rtc_common.name_reflection_rows(shown, r"^" + re.escape(REFLECT_FILE) + r"\((\d+)\): ",
                                            exprs)
    return rtc_common.compile_error(what, shown, log, source, options, command)


def _expressions(decls: list[KernelDecl], name_expressions) -> list[str]:
    """Non-template kernels by qualified name, then the name expressions not
    already there (the same rule as the CPU device)."""
    exprs, seen = [], set()
    for e in [d.name for d in decls if d.template is None] + list(name_expressions):
        if normalize_name(e) not in seen:
            seen.add(normalize_name(e))
            exprs.append(e)
    return exprs


def _prelude(exprs: list[str]) -> str:
    rows = "".join(f'#line {i + 1} "{REFLECT_FILE}"\n'
                   f'QL_REFLECT(__ql_reflect_{i}, {e.strip().lstrip("&")})\n'
                   for i, e in enumerate(exprs))
    return f'\n#include "ql_reflect.cuh"\n{rows}'


def _reflection_errors(log: str, n: int) -> dict[int, bool] | None:
    """Reflection rows with errors -> whether the kernel is simply not there
    ("is undefined", "has no member"; the other errors of the row follow from
    it). None when the log has errors outside the reflection rows."""
    rows: dict[int, bool] = {}
    for m in re.finditer(r"^(.*?)\((\d+)\): (?:catastrophic )?error:? (.*)$", log, re.M):
        where, line, text = m.group(1), int(m.group(2)), m.group(3)
        if where == "__nv_name_map":   # NVRTC's echo of a failing name expression
            continue
        if where != REFLECT_FILE or not 0 < line <= n:
            return None
        gone = bool(re.search(r"is undefined|has no member", text))
        rows[line - 1] = rows.get(line - 1, False) or gone
    return rows or None


def _base(expr: str) -> str:
    """The kernel's qualified name in a name expression ("&ns::k<int>" -> "ns::k")."""
    return normalize_name(expr).lstrip("&").lstrip(":").split("<")[0]


def _params(decls: list[KernelDecl], expr: str, rows) -> tuple[ParamInfo, ...]:
    base = _base(expr)
    same = [d for d in decls if d.name == base]
    decl = next((d for d in same if len(d.params) == len(rows)), None)
    names = ([(p.name, p.ctype) for p in decl.params] if decl
             else [(f"arg{i}", "") for i in range(len(rows))])
    return tuple(ParamInfo(n, c, *r) for (n, c), r in zip(names, rows))


def compile(source: str, arch: str = "sm_90", options=(), name_expressions=()) -> Program:
    """Compile CUDA C++ `source` with NVRTC for `arch` (``sm_XX``: cubin and
    PTX; ``compute_XX``: PTX only). Kernels and their parameters are in
    ``.kernels``; template kernels only through ``name_expressions``."""
    options, name_expressions = rtc_common.check_compile_args(
        source, options, name_expressions, "CUDA C++", r"-(-gpu-architecture|arch)\b")
    lib = nvrtc.load()
    problem = lib.arch_error(arch)
    if problem:
        raise CompileError(problem, source=source, options=options)
    headers = _include_headers()
    key = cache_mod.cache_key(FORMAT, source, "\0".join(options), "\0".join(name_expressions),
                              arch, f"nvrtc {lib.version[0]}.{lib.version[1]}",
                              *(f"{n}\0{t}" for n, t in headers.items()))
    prog = _load_cached(key, source, arch, options, name_expressions, lib.version)
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
    full = [f"-arch={arch}", *options]
    if (_INCLUDE.search(strip_comments(source))
            or any(o.startswith(_PRE_INCLUDE) for o in options)):
        full += lib.bundled_include(_cache)
    command = ("nvrtc", *full)
    result, exprs = rtc_common.compile_dropping_removed(
        lambda exprs: lib.compile(source + _prelude(exprs), FILENAME, full, headers, exprs,
                                  cubin=arch.startswith("sm_")),
        exprs, given, _reflection_errors, nvrtc.COMPILATION, "NVRTC", arch,
        lambda what, log, exprs: _error(what, log, source, options, command, exprs))
    lines = {d.name: d.line for d in decls}
    try:
        table = ptx.entries(result.ptx)
        kernels = []
        for i, e in enumerate(exprs):
            words = ptx.global_words(result.ptx, f"__ql_reflect_{i}")
            if words is None:
                raise ptx.ReflectError(f"the reflection table of kernel '{e}' is not in the PTX")
            layout = ptx.decode_table(words, f"the reflection table of kernel '{e}'")
            symbol = result.lowered[e]
            if symbol not in table:
                raise ptx.ReflectError(f"kernel '{e}' ({symbol}) has no .entry in the PTX")
            ptx.check(e, layout, table[symbol])
            kernels.append(KernelInfo(e, symbol, _params(decls, e, layout),
                                      lines.get(_base(e), 1)))
    except ptx.ReflectError as exc:
        raise _error(f"kernel parameters could not be reflected: {exc}", result.log, source,
                     options, command, exprs) from None
    prog = Program(source, arch, options, name_expressions, result.ptx, result.cubin,
                   result.log, kernels, lib.version)
    _store(key, prog)
    return prog


def _store(key: str, prog: Program) -> None:
    meta = {"format": FORMAT, "arch": prog.arch, "ptx": prog.ptx, "log": prog.log,
            "cubin": prog.cubin is not None,
            "kernels": rtc_common.kernel_rows(prog.kernels.values())}
    blobs = [(".cubin", prog.cubin)] if prog.cubin is not None else []
    rtc_common.store_entry(_cache, "cuda", key, meta, blobs)


def _load_cached(key, source, arch, options, name_expressions, version) -> Program | None:
    def build(meta, read):
        cubin = read(".cubin") if meta["cubin"] else None
        if meta["cubin"] and cubin is None:
            return None
        kernels = rtc_common.kernels_from_rows(meta["kernels"], KernelInfo, ParamInfo)
        return Program(source, arch, options, name_expressions, str(meta["ptx"]), cubin,
                       str(meta["log"]), kernels, version, from_cache=True)
    return rtc_common.load_entry(_cache, "cuda", key, FORMAT, arch, build)

"""Offline CUDA compilation with NVRTC: source -> PTX (+ cubin) and each
kernel's parameters, reflected by the compiler, cached on disk.

Kernels are found by the signature parser; each one (and each template
instantiation asked for by a name expression) gets a reflection table from
ql_reflect.cuh (gpu/reflect.py), appended after the user's source so the
user's line numbers stay as written. The tables are read back from the PTX
and cross-checked against the kernels' ``.entry`` parameter lists (ptx.py).

A kernel the parser sees that the preprocessor removes (``#if 0``, an
``#ifdef`` not taken) makes its table fail to compile with "is undefined";
those kernels are dropped and the source compiled once more.
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import cache as cache_mod, compile_hints
from ...errors import CompileError
from ...options import check_nvrtc
from ...host_code import device_part
from ...signature import strip_comments
from ..gpu import compile_cache, expressions, kernel_table, reflect
from ..gpu.arguments import check_arch, check_compile_args
from ..gpu.diagnostics import LogStyle
from ..gpu.headers import headers as gpu_headers
from ..gpu.kernel_table import KernelInfo, ParamInfo
from ..gpu.reflect import REFLECT_FILE
from . import nvrtc, ptx
from .nvrtc import arch_for

__all__ = ["Program", "KernelInfo", "ParamInfo", "compile", "arch_for"]

FORMAT = "cuda-program-1"
FILENAME = "kernel.cu"
INCLUDE_DIR = Path(__file__).parent / "include"
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b", re.M)
_PRE_INCLUDE = ("--pre-include", "-include")
# cuda_fp16.h and cuda_bf16.h (NVRTC's own, bundled with it) are pre-included,
# so that __half, __half2, __nv_bfloat16, __nv_bfloat162 and their functions
# need no #include, as on the CPU and HIP devices (one behaviour everywhere;
# a user's own #include of them still works: both have include guards). Only
# when the source (comments aside) or a name expression mentions the family,
# "half" for cuda_fp16.h (__half, half2, __float2half, ...) and "bfloat16" for
# cuda_bf16.h (__nv_bfloat16, __float2bfloat16, ...): pre-including both
# always costs about 60% more per compile of a small kernel (NVRTC 13.5,
# 40 -> 63 ms). So a header of the user's own, on disk, that uses the types
# without including them gets them only when the source mentions them too.
# The pre-includes are in the compile cache key.
_IMPLICIT = (("half", "cuda_fp16.h"), ("bfloat16", "cuda_bf16.h"))
_LOG = LogStyle(r"^" + re.escape(FILENAME) + r"\((\d+)\): ", r"line \1: ",
                r"^" + re.escape(REFLECT_FILE) + r"\((\d+)\): ")
_cache = cache_mod.CompileCache()


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
        self.kernels: dict[str, KernelInfo] = kernel_table.KernelTable(
            (k.name, k) for k in kernels)
        self.nvrtc_version: tuple[int, int] = tuple(nvrtc_version)
        self.from_cache = from_cache

    def __repr__(self) -> str:
        return (f"<quicklaunch.cuda.Program {self.arch}: {len(self.kernels)} kernels, "
                f"{'cubin ' + str(len(self.cubin)) + ' bytes' if self.cubin else 'PTX only'}>")


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


def compile(source: str, arch: str = "sm_90", options=(), name_expressions=()) -> Program:
    """Compile CUDA C++ `source` with NVRTC for `arch` (``sm_XX``: cubin and
    PTX; ``compute_XX``: PTX only). Kernels and their parameters are in
    ``.kernels``; template kernels only through ``name_expressions``."""
    options, name_expressions = check_compile_args(
        source, options, name_expressions, "CUDA C++", r"-(-gpu-architecture|arch)\b")
    check_nvrtc(options, source)   # the allow-list (quicklaunch/options.py)
    source = device_part(source)
    lib = nvrtc.load()
    check_arch(lib, arch, source, options)
    headers = gpu_headers(INCLUDE_DIR)
    pre = implicit_includes(source, name_expressions)
    key = compile_cache.key(FORMAT, source, options, name_expressions, arch,
                            f"nvrtc {lib.version[0]}.{lib.version[1]}"
                            + "".join(f" {o}" for o in pre), headers)
    prog = _load_cached(key, source, arch, options, name_expressions, lib.version)
    if prog is None:
        with compile_cache.miss_lock(_cache, "cuda", key):   # one compile per node
            prog = _load_cached(key, source, arch, options, name_expressions, lib.version)
            if prog is None:
                try:
                    prog = _compile(lib, key, source, arch, options, name_expressions,
                                    headers, pre)
                except CompileError as exc:   # what it means (compile_hints.py)
                    better = compile_hints.explain(exc, source, "NVRTC")
                    if better is exc:
                        raise
                    raise better from None
    return prog


def implicit_includes(source: str, name_expressions=()) -> list[str]:
    """The --pre-include options a compile of `source` gets (see _IMPLICIT)."""
    text = "\n".join([strip_comments(source), *name_expressions])
    return [f"--pre-include={h}" for word, h in _IMPLICIT if word in text]


def _compile(lib, key, source, arch, options, name_expressions, headers, pre=()) -> Program:
    decls, exprs, given = expressions.to_reflect(source, options, name_expressions)
    full = [f"-arch={arch}", *pre, *options]
    bundled = []
    if (pre or _INCLUDE.search(strip_comments(source))
            or any(o.startswith(_PRE_INCLUDE) for o in options)):
        bundled = lib.bundled_include(_cache)
        full += bundled
    command = ("nvrtc", *full)
    result, exprs = expressions.compile_dropping_removed(
        lambda exprs: lib.compile(source + reflect.tables(exprs), FILENAME, full, headers,
                                  exprs, cubin=arch.startswith("sm_")),
        exprs, given, _reflection_errors, nvrtc.COMPILATION, "NVRTC", arch,
        lambda what, log, exprs: _LOG.error(what, _bundled_named(log, bundled), source,
                                            options, command, exprs))
    try:
        kernels = _reflect(result, decls, exprs)
    except reflect.ReflectError as exc:
        raise _LOG.error(f"kernel parameters could not be reflected: {exc}", result.log,
                         source, options, command, exprs) from None
    prog = Program(source, arch, options, name_expressions, result.ptx, result.cubin,
                   result.log, kernels, lib.version)
    _store(key, prog)
    return prog


def _bundled_named(log: str, bundled: list[str]) -> str:
    """The log with the cache folder NVRTC's bundled headers were extracted
    to shown as <nvrtc>/ (a header's place, not a path into the cache)."""
    for opt in sorted(bundled, key=len, reverse=True):
        log = log.replace(opt[2:].rstrip("/") + "/", "<nvrtc>/")
    return log


def _reflect(result, decls, exprs) -> list[KernelInfo]:
    """Each kernel's table, read from the PTX and checked against its .entry."""
    entries = ptx.entries(result.ptx)

    def resolve(i, e, layout):
        symbol = result.lowered[e]
        if symbol not in entries:
            raise reflect.ReflectError(f"kernel '{e}' ({symbol}) has no .entry in the PTX")
        ptx.check(e, layout, entries[symbol])
        return symbol
    return reflect.kernels(decls, exprs, lambda name: ptx.global_words(result.ptx, name),
                           "the PTX", resolve)


def _store(key: str, prog: Program) -> None:
    meta = {"format": FORMAT, "arch": prog.arch, "ptx": prog.ptx, "log": prog.log,
            "cubin": prog.cubin is not None,
            "kernels": kernel_table.to_rows(prog.kernels.values())}
    blobs = [(".cubin", prog.cubin)] if prog.cubin is not None else []
    compile_cache.store_entry(_cache, "cuda", key, meta, blobs)


def _load_cached(key, source, arch, options, name_expressions, version) -> Program | None:
    def build(meta, read):
        cubin = read(".cubin") if meta["cubin"] else None
        if meta["cubin"] and cubin is None:
            return None
        return Program(source, arch, options, name_expressions, str(meta["ptx"]), cubin,
                       str(meta["log"]), kernel_table.from_rows(meta["kernels"]), version,
                       from_cache=True)
    return compile_cache.load_entry(_cache, "cuda", key, FORMAT, arch, build)

"""Builds a CPU kernel module: the user's source, the CUDA shim and a
generated kernel table, compiled by the host C++ compiler, cached on disk.
"""
from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path

from ... import cache as cache_mod
from ...errors import CompileError
from ...signature import KernelDecl
from . import loader, toolchain

_lock = threading.Lock()
_loaded: dict[str, tuple] = {}   # cache key -> (library, kernels): one dlopen per process
_cache = cache_mod.CompileCache()
_MAX_LOG = 8000


def translation_unit(source: str, exprs: list[str], filename: str) -> str:
    """The C++ the host compiler sees: shim, the user's source with line
    numbers of its own, then one table row per kernel expression."""
    rows = "".join(f'QL_KERNEL("{e}", &{e})\n' for e in exprs)
    return (f'#include "cuda_shim.h"\n#line 1 "{filename}"\n{source}\n'
            f'#line 1 "<quicklaunch kernel table>"\n#include "ql_cpu_export.h"\n'
            f"QL_MODULE_BEGIN\n{rows}QL_MODULE_END({len(exprs)})\n")


def kernel_expressions(decls: list[KernelDecl], name_expressions: tuple[str, ...]) -> list[str]:
    """Non-template kernels by qualified name, then the requested name
    expressions (template instantiations) not already present."""
    exprs = [d.name for d in decls if d.template is None]
    for e in name_expressions:
        e = " ".join(e.split())
        if e not in exprs:
            exprs.append(e)
    return exprs


def _numbered(source: str) -> str:
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def _compile_error(what: str, log: str, source: str, options, command, origin: str,
                   filename: str) -> CompileError:
    shown = log if len(log) <= _MAX_LOG else log[:_MAX_LOG] + "\n[... log truncated]"
    # Point at the user's lines: "kernel.cu:12:5: error" -> "line 12:5: error".
    shown = re.sub(re.escape(filename) + r":(\d+):(\d+):", r"line \1:\2:", shown)
    message = (f"{what}{origin}\n\ncompiler output:\n{shown}\n\nsource:\n{_numbered(source)}"
               f"\n\noptions: {list(options)}")
    return CompileError(message, log=log, source=source, options=tuple(options),
                        command=tuple(command))


def build(source: str, decls: list[KernelDecl], options: tuple[str, ...],
          name_expressions: tuple[str, ...], debug: bool, origin: str = "",
          filename: str = "kernel.cu"):
    """Compiles (or finds in the cache) and loads a module.

    Returns (library, [loader.LoadedKernel], table expressions)."""
    compiler = toolchain.find_compiler()
    exprs = kernel_expressions(decls, name_expressions)
    for e in exprs:
        if '"' in e or "\\" in e or "\n" in e:
            raise CompileError(f"invalid name expression {e!r}", source=source,
                               options=options)
    tu = translation_unit(source, exprs, filename)
    command = toolchain.build_command(compiler, Path("module.cpp"), Path("module.so"),
                                      options, debug)
    key = cache_mod.cache_key("cpu", tu, "\0".join(command), compiler.identity,
                              toolchain.headers_digest_material())
    with _lock:
        hit = _loaded.get(key)
        if hit:
            return hit
        path = _cache.get("cpu", key, ".so")
        result = None
        if path is not None:
            try:
                result = loader.load(str(path))
            except (OSError, ValueError):
                result = None   # unloadable entry: a miss, rebuilt below
        if result is None:
            data = _compile(tu, compiler, options, debug, source, origin, filename, key)
            path = _cache.put("cpu", key, ".so", data)
            try:
                result = loader.load(str(path))
            except (OSError, ValueError) as exc:
                raise CompileError(f"the compiled module could not be loaded: {exc}",
                                   source=source, options=options) from None
        lib, kernels = result
        _loaded[key] = (lib, kernels, exprs)
        return _loaded[key]


def _compile(tu: str, compiler, options, debug, source, origin, filename, key) -> bytes:
    with tempfile.TemporaryDirectory(prefix="quicklaunch-") as tmp:
        # Fixed names inside a private directory keep the output identical
        # across processes compiling the same module.
        src, out = Path(tmp, f"{key[:16]}.cpp"), Path(tmp, f"{key[:16]}.so")
        src.write_text(tu)
        command = toolchain.build_command(compiler, src, out, options, debug)
        status, log = toolchain.run_compiler(command, Path(tmp))
        if status != 0 or not out.exists():
            raise _compile_error("kernel source failed to compile for the CPU device",
                                 log, source, options, command, origin, filename)
        return out.read_bytes()

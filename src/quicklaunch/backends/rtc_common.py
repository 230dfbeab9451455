"""What the two runtime-compiler backends (cuda/: NVRTC, hip/: hiprtc) do
the same way, kept in one place:

- checking the arguments of ``compile`` (:func:`check_compile_args`);
- the compile loop that drops kernels the preprocessor removed and says why
  a compilation failed (:func:`compile_dropping_removed`), and the
  CompileError it raises (:func:`compile_error`);
- the compile cache entries: a ``.json`` of metadata plus binary blobs
  (:func:`store_entry`, :func:`load_entry`, :func:`kernel_rows`,
  :func:`kernels_from_rows`);
- opening the compiler library: ``$QUICKLAUNCH_...`` first, then the
  candidates in order (:func:`open_library`, :func:`find_library`).

Each backend keeps its own cache format, cache key, diagnostics parsing and
wording; what differs is passed in, so messages and cache entries stay as
they were.
"""
from __future__ import annotations

import json
import os
import re

from ..errors import CompileError

MAX_LOG = 8000


# ------------------------------------------------------------ arguments
def check_compile_args(source, options, name_expressions, language: str, arch_option: str):
    """(options, name_expressions) as tuples, after checking them; ``language``
    names what ``source`` must be ("CUDA C++"), ``arch_option`` is a regular
    expression for the options that would set the architecture."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of {language}, got {type(source).__name__}")
    options = (options,) if isinstance(options, str) else tuple(options)
    name_expressions = ((name_expressions,) if isinstance(name_expressions, str)
                        else tuple(name_expressions))
    for opt in options + name_expressions:
        if not isinstance(opt, str):
            raise TypeError(f"options and name expressions are strings, got {opt!r}")
    for e in name_expressions:
        if not e.strip() or any(c in e for c in '"\\\n;{}'):
            raise CompileError(f"invalid name expression {e!r}", source=source, options=options)
    for opt in options:
        if re.match(arch_option, opt):
            raise CompileError(f"option {opt!r}: pass the architecture as arch=, not as an "
                               f"option", source=source, options=options)
    return options, name_expressions


# ------------------------------------------------------------ errors
def numbered(source: str) -> str:
    """``source`` with right-aligned line numbers, for messages."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def truncate_log(log: str) -> str:
    return log if len(log) <= MAX_LOG else log[:MAX_LOG] + "\n[... log truncated]"


def name_reflection_rows(shown: str, pattern: str, exprs) -> str:
    """Diagnostics at line N of the reflection rows (``pattern``, anchored at a
    line start, captures N) credited to the N-th kernel instead."""
    return re.sub(pattern,
                  lambda m: (f"kernel '{exprs[int(m.group(1)) - 1]}' (reflection): "
                             if 0 < int(m.group(1)) <= len(exprs) else m.group(0)),
                  shown, flags=re.M)


def compile_error(what: str, shown: str, log: str, source: str, options,
                  command) -> CompileError:
    """The CompileError of a failed compilation; ``shown`` is the compiler's
    log as the message shows it, ``log`` the one kept on the exception."""
    message = (f"{what}\n\ncompiler output:\n{shown.rstrip()}\n\nsource:\n{numbered(source)}"
               f"\n\noptions: {list(options)}")
    return CompileError(message, log=log, source=source, options=tuple(options),
                        command=tuple(command))


# ------------------------------------------------------------ compile loop
def compile_dropping_removed(run, exprs: list[str], given: set[str], reflection_errors,
                             compilation: int, compiler: str, arch: str, fail):
    """Compile with ``run(exprs)`` until it succeeds; (result, exprs).

    A kernel the parser saw but the preprocessor removed (``#if 0``) fails
    only in its reflection row with "not there" (``reflection_errors(log,
    n)`` -> {row: missing} or None); unless its name expression was
    ``given``, it is left out and the source compiled once more. Any other
    failure raises ``fail(what, log, exprs)``."""
    while True:
        result = run(exprs)
        if result.ok:
            return result, exprs
        rows = (reflection_errors(result.log, len(exprs))
                if result.status == compilation else None)
        gone = {i for i, missing in (rows or {}).items()
                if missing and _normalize(exprs[i]) not in given}
        if gone:   # kernels the preprocessor removed (#if 0): leave them out, once more
            exprs = [e for i, e in enumerate(exprs) if i not in gone]
            continue
        if result.status != compilation:
            what = f"{compiler} refused the compilation ({result.error})"
        elif rows:
            names = ", ".join(repr(exprs[i]) for i in sorted(rows))
            what = (f"{names} could not be resolved to a single __global__ function (or "
                    f"template instantiation) of the source")
        else:
            what = f"kernel source failed to compile with {compiler} for {arch}"
        raise fail(what, result.log, exprs)


def _normalize(name: str) -> str:
    from ..signature import normalize_name
    return normalize_name(name)


# ------------------------------------------------------------ compile cache
def kernel_rows(kernels) -> list:
    """KernelInfo objects as the cache's JSON rows."""
    return [[k.name, k.lowered_name, k.line,
             [[p.name, p.ctype, p.size, p.align, p.kind] for p in k.params]]
            for k in kernels]


def kernels_from_rows(rows, kernel_info, param_info) -> list:
    """The cache's JSON rows back as ``kernel_info`` objects (TypeError or
    ValueError when damaged)."""
    return [kernel_info(str(name), str(symbol), tuple(
                param_info(str(p), str(ctype), int(size), int(align), int(kind))
                for p, ctype, size, align, kind in params), int(line))
            for name, symbol, line, params in rows]


def store_entry(cache, namespace: str, key: str, meta: dict, blobs=()) -> None:
    """Write the ``blobs`` ((suffix, bytes) pairs), then ``meta`` as the
    entry's ``.json``; an unwritable cache is ignored."""
    try:
        for suffix, data in blobs:
            cache.put(namespace, key, suffix, data)
        cache.put(namespace, key, ".json", json.dumps(meta).encode())
    except OSError:
        pass   # an unwritable cache costs a recompile next time, nothing else


def load_entry(cache, namespace: str, key: str, fmt: str, arch: str, build):
    """``build(meta, read)`` for the cached entry of ``key`` (``read(suffix)``
    reads one of its blobs, None when missing), or None: no entry, another
    format or arch, or a damaged one (compiled again and rewritten)."""
    data = cache.read(namespace, key, ".json")
    if data is None:
        return None
    try:
        meta = json.loads(data)
        if meta["format"] != fmt or meta["arch"] != arch:
            return None
        return build(meta, lambda suffix: cache.read(namespace, key, suffix))
    except (ValueError, KeyError, TypeError):
        return None   # a damaged entry is a miss: compiled again and rewritten


# ------------------------------------------------------------ the library
def open_library(cls, path: str):
    """``cls(path)``; OSError (naming ``path``) when it does not load."""
    try:
        return cls(path)
    except (OSError, AttributeError) as exc:
        raise OSError(str(exc) if path in str(exc) else f"{path}: {exc}") from None


def find_library(env_var: str, open_fn, candidates, explicit_error, not_found):
    """The library at ``$env_var`` when set (else CompileError
    ``explicit_error(value, exc)``), or the first of ``candidates()`` that
    ``open_fn`` opens (else CompileError ``not_found(detail)``)."""
    explicit = os.environ.get(env_var)
    if explicit:
        try:
            return open_fn(explicit)
        except OSError as exc:
            raise CompileError(explicit_error(explicit, exc)) from None
    tried = []
    for path in candidates():
        try:
            return open_fn(path)
        except OSError as exc:
            tried.append(str(exc))
    detail = ("; tried: " + "; ".join(tried)) if tried else ""
    raise CompileError(not_found(detail))

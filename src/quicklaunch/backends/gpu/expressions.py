"""Which kernels a GPU compilation reflects, and the compile loop that
leaves out the ones the preprocessor removed.

The signature parser finds the ``__global__`` functions of a source; every
non-template kernel is reflected by its qualified name, then each name
expression the caller gave ("scale<float, 5>") that is not already there
(the same rule as the CPU device). A kernel the parser saw that the
preprocessor removed (``#if 0``, an ``#ifdef`` not taken) fails only in its
reflection row; it is left out and the source compiled once more.
"""
from __future__ import annotations

from ...errors import CompileError
from ...signature import (KernelDecl, SignatureError, kernel_expressions, normalize_name,
                          parse_kernels)

__all__ = ["to_reflect", "expressions", "base", "compile_dropping_removed"]


def to_reflect(source: str, options, name_expressions):
    """(decls, exprs, given): the parsed kernels, the expressions to reflect
    and the normalized name expressions given; CompileError when the
    signatures cannot be read."""
    try:
        decls = parse_kernels(source)
    except SignatureError as exc:
        raise CompileError(f"could not read the kernels' signatures: {exc}",
                           source=source, options=options) from None
    return (decls, expressions(decls, name_expressions),
            {normalize_name(e) for e in name_expressions})


def expressions(decls: list[KernelDecl], name_expressions) -> list[str]:
    """The kernels the source defines, then the name expressions not
    already there (signature.kernel_expressions: one rule for every device)."""
    return kernel_expressions(decls, name_expressions)


def base(expr: str) -> str:
    """The kernel's qualified name in a name expression ("&ns::k<int>" -> "ns::k")."""
    return normalize_name(expr).lstrip("&").lstrip(":").split("<")[0]


def compile_dropping_removed(run, exprs: list[str], given: set[str], reflection_errors,
                             compilation: int, compiler: str, arch: str, fail):
    """Compile with ``run(exprs)`` until it succeeds; (result, exprs).

    A kernel the parser saw but the preprocessor removed fails only in its
    reflection row with "not there" (``reflection_errors(log, n)`` ->
    {row: missing} or None); unless its name expression was ``given``, it is
    left out and the source compiled once more. Any other failure raises
    ``fail(what, log, exprs)``."""
    while True:
        result = run(exprs)
        if result.ok:
            return result, exprs
        rows = (reflection_errors(result.log, len(exprs))
                if result.status == compilation else None)
        gone = {i for i, missing in (rows or {}).items()
                if missing and normalize_name(exprs[i]) not in given}
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

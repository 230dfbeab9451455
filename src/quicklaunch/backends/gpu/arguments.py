"""Checking what a GPU backend's ``compile`` is given: the source, the
compiler options and the name expressions (template instantiations to
compile and reflect), and the architecture against what the compiler
library knows."""
from __future__ import annotations

import re

from ...errors import CompileError

__all__ = ["check_compile_args", "check_arch"]


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


def check_arch(lib, arch: str, source: str, options) -> None:
    """CompileError unless the compiler library ``lib`` can compile for
    ``arch`` (its ``arch_error(arch)`` says why not, or None)."""
    problem = lib.arch_error(arch)
    if problem:
        raise CompileError(problem, source=source, options=options)

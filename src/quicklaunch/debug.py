"""Debug mode's launch path: a real Python function per kernel.

With ``ql.compile(..., debug=True)`` or ``QUICKLAUNCH_DEBUG=1`` every launch
goes through a function named after the kernel whose parameters are the
kernel's own (``saxpy(a, x, y, n)``), whose code object points at the file
and line where the kernel's source lives. pdb can stop in it, a traceback
through a failing launch shows a frame named ``saxpy`` with the argument
values, and profilers attribute time per kernel. The choice is made when the
kernel is created: the fast path never tests a flag.
"""
from __future__ import annotations

import keyword
import linecache
import re

__all__ = ["make_stub", "python_location", "source_start"]


def _identifier(name: str, taken: set[str]) -> str:
    ident = re.sub(r"\W", "_", name) or "arg"
    if ident[0].isdigit() or keyword.iskeyword(ident) or ident.startswith("__ql_"):
        ident += "_"
    while ident in taken:
        ident += "_"
    taken.add(ident)
    return ident


def make_stub(kernel, run, filename: str, line: int):
    """A function ``<kernel name>(<parameter names>)`` that launches ``run``
    (a configured launch function) with its arguments, by position."""
    taken: set[str] = set()
    names = [_identifier(p.name, taken) for p in kernel.params]
    args = ", ".join(names)
    source = (f"def stub({args}):\n"
              f"    return __ql_run({args})\n")
    namespace = {"__ql_run": run}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - names are sanitised
    stub = namespace["stub"]
    code = stub.__code__.replace(co_name=kernel.name, co_filename=filename,
                                 co_firstlineno=max(line, 1))
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=kernel.name)
    stub.__code__ = code
    stub.__name__ = stub.__qualname__ = kernel.name
    stub.__doc__ = (f"Launches kernel {kernel.name} ({kernel.device.name}); parameters "
                    + ", ".join(f"{p.ctype} {p.name}" for p in kernel.params))
    stub.__self__ = getattr(run, "__self__", None)  # the Launcher, as on the fast path
    return stub


def source_start(source: str, file: str, call_line: int) -> int | None:
    """The line of the Python file where the source string's line 1 sits:
    its first non-empty line is looked for in the file (the last match at or
    before the ql.compile call); None when it cannot be found."""
    lines = source.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or not file or file.startswith("<"):
        return None
    wanted = lines[first].strip()
    text = linecache.getlines(file)
    starts = [i + 1 for i, ln in enumerate(text)
              if ln.strip() == wanted or ln.rstrip().endswith(wanted)]
    before = [s for s in starts if s <= call_line] or starts
    return before[-1] - first if before else None


def python_location(source: str, file: str, call_line: int, kernel_line: int) -> tuple[str, int]:
    """The file and line of a kernel's declaration inside the Python file
    that holds the source; the ql.compile call when that is not found."""
    start = source_start(source, file, call_line)
    return (file, call_line) if start is None else (file, start + kernel_line - 1)

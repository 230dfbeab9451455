"""The CompileError of a failed GPU compilation: what went wrong, the
compiler's log with its places said in the user's terms ("line 3: ",
"kernel 'k' (reflection): "), the source with line numbers and the options.

Each backend describes how its compiler's log names places (a
:class:`LogStyle`); the message is built the same way for both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import CompileError

__all__ = ["LogStyle", "numbered", "truncate_log", "compile_error", "MAX_LOG"]

MAX_LOG = 8000


def numbered(source: str) -> str:
    """``source`` with right-aligned line numbers, for messages."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def truncate_log(log: str) -> str:
    return log if len(log) <= MAX_LOG else log[:MAX_LOG] + "\n[... log truncated]"


def compile_error(what: str, shown: str, log: str, source: str, options,
                  command) -> CompileError:
    """The CompileError of a failed compilation; ``shown`` is the compiler's
    log as the message shows it, ``log`` the one kept on the exception."""
    message = (f"{what}\n\ncompiler output:\n{shown.rstrip()}\n\nsource:\n{numbered(source)}"
               f"\n\noptions: {list(options)}")
    return CompileError(message, log=log, source=source, options=tuple(options),
                        command=tuple(command))


@dataclass(frozen=True)
class LogStyle:
    """How a compiler's log names places: ``source_place`` (a regular
    expression anchored at a line start) is a place in the user's source,
    shown as ``source_shown`` (a replacement: r"line \\1: "); ``table_place``
    is a place in the reflection rows, its group 1 the row (so the N-th
    kernel)."""
    source_place: str
    source_shown: str
    table_place: str

    def error(self, what: str, log: str, source: str, options, command,
              exprs=()) -> CompileError:
        shown = re.sub(self.source_place, self.source_shown, truncate_log(log), flags=re.M)
        shown = re.sub(self.table_place,
                       lambda m: (f"kernel '{exprs[int(m.group(1)) - 1]}' (reflection): "
                                  if 0 < int(m.group(1)) <= len(exprs) else m.group(0)),
                       shown, flags=re.M)
        return compile_error(what, shown, log, source, options, command)

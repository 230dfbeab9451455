"""What a failed compile means in the user's terms, where the compiler's
own log cannot say it: every device passes its CompileError through
`explain` (on a failure only; a compile that succeeds pays nothing).

* Texture and surface references (texture_refs.py).
* A '{' never closed: the compiler reads on into the code quicklaunch
  appends after the user's source (the CPU device's kernel table, the GPUs'
  reflection rows) and reports errors there ("namespace definition is not
  allowed here" in ql_cpu_export.h). The message then starts with the
  user's line of the unclosed brace, and, where the indentation shows it,
  the brace that most likely lacks its '}'.
"""
from __future__ import annotations

import re

from . import texture_refs
from .errors import CompileError
from .signature import strip_comments

# Places in quicklaunch's own appended code, as each compiler's log names them
_APPENDED = re.compile(r"<quicklaunch kernel table>|<quicklaunch kernel addresses>|"
                       r"<quicklaunch reflection>|ql_cpu_export\.h|ql_reflect\.cuh|"
                       r"\(reflection\)|__ql_kernel_\d")
_LITERAL = re.compile(r'(?:u8|[uUL])?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)"'
                      r'|(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"|(?:u8|[uUL])?\'(?:\\.|[^\'\\\n])*\'',
                      re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)


def _blank(m: re.Match) -> str:
    return re.sub(r"[^\n]", " ", m.group())


def braces(source: str):
    """(unclosed, stray, suspect) for `source`: the '{' left open at its end
    and the '}' that close nothing, each as (line, indent); `suspect` is the
    '{' most likely missing its '}' (closed by a '}' indented like an outer
    brace's line), or None."""
    code = _DIRECTIVE.sub(_blank, _LITERAL.sub(_blank, strip_comments(source)))
    lines = code.split("\n")
    stack, stray, suspect = [], [], None
    for n, text in enumerate(lines, 1):
        indent = len(text) - len(text.lstrip(" \t"))
        for col, ch in enumerate(text):
            if ch == "{":
                stack.append((n, indent))
            elif ch == "}":
                if not stack:
                    stray.append((n, indent))
                    continue
                opened = stack.pop()
                alone = not text[:col].strip()
                # a '}' alone on its line, indented like an outer open brace's line
                # and not like the one it closes: that one lacks its own '}'
                if alone and indent != opened[1] and suspect is None and \
                        any(o[1] == indent for o in stack):
                    suspect = (opened, n)
    return stack, stray, suspect


def unclosed_message(source: str) -> str | None:
    unclosed, stray, suspect = braces(source)
    if unclosed:
        line = unclosed[0][0]
        text = (f"line {line}: a '{{' on this line is never closed: the source ends inside it, "
                f"so the compiler read on into the code quicklaunch appends after it (the "
                f"errors below in quicklaunch's own code follow from this one); add the "
                f"missing '}}'")
        if suspect is not None:
            (sline, _), close = suspect
            text += (f", most likely for the '{{' on line {sline} (the '}}' on line {close} "
                     f"that closes it is indented like an enclosing block)")
        return text
    if stray:
        return f"line {stray[0][0]}: this '}}' closes no '{{'"
    return None


def explain(exc: CompileError, source: str, device: str) -> CompileError:
    """`exc` itself, or a CompileError that first says what the failure
    means (the compiler's message after it)."""
    better = texture_refs.explain(exc, source, device)
    if better is not exc:
        return better
    if not _APPENDED.search(exc.message):
        return exc
    hint = unclosed_message(source)
    if hint is None:
        return exc
    return CompileError(hint + "\n\n" + exc.message, log=exc.log, source=exc.source or source,
                        options=exc.options, command=exc.command)

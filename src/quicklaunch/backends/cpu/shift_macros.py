"""Clamped shifts inside the user's macros (the rest is shifts.py's).

libclang reports a shift that comes out of a macro at the macro's use, not
in its definition, so shifts.py cannot wrap its count. A macro body written
the hygienic way, with its count in parentheses, `((1u << (w)) - 1u)` or
`((x) >> (32 - (r)))`, is rewritten here, in the #define itself, as
`((1u << __ql_clamp((w))) - 1u)`: the parentheses hold the whole count
whenever what follows them binds less tightly than a shift (not `*`, `+`,
`[`, `(`, ...), so the wrap is exact whatever the arguments are, and
ql_shift.h's operators take any left operand (a class keeps its own
operator). Left alone: a count that is not parenthesised (`x << n` with an
argument `a | b` would change meaning), a `>>` that closes template
arguments, and every macro that an #if or #elif line names (the
preprocessor cannot call __ql_clamp).
"""
from __future__ import annotations

import re

from ...signature import strip_comments

WRAP = "__ql_clamp"
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w*)(?P<params>\([^)\n]*\))?",
                     re.M)
_CONDITION = re.compile(r"^[ \t]*#[ \t]*(?:el)?if\b(?:[^\n]*\\\n)*[^\n]*", re.M)
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_]\w*|\.?\d[\w.]*'
                    r"|<<=|>>=|<<|>>|->|\+\+|--|::|##|\\\n|\S")
# after the count's ')': these would make the count longer than the parentheses
_BINDS_TIGHTER = {"*", "/", "%", "+", "-", "[", "(", ".", "->", "++", "--"}


def _logical_end(code: str, start: int) -> int:
    """The end of the directive line starting before `start` (continuations
    with a backslash included)."""
    i = start
    while True:
        j = code.find("\n", i)
        if j < 0:
            return len(code)
        if code[j - 1:j] == "\\":
            i = j + 1
            continue
        return j


def rewrite(source: str) -> tuple[str, int]:
    """(source with the parenthesised counts of its macros' shifts wrapped,
    how many)."""
    code = strip_comments(source)      # same offsets; comments left in `source`
    if "define" not in code or not re.search(r"<<|>>", code):
        return source, 0
    in_conditions = set()
    for m in _CONDITION.finditer(code):
        in_conditions |= set(re.findall(r"[A-Za-z_]\w*", m.group()))
    edits = []
    for m in _DEFINE.finditer(code):
        if m.group("name") in in_conditions:
            continue
        end = _logical_end(code, m.end())
        edits += _body_edits(code, m.end(), end)
    out = source
    for pos, text in sorted(edits, reverse=True):
        out = out[:pos] + text + out[pos:]
    return out, len(edits) // 2


def _body_edits(code: str, start: int, end: int) -> list[tuple[int, str]]:
    toks = [(t.start() + start, t.group()) for t in _TOKEN.finditer(code[start:end])
            if t.group() != "\\\n"]
    edits = []
    angle = 0    # '<' not closed yet: a '>>' may close template arguments
    for k, (pos, t) in enumerate(toks):
        if t == "<":
            angle += 1
        elif t == ">":
            angle = max(0, angle - 1)
        if t not in ("<<", ">>", "<<=", ">>="):
            continue
        if t == ">>" and angle:
            angle = max(0, angle - 2)
            continue
        if k == 0 or k + 1 >= len(toks) or toks[k + 1][1] != "(":
            continue
        close = _matching(toks, k + 1)
        if close is None:
            continue
        after = toks[close + 1][1] if close + 1 < len(toks) else ""
        if after in _BINDS_TIGHTER:
            continue
        edits += [(toks[k + 1][0], WRAP + "("), (toks[close][0] + 1, ")")]
    return edits


def _matching(toks, i: int) -> int | None:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][1] == "(":
            depth += 1
        elif toks[j][1] == ")":
            depth -= 1
            if depth == 0:
                return j
    return None

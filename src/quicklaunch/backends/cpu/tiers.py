"""Which tier each kernel of a CPU module runs in.

A kernel runs as a loop over its block's threads (tier 1) unless it, or a
function, type or variable it names (transitively), uses a barrier, a warp
function or cooperative groups (TIER2_NAMES): then every CUDA thread is a
fiber (tier 2). One unused helper with `__syncthreads` in an included header
no longer makes the module's elementwise kernels fibers.

The input is the scan's preprocessed user text (macros expanded, `#if`s
decided, the shim's and the system's headers left out). It is split into its
top-level declarations (namespace and `extern "C"` blocks are looked
through); each declaration names one or more identifiers and mentions
others. A kernel reaches every declaration that a name it mentions names, and
so on. The analysis errs one way only: anything it cannot attribute (an
operator, a declaration it cannot name) that uses a tier-2 name is reached
by every kernel, and overloads and same-named members are all reached
together. A kernel it wrongly leaves in tier 1 would fail at its first
barrier, not run wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...signature import TIER2_NAMES

_TOKEN = re.compile(r"""
    (?P<str>(?:u8|[uUL])?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)"
           |(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"
           |(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>::|->|\S)
""", re.S | re.X)
_LINE_MARKER = re.compile(r"^\s*#.*$", re.M)
_TAGS = {"struct", "class", "union", "enum"}
_NOT_NAMES = {"const", "volatile", "static", "inline", "extern", "constexpr", "void", "int",
              "unsigned", "signed", "char", "short", "long", "float", "double", "bool",
              "auto", "typename", "template", "virtual", "explicit", "friend", "mutable",
              "register", "thread_local", "__restrict__", "__restrict", "__global__",
              "__attribute__", "alignas", "decltype", "typedef", "noexcept", "final",
              "override", "public", "private", "protected"} | _TAGS
_OPEN = {"(": ")", "[": "]", "{": "}"}


@dataclass
class _Decl:
    names: set[str] = field(default_factory=set)
    mentions: set[str] = field(default_factory=set)
    everywhere: bool = False      # reached by every kernel (cannot be named)

    @property
    def tier2(self) -> bool:
        return not self.mentions.isdisjoint(TIER2_NAMES)


def _tokens(text: str) -> list[tuple[str, str]]:
    text = _LINE_MARKER.sub("", text)
    return [(m.lastgroup, m.group()) for m in _TOKEN.finditer(text)]


def _close(toks: list[tuple[str, str]], i: int) -> int:
    """Index just past the bracket group that opens at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j][1]
        if t in _OPEN:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j + 1
    return len(toks)


def _head(span: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The declaration's tokens before its body, template headers and
    attributes removed, bracket groups other than the first parameter list
    kept as single tokens."""
    out, i = [], 0
    while i < len(span):
        kind, t = span[i]
        if t == "{":
            break
        if t == "template" and i + 1 < len(span) and span[i + 1][1] == "<":
            depth, j = 0, i + 1
            while j < len(span):
                if span[j][1] == "<":
                    depth += 1
                elif span[j][1] == ">":
                    depth -= 1
                    if depth == 0:
                        break
                elif span[j][1] in ("(", "["):
                    j = _close(span, j) - 1
                j += 1
            i = j + 1
            continue
        if t in ("__attribute__", "alignas", "__declspec", "decltype") and i + 1 < len(span) \
                and span[i + 1][1] == "(":
            i = _close(span, i + 1)
            continue
        out.append((kind, t))
        i += 1
    return out


def _names(span: list[tuple[str, str]]) -> tuple[set[str], bool]:
    """(names a top-level declaration declares, whether it cannot be named)."""
    head = _head(span)
    texts = [t for _, t in head]
    if not texts:
        return set(), True
    if texts[0] == "using":
        if len(texts) > 1 and texts[1] == "namespace":
            return set(), False           # using namespace X; declares nothing
        stop = texts.index("=") if "=" in texts else len(texts)
        return {t for k, t in head[1:stop] if k == "ident"}, False
    if texts[0] == "namespace":          # namespace alias: namespace cg = ...;
        return ({texts[1]} if len(texts) > 1 else set()), False
    if texts[0] == "typedef" or any(t in _TAGS for t in texts[:3]):
        names = {t for k, t in head if k == "ident" and t not in _NOT_NAMES}
        # declarators after a struct's body: struct S {...} s, *p;
        names |= {t for k, t in span[_body_end(span):] if k == "ident"
                  and t not in _NOT_NAMES}
        return names, False
    for i, t in enumerate(texts):
        if t in ("=", "[", ";", "{"):
            break
        if t == "(":
            if "operator" in texts[:i]:
                return set(), True    # reached implicitly, by an expression
            chain, j = set(), i - 1
            while j >= 0 and head[j][0] == "ident" and texts[j] not in _NOT_NAMES:
                chain.add(texts[j])
                if j >= 1 and texts[j - 1] in ("::", "~"):
                    j -= 2 if texts[j - 1] == "::" else 1
                    if j >= 0 and texts[j] == "~":
                        j -= 1
                else:
                    break
            return chain, not chain
    # a variable: the last identifier before its initializer
    names = set()
    for k, t in head:
        if t in ("=", "[", ";", "{", "("):
            break
        if k == "ident" and t not in _NOT_NAMES:
            names = {t}
    return names, not names


def _body_end(span: list[tuple[str, str]]) -> int:
    for i, (_, t) in enumerate(span):
        if t == "{":
            return _close(span, i)
    return len(span)


def declarations(text: str) -> list[_Decl]:
    """The top-level declarations of preprocessed C++ `text`."""
    toks = _tokens(text)
    decls: list[_Decl] = []
    span: list[tuple[str, str]] = []
    transparent = 0                       # open namespace / extern "C" blocks

    def finish():
        nonlocal span
        if span:
            names, everywhere = _names(span)
            decls.append(_Decl(names, {t for k, t in span if k == "ident"}, everywhere))
        span = []

    i = 0
    while i < len(toks):
        kind, t = toks[i]
        if t == "}" and transparent and not span:
            transparent -= 1
            i += 1
            continue
        if t == "{":
            texts = [x for _, x in span]
            if (texts[:1] == ["namespace"] and "=" not in texts) or \
                    (len(texts) == 2 and texts[0] == "extern" and span[1][0] == "str"):
                span, transparent, i = [], transparent + 1, i + 1
                continue
            end = _close(toks, i)
            span.extend(toks[i:end])
            i = end
            head = [x for _, x in _head(span)]
            is_type = any(x in _TAGS for x in head[:3]) or "typedef" in head
            if "(" in head and "=" not in head and not is_type:
                finish()                   # a function definition ends at its body
            continue
        span.append((kind, t))
        i += 1
        if t == ";":
            finish()
    finish()
    return decls


def kernel_tiers(text: str, expressions: list[str]) -> dict[str, int]:
    """1 or 2 for each kernel expression ("ns::k", "k<float, 4>")."""
    decls = declarations(text)
    everywhere = any(d.everywhere and d.tier2 for d in decls)
    by_name: dict[str, list[_Decl]] = {}
    for d in decls:
        for n in d.names:
            by_name.setdefault(n, []).append(d)
    tiers = {}
    for expr in expressions:
        if everywhere:
            tiers[expr] = 2
            continue
        todo = [t for k, t in _tokens(expr) if k == "ident"]
        seen, tier = set(todo), 1
        while todo and tier == 1:
            for d in by_name.get(todo.pop(), ()):
                if d.tier2:
                    tier = 2
                    break
                for m in d.mentions - seen:
                    seen.add(m)
                    todo.append(m)
        tiers[expr] = tier
    return tiers

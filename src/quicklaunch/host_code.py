"""Host code in a kernel source: the device part of a ``.cu`` file is what a
GPU compiler (and the CPU device) compiles; host-only functions (``main``,
launch wrappers, host prototypes) are blanked out and named, so a note can
say what was dropped. Device-neutral: every compile path calls it.

Only top-level function definitions and prototypes (recursing into
namespaces and ``extern "C" { }`` blocks) that carry neither ``__global__``
nor ``__device__`` and are not ``constexpr`` or templates are dropped;
everything else (kernels, device functions, classes, typedefs, globals,
directives, anything inside ``#if``/``#ifdef``) stays as written. Blanked
text becomes spaces with every newline kept, so line numbers stay right.
"""
from __future__ import annotations

from .signature import _preprocess

__all__ = ["drop_host_code"]

_OPEN = {"(": ")", "[": "]", "{": "}"}
_KEEP_WORDS = frozenset({"__global__", "__device__", "constexpr", "consteval",
                         "template", "typedef", "using", "static_assert", "asm",
                         "__asm__", "struct", "class", "union", "enum", "operator"})
_ATTRS = frozenset({"__attribute__", "__align__", "alignas", "__declspec",
                    "__launch_bounds__", "__nv_register_params__"})


def _conditional_spans(directives) -> list[tuple[int, int]]:
    """Source offsets covered by #if/#ifdef/#ifndef blocks, except include guards."""
    spans, stack = [], []
    for i, d in enumerate(directives):
        if not d:
            continue
        word = d[0].text
        if word in ("if", "ifdef", "ifndef"):
            nxt = directives[i + 1] if i + 1 < len(directives) else []
            guard = (word == "ifndef" and len(d) == 2 and len(nxt) >= 2
                     and nxt[0].text == "define" and nxt[1].text == d[1].text)
            stack.append((d[0].pos, guard))
        elif word == "endif" and stack:
            start, guard = stack.pop()
            if not guard:
                spans.append((start, d[0].end))
    return spans


def _function_macros(directives) -> set[str]:
    return {d[1].text for d in directives
            if len(d) > 2 and d[0].text == "define" and d[2].text == "("
            and d[2].pos == d[1].end}


def _host_function_name(head) -> str | None:
    """The name of the host-only function ``head`` declares, or None when it
    is anything else (or a function that must stay)."""
    words = [t.text for t in head]
    if not words or "(" not in words or _KEEP_WORDS.intersection(words):
        return None
    k, depth = 0, 0
    while k < len(head):             # first '(' at depth 0 that is not an attribute's
        t = words[k]
        if t in _ATTRS and k + 1 < len(words) and words[k + 1] == "(":
            depth, k = 0, k + 1
            while k < len(words):
                depth += (words[k] == "(") - (words[k] == ")")
                k += 1
                if depth == 0:
                    break
            continue
        if t == "=":
            return None              # a variable with an initialiser
        if t == "(":
            break
        k += 1
    if k >= len(head) or k == 0 or head[k - 1].kind != "ident":
        return None
    name, m = [words[k - 1]], k - 2
    while m >= 1 and words[m] == "::" and head[m - 1].kind == "ident":
        name.insert(0, words[m - 1])
        m -= 2
    return "::".join(name)


def _close(toks, j: int) -> int:
    """Index just past the bracket group opening at toks[j]."""
    depth = 0
    for k in range(j, len(toks)):
        if toks[k].text in _OPEN:
            depth += 1
        elif toks[k].text in _OPEN.values():
            depth -= 1
            if depth == 0:
                return k + 1
    return len(toks)


def _scan(toks, i: int, stop: int, found: list) -> None:
    """Top-level declarations of toks[i:stop]; host functions go to found."""
    while i < stop:
        start = i
        while i < stop and toks[i].text not in (";", "{", "}"):
            i = _close(toks, i) if toks[i].text in ("(", "[") else i + 1
        if i >= stop:
            return
        head, t = toks[start:i], toks[i].text
        if t == "}":                 # stray closer: leave it be
            i += 1
            continue
        if t == ";":
            name = _host_function_name(head)
            if name:
                found.append((name, start, i))
            i += 1
            continue
        words = [x.text for x in head]
        end = _close(toks, i)
        if words[:1] == ["namespace"] or words[:2] == ["inline", "namespace"] or (
                len(head) == 2 and words[0] == "extern" and head[1].kind == "str"):
            _scan(toks, i + 1, end - 1, found)
            i = end
            continue
        name = None if "=" in words else _host_function_name(head)
        if name:
            found.append((name, start, end - 1))
            i = end
            continue
        i = end                      # a body that stays; run on to its ';' if any
        if "=" in words or {"struct", "class", "union", "enum"} & set(words):
            while i < stop and toks[i].text != ";":
                i = _close(toks, i) if toks[i].text in _OPEN else i + 1
            i += 1


def drop_host_code(source: str) -> tuple[str, list[str]]:
    """``source`` with its host-only functions blanked out (same lines, same
    offsets), and their names in source order."""
    toks, directives = _preprocess(source)
    spans = _conditional_spans(directives)
    macros = _function_macros(directives)
    found: list = []
    _scan(toks, 0, len(toks), found)
    out, names = list(source), []
    for name, a, b in found:
        lo, hi = toks[a].pos, toks[b].end
        if any(s <= lo < e or s < hi <= e for s, e in spans):
            continue
        head_macro = False
        for t in toks[a:b + 1]:
            if t.text in ("{", ";"):
                break
            if t.kind == "ident" and t.text in macros:
                head_macro = True
        if head_macro:
            continue
        for p in range(lo, hi):
            if out[p] not in "\r\n":
                out[p] = " "
        names.append(name)
    return "".join(out), names


def device_part(source: str, stacklevel: int = 3) -> str:
    """``source`` without its host-only functions; when any were dropped, one
    CompileWarning names them (``stacklevel`` as for warnings.warn, counted
    from the caller of this function)."""
    text, names = drop_host_code(source)
    if names:
        import warnings

        from .errors import CompileWarning
        warnings.warn("host code dropped from the kernel source (only its device part is "
                      f"compiled): {', '.join(dict.fromkeys(names))}", CompileWarning,
                      stacklevel=stacklevel)
    return text

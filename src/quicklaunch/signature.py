"""Find the ``__global__`` functions in CUDA C++ source and their parameters.

This is reflection from text only: names and C type spellings, never sizes
(the compiler answers those).  The source goes through a small lexer that
knows comments and string/char/raw-string literals, the object-like macros
the source itself ``#define``s are expanded (other directives are skipped,
not evaluated, so a kernel inside ``#if 0`` is still reported), braces are
tracked to know the enclosing namespaces and ``extern "C"`` blocks, and each
``__global__`` declaration is parsed.

Canonical ``ctype`` form (clang's style): tokens joined by one space, except
that ``*``/``&``/``&&`` bind to what follows (``"float **"``,
``"const float *__restrict__"``, ``"float *const"``) and there is no space
around ``::``, ``<`` or before ``>``, ``,``, ``)``, ``[`` or ``]``
(``"Vec<float, 4> *"``).  Macros keep their source spelling (``"REAL *"``
for ``#define REAL float``).  Arrays decay: ``float x[]`` and ``float x[4]``
give ``"float *"``, ``float x[4][8]`` gives ``"float (*)[8]"``.  Unnamed
parameters are named ``arg0``, ``arg1``, ... by position.  Attributes
(``__attribute__``, ``[[...]]``, ``alignas``, ``__grid_constant__``) and
default arguments are dropped from parameters.

Names are qualified by the enclosing namespaces, inline ones included
(``"v1::k"``), anonymous ones left out; a kernel in ``extern "C"`` inside a
namespace keeps its qualified name (with ``extern_c=True``).

Limitations: ``#if``/``#ifdef`` are not evaluated (kernels in ``#if 0`` are
reported, and may raise SignatureError if malformed); function-like macros
are not expanded, so a kernel declared only through one is not found;
``__global__`` inside class or function braces is ignored; function-pointer
parameters (use a typedef) and variadic kernels raise SignatureError.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["Param", "KernelDecl", "SignatureError", "TIER2_NAMES", "normalize_name",
           "strip_comments", "parse_kernels", "tier2_features", "kernel_expressions",
           "declared_only"]


class SignatureError(ValueError):
    """A ``__global__`` declaration could not be parsed; ``line`` is 1-based."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Param:
    name: str   # as declared, or f"arg{i}" when the declaration leaves it out
    ctype: str  # canonical C type text (see the module docstring)


@dataclass(frozen=True)
class KernelDecl:
    name: str                  # qualified: "ns::inner::k" (anonymous namespaces omitted)
    params: tuple[Param, ...]
    template: str | None       # "typename T, int N"; "" for ``template <>``
    extern_c: bool
    line: int                  # line of ``__global__`` (or of the macro holding it)
    is_definition: bool


TIER2_NAMES = frozenset("""
    __syncthreads __syncthreads_count __syncthreads_and __syncthreads_or __syncwarp
    __shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync
    __shfl __shfl_up __shfl_down __shfl_xor __ballot_sync __ballot
    __any_sync __all_sync __any __all __activemask __match_any_sync __match_all_sync
    __reduce_add_sync __reduce_min_sync __reduce_max_sync __reduce_and_sync
    __reduce_or_sync __reduce_xor_sync cooperative_groups this_thread_block
    tiled_partition this_grid coalesced_threads cub""".split())
# `cub`: CUB's collectives (the CPU device's stand-ins, backends/cpu/include/cub/)
# barrier inside their member functions, which the user's text only names.

# --------------------------------------------------------------------- lexer
_PFX = r"(?:u8|[uUL])?"
_LEX = re.compile(rf"""
    (?P<str>{_PFX}R"(?P<delim>[^()\\\s]{{0,16}})\(.*?\)(?P=delim)"
           |{_PFX}"(?:\\.|[^"\\\n])*"?)
  | (?P<chr>{_PFX}'(?:\\.|[^'\\\n])*'?)
  | (?P<com>//(?:\\\r?\n|[^\n])*|/\*.*?(?:\*/|\Z))
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<nl>\n)
  | (?P<ws>[^\S\n]+|\\\r?\n)
  | (?P<punct>::|\.\.\.|->|&&|\|\||\#\#|\S)
""", re.S | re.X)


class _Tok(NamedTuple):
    kind: str               # str, chr, num, ident, punct (nl only in raw lexing)
    text: str               # text after macro expansion
    pos: int                # offset in the original source (of the macro use)
    end: int
    macro: str | None = None  # outermost macro this token was expanded from
    gid: int = 0            # id of that expansion, and its token count
    gsize: int = 1


def _lex(source: str):
    for m in _LEX.finditer(source):
        if m.lastgroup not in ("com", "ws"):
            yield _Tok(m.lastgroup, m.group(), m.start(), m.end())


def strip_comments(source: str) -> str:
    """Replace // and /* */ comments with spaces, keeping every newline (so line
    numbers and offsets stay the same); literals are left untouched."""
    return _LEX.sub(lambda m: re.sub(r"[^\r\n]", " ", m.group())
                    if m.lastgroup == "com" else m.group(), source)


def _expand(name: str, macros: dict, active: frozenset) -> list[tuple[str, str]]:
    out, active = [], active | {name}
    for kind, text in macros[name]:
        if kind == "ident" and text in macros and text not in active:
            out += _expand(text, macros, active)
        else:
            out.append((kind, text))
    return out


def _preprocess(source: str) -> tuple[list[_Tok], list[list[_Tok]]]:
    """Code tokens with object-like macros expanded, and the directive lines."""
    raw, macros, code, directives = list(_lex(source)), {}, [], []
    i, bol, gid = 0, True, 0
    while i < len(raw):
        t = raw[i]
        if t.kind == "nl":
            bol, i = True, i + 1
        elif bol and t.text == "#":        # a directive runs to the end of its line
            j = i + 1
            while j < len(raw) and raw[j].kind != "nl":
                j += 1
            d = raw[i + 1:j]
            directives.append(d)
            if len(d) >= 2 and d[0].text in ("define", "undef") and d[1].kind == "ident":
                macros.pop(d[1].text, None)
                function_like = len(d) > 2 and d[2].text == "(" and d[2].pos == d[1].end
                if d[0].text == "define" and not function_like:
                    macros[d[1].text] = [(x.kind, x.text) for x in d[2:]]
            i = j
        else:
            bol, i = False, i + 1
            if t.kind == "ident" and t.text in macros and t.text != "__global__":
                gid += 1
                exp = _expand(t.text, macros, frozenset())
                code += [_Tok(k, x, t.pos, t.end, t.text, gid, len(exp)) for k, x in exp]
            else:
                code.append(t)
    return code, directives


def tier2_features(source: str) -> list[str]:
    """Sorted TIER2_NAMES used as identifiers (outside comments and literals,
    in code or in macro bodies), plus "extern __shared__" when the source
    declares a dynamic shared-memory array."""
    code, directives = _preprocess(source)
    seqs = [code] + [d for d in directives if not d or d[0].text != "include"]
    found = set()
    for seq in seqs:
        found |= {t.text for t in seq if t.kind == "ident" and t.text in TIER2_NAMES}
        if any({a.text, b.text} == {"extern", "__shared__"} for a, b in zip(seq, seq[1:])):
            found.add("extern __shared__")
    return sorted(found)


# ------------------------------------------------------------- token helpers
_ATTR_FUNCS = {"__launch_bounds__", "__attribute__", "__declspec", "alignas",
               "__align__", "__maxnreg__", "__cluster_dims__"}
_BARE_ATTRS = {"__grid_constant__", "register", "__launch_bounds__"}
_SPECIFIERS = {"static", "inline", "__inline__", "__forceinline__", "__noinline__",
               "__host__", "__device__", "constexpr", "extern"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict"}
_KEYWORDS = _QUALIFIERS | {"void", "bool", "char", "short", "int", "long", "float",
                           "double", "signed", "unsigned", "wchar_t", "char8_t",
                           "char16_t", "char32_t", "__int128", "auto", "_Bool"}
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_NO_SPACE_BEFORE = {",", ")", "]", ">", "<", "[", "::"}
_NO_SPACE_AFTER = {"(", "[", "<", "::", "*", "&", "&&"}


def _skip(toks: list[_Tok], j: int) -> int:
    """Index just past the bracket group opening at toks[j] (len + 1 if unclosed)."""
    depth = 0
    for k in range(j, len(toks)):
        depth += (toks[k].text in _PAIRS) - (toks[k].text in _PAIRS.values())
        if depth == 0:
            return k + 1
    return len(toks) + 1


def _match_back(toks: list[_Tok], k: int, lo: int, open_: str) -> int:
    """Index of the opener matching the closer toks[k] (lo - 1 if none)."""
    close, depth = toks[k].text, 0
    for m in range(k, lo - 1, -1):
        depth += (toks[m].text == close) - (toks[m].text == open_)
        if depth == 0:
            return m
    return lo - 1


def _drop_attrs(toks: list[_Tok]) -> list[_Tok]:
    out, j = [], 0
    while j < len(toks):
        t, nxt = toks[j].text, toks[j + 1].text if j + 1 < len(toks) else ""
        if (t in _ATTR_FUNCS and nxt == "(") or (t == "[" and nxt == "["):
            j = _skip(toks, j + (t != "["))
        else:
            if t not in _BARE_ATTRS:
                out.append(toks[j])
            j += 1
    return out


def _spell(toks: list[_Tok]) -> str:
    """Canonical text of toks, writing a macro's name where all of it is there."""
    present, done, words = Counter(t.gid for t in toks if t.macro), set(), []
    for t in toks:
        if t.macro and present[t.gid] == t.gsize:
            if t.gid not in done:
                done.add(t.gid)
                words.append(t.macro)
        else:
            words.append(t.text)
    return _join(words)


def _join(words: list[str]) -> str:
    out, prev, before = "", None, None
    for w in words:
        unary = prev in ("-", "+", "~", "!") and before in (None, ",", "<", "(", "[", "=")
        glue = (prev is None or w in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER
                or (prev, w) == (")", "(") or unary)
        out, prev, before = out + ("" if glue else " ") + w, w, prev
    return out


def _split_top(toks: list[_Tok], sep: str) -> list[list[_Tok]]:
    """Split at sep outside (), [], {} and template angle brackets (sep may be "(")."""
    parts, cur, depth, angle = [], [], 0, 0
    for k, t in enumerate(toks):
        if depth == 0 and angle == 0 and t.text == sep:
            parts.append(cur)
            cur = []
            continue
        if t.text in _PAIRS:
            depth += 1
        elif t.text in _PAIRS.values():
            depth -= 1
        elif depth == 0 and t.text == "<" and k and toks[k - 1].kind == "ident":
            angle += 1
        elif depth == 0 and t.text == ">" and angle:
            angle -= 1
        cur.append(t)
    return parts + [cur]


def _type_key(words: list[str]) -> tuple[str, ...]:
    """Type words minus qualifiers that do not change a function's type
    (restrict, top-level const/volatile): matches declarations to definitions."""
    words = [w for w in words if w not in ("__restrict__", "__restrict", "restrict")]
    cut = max((i for i, w in enumerate(words) if w in ("*", "&", "&&", ")")), default=-1)
    return tuple(w for i, w in enumerate(words) if i < cut or w not in ("const", "volatile"))


# -------------------------------------------------------------------- parser
_STAR, _LP, _RP = (_Tok("punct", c, -1, -1) for c in "*()")


def _param(toks: list[_Tok], index: int, where: str, line: int):
    """Parse one parameter; returns (Param, was it named, matching key)."""
    toks = _drop_attrs(_split_top(toks, "=")[0])     # drop `= default`, attributes
    what = f"{where}: parameter {index + 1} ('{_spell(toks)}')"
    if any(t.text == "..." for t in toks):
        raise SignatureError(f"{what}: kernels cannot be variadic", line)
    dims = []                                        # trailing [N][M]... groups
    while toks and toks[-1].text == "]":
        k = _match_back(toks, len(toks) - 1, 0, "[")
        dims.insert(0, toks[k:])
        toks = toks[:max(k, 0)]
    if len(_split_top(toks, "(")) > 1:
        raise SignatureError(f"{what}: function-pointer and parenthesized declarators "
                             "are not supported; declare the type with a typedef", line)
    named = (len(toks) >= 2 and toks[-1].kind == "ident" and toks[-1].text not in _KEYWORDS
             and toks[-2].text not in ("struct", "class", "union", "enum", "typename", "::")
             and any(t.text not in _QUALIFIERS for t in toks[:-1]))
    name = toks[-1].text if named else f"arg{index}"
    toks = toks[:-1] if named else toks
    if not any(t.text not in _QUALIFIERS for t in toks):
        raise SignatureError(f"{what}: no type", line)
    if len(dims) == 1:                               # arrays decay to pointers
        toks = toks + [_STAR]
    elif dims:
        toks = toks + [_LP, _STAR, _RP] + [t for d in dims[1:] for t in d]
    return Param(name, _spell(toks)), named, _type_key([t.text for t in toks])


def _scope(head: list[_Tok]) -> tuple[str, object]:
    """What a `{` opens, from the tokens since the previous statement."""
    words = [t.text for t in _drop_attrs(head)]
    if "namespace" in words:
        rest = words[len(words) - words[::-1].index("namespace"):]
        return "ns", [w for w in rest if w not in ("::", "inline")]
    if len(head) >= 2 and head[-2].text == "extern" and head[-1].kind == "str":
        return "link", head[-1].text == '"C"'
    return "other", None


def _parse_kernel(toks: list[_Tok], start: int, g: int, scopes: list, line: int):
    """Parse the declaration whose `__global__` is toks[g]; returns
    (KernelDecl, named flags, keys, index of the `{` or `;` that ends it)."""
    where = f"line {line}"
    err = lambda msg: SignatureError(f"{where}: cannot parse __global__ declaration: {msg}", line)
    template, extern_c, ret = None, None, []
    j = g       # walk back over specifiers, attributes, extern "C", template <...>
    while j > start:
        t = toks[j - 1]
        if t.text in _SPECIFIERS or t.text in _BARE_ATTRS or t.text == "void":
            ret += [t] if t.text == "void" else []
            j -= 1
        elif t.text == ")" or (t.text == "]" and j - 2 >= start and toks[j - 2].text == "]"):
            k = _match_back(toks, j - 1, start, "(" if t.text == ")" else "[")
            if t.text == ")" and k > start and toks[k - 1].text in _ATTR_FUNCS:
                j = k - 1
            elif t.text == "]" and k >= start and toks[k + 1].text == "[":
                j = k
            else:
                break
        elif t.kind == "str" and j - 2 >= start and toks[j - 2].text == "extern":
            extern_c, j = t.text == '"C"', j - 2
        elif t.text == ">":
            k = _match_back(toks, j - 1, start, "<")
            if not (k > start and toks[k - 1].text == "template"):
                break
            template = _spell(toks[k + 1:j - 1]) if template is None else template
            j = k - 1
        else:
            break
    spec, k = [], g + 1         # forward: return type and name up to the `(`
    while k < len(toks) and toks[k].text != "(":
        t, nxt = toks[k], toks[k + 1] if k + 1 < len(toks) else _STAR
        if t.text in ("{", "}", ";"):
            break
        if (t.text in _ATTR_FUNCS and nxt.text == "(") or (t.text == "[" == nxt.text):
            k = _skip(toks, k + (t.text != "["))
        elif t.text == "extern" and nxt.kind == "str":
            extern_c, k = nxt.text == '"C"', k + 2
        else:
            spec += [] if t.text in _SPECIFIERS or t.text in _BARE_ATTRS else [t]
            k += 1
    if k >= len(toks) or toks[k].text != "(":
        raise err("no parameter list")
    n = _match_back(spec, len(spec) - 1, 0, "<") if spec and spec[-1].text == ">" else len(spec)
    m = n - 1                   # the name: [::]a::b::k[<targs>]
    if m < 0 or spec[m].kind != "ident" or spec[m].text in _KEYWORDS:
        raise err("no kernel name before '('")
    while m >= 2 and spec[m - 1].text == "::" and spec[m - 2].kind == "ident":
        m -= 2
    m -= m >= 1 and spec[m - 1].text == "::"
    name = _join([t.text for t in spec[m:]]).lstrip(":")
    ret += spec[:m]
    close = _skip(toks, k) - 1
    if close >= len(toks):
        raise err(f"unterminated parameter list of kernel '{name}'")
    parts = _split_top(toks[k + 1:close], ",") if close > k + 1 else []
    if len(parts) == 1 and [t.text for t in _drop_attrs(parts[0])] == ["void"]:
        parts = []
    parsed = [_param(p, i, f"{where}: kernel '{name}'", line) for i, p in enumerate(parts)]
    k, trailing = close + 1, []  # after `)`: attributes, noexcept, `-> void`
    while k < len(toks) and toks[k].text not in ("{", ";"):
        t, nxt = toks[k].text, toks[k + 1].text if k + 1 < len(toks) else ""
        if (t in _ATTR_FUNCS or t in ("noexcept", "throw")) and nxt == "(":
            k = _skip(toks, k + 1)
        elif t == "[" == nxt:
            k = _skip(toks, k)
        elif t == "noexcept" or (trailing and t != "->"):
            k += 1
        elif t == "->" and not trailing:
            trailing, k = toks[k + 1:k + 2], k + 2
        else:
            raise err(f"expected '{{' or ';' after the parameter list of kernel '{name}', "
                      f"found '{t}'")
    if k >= len(toks):
        raise err(f"kernel '{name}' has no body and no ';'")
    rtype = [t.text for t in (trailing if [t.text for t in ret] == ["auto"] else ret)]
    if rtype != ["void"]:
        raise SignatureError(f"{where}: kernel '{name}' must return void, "
                             f"not '{_join(rtype) or 'nothing'}'", line)
    if extern_c is None:
        extern_c = next((c for kind, c in reversed(scopes) if kind == "link"), False)
    qual = [w for kind, names in scopes if kind == "ns" for w in names]
    decl = KernelDecl("::".join(qual + [name]), tuple(p for p, _, _ in parsed),
                      template, extern_c, line, toks[k].text == "{")
    return decl, [nm for _, nm, _ in parsed], [key for _, _, key in parsed], k


def parse_kernels(source: str) -> list[KernelDecl]:
    """All __global__ functions in source order (see the module docstring).

    A kernel declared and later defined appears once, where first declared,
    with the definition's line and parameters (names filled in from the
    declaration where the definition leaves them out).  Raises SignatureError
    naming the line when a __global__ declaration cannot be parsed.
    """
    toks, _ = _preprocess(source)
    newlines = [m.start() for m in re.finditer("\n", source)]
    found, scopes, start, i = [], [], 0, 0
    while i < len(toks):
        t = toks[i]
        if t.text == "{":
            scopes.append(_scope(toks[start:i]))
        elif t.text == "}" and scopes:
            scopes.pop()
        elif t.text == "__global__" and all(kind != "other" for kind, _ in scopes):
            line = bisect.bisect_left(newlines, t.pos) + 1
            *entry, i = _parse_kernel(toks, start, i, scopes, line)
            found.append(entry)
            continue
        if t.text in ("{", "}", ";"):
            start = i + 1
        i += 1
    return _merge(found)


def _merge(found: list) -> list[KernelDecl]:
    """Fold each redeclaration into the first declaration of the same kernel
    (same qualified name, templated or not, same parameter types)."""
    out = []
    for decl, named, keys in found:
        same = (decl.name, keys, decl.template is None)
        entry = next((e for e in out if (e[0].name, e[2], e[0].template is None) == same), None)
        if entry is None:
            out.append([decl, named, keys])
            continue
        old, old_named = entry[0], entry[1]
        if old.is_definition and not decl.is_definition:  # prefer the definition
            decl, named, old, old_named = old, old_named, decl, named
        params = tuple(p if p_named or not q_named else Param(q.name, p.ctype)
                       for p, p_named, q, q_named in zip(decl.params, named, old.params, old_named))
        entry[0] = KernelDecl(decl.name, params, decl.template, decl.extern_c or old.extern_c,
                              decl.line, decl.is_definition)
        entry[1] = [a or b for a, b in zip(named, old_named)]
    return [entry[0] for entry in out]


def _launchable(d: KernelDecl) -> bool:
    """A kernel this source defines, or an explicit instantiation
    (`template __global__ void k<128>(...);`): not a bare prototype of a
    kernel defined in another file."""
    return d.template is None and (d.is_definition or "<" in d.name)


def kernel_expressions(decls: list[KernelDecl], name_expressions) -> list[str]:
    """What a module's kernels are, on every device: the non-template
    kernels the source defines (by qualified name, once each), then the name
    expressions not already there."""
    exprs: list[str] = []
    seen: set[str] = set()
    for e in [d.name for d in decls if _launchable(d)] + list(name_expressions):
        if normalize_name(e) not in seen:
            seen.add(normalize_name(e))
            exprs.append(e)
    return exprs


def declared_only(decls: list[KernelDecl]) -> dict[str, int]:
    """Kernels the source declares but defines nowhere: name -> line."""
    return {d.name: d.line for d in decls if d.template is None and not _launchable(d)}


_NAME_SPACE = re.compile(r"(?<=\W)\s+|\s+(?=\W)")


def normalize_name(name: str) -> str:
    """One spelling per kernel name or name expression, for lookups: no
    spaces next to punctuation, single spaces between words
    ("scale< float , -5 >", "scale<float, - 5>" -> "scale<float,-5>";
    "unsigned  int" -> "unsigned int")."""
    return _NAME_SPACE.sub("", " ".join(name.split()))

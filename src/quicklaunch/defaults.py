"""Default arguments of kernels: ``__global__ void k(int *d, int *p = NULL,
int n = 32)`` launched as ``k[1, 32](d)`` uses ``p = NULL, n = 32``, as
CUDA's ``<<<>>>`` does.

:func:`kernel_defaults` reads a kernel's declarations in the source (the
tokens of :mod:`quicklaunch.signature`, after its macro expansion) and
returns the defaults of its trailing parameters as Python values: integer
and floating literals (suffixes ``u``, ``l``, ``f``...), ``true``/``false``,
``nullptr``/``NULL``/``0`` for pointers (``None``), and constant expressions
of those with ``+ - * / % << >> & | ^ ~ !`` and parentheses, evaluated by
the small evaluator below (never ``eval``). A default it cannot evaluate is
an :class:`Unevaluable` (the launcher raises it, as a LaunchError, only when
a launch omits that argument).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import signature

__all__ = ["Unevaluable", "kernel_defaults", "evaluate"]


@dataclass(frozen=True)
class Unevaluable:
    """A default argument quicklaunch cannot evaluate (its C text, and why)."""
    param: str
    text: str
    why: str


class _Fail(ValueError):
    pass


_INT = re.compile(r"(0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*)([uUlL]*)$")
_FLOAT = re.compile(r"((?:\d[\d']*\.?[\d']*|\.\d[\d']*)(?:[eE][+-]?\d+)?)([fFlL]?)$")


def _number(text: str):
    m = _INT.match(text)
    if m:
        digits = m.group(1).replace("'", "")
        if digits[:2] in ("0x", "0X"):
            return int(digits, 16)
        if digits[:2] in ("0b", "0B"):
            return int(digits[2:], 2)
        if len(digits) > 1 and digits[0] == "0":
            return int(digits, 8)
        return int(digits)
    m = _FLOAT.match(text)
    if m and any(c in text for c in ".eE") or (m and m.group(2) in ("f", "F")):
        return float(m.group(1).replace("'", ""))
    raise _Fail(f"'{text}' is not a number quicklaunch reads")


_NAMES = {"true": True, "false": False, "nullptr": None, "NULL": None,
          "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "UINT_MAX": 2**32 - 1}


class _Parser:
    """Precedence climbing over the default's tokens (C's precedence)."""
    BINARY = [("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, toks):
        # join adjacent '<' '<' and '>' '>' (the lexer splits them)
        out = []
        for t in toks:
            if (out and t.text in "<>" and out[-1][0] == t.text and out[-1][1] == t.pos
                    and len(out[-1][0]) == 1):
                out[-1] = (t.text * 2, t.end)
            else:
                out.append((t.text, t.end))
        self.toks = [text for text, _ in out]
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self):
        t = self.peek()
        if t is None:
            raise _Fail("the expression ends early")
        self.i += 1
        return t

    def parse(self):
        v = self.binary(0)
        if self.peek() is not None:
            raise _Fail(f"'{self.peek()}' is not something quicklaunch evaluates")
        return v

    def binary(self, level):
        if level == len(self.BINARY):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in self.BINARY[level]:
            op = self.take()
            w = self.binary(level + 1)
            v = _apply(op, v, w)
        return v

    def unary(self):
        t = self.take()
        if t in ("-", "+", "~", "!"):
            v = self.unary()
            if v is None:
                raise _Fail(f"'{t}' of a null pointer")
            if t == "-":
                return -v
            if t == "+":
                return v
            if t == "!":
                return not v
            if isinstance(v, float):
                raise _Fail("'~' of a floating value")
            return ~int(v)
        if t == "(":
            v = self.binary(0)
            if self.take() != ")":
                raise _Fail("unbalanced parentheses")
            return v
        if t in _NAMES:
            return _NAMES[t]
        if t[:1].isdigit() or t[:1] == ".":
            return _number(t)
        raise _Fail(f"'{t}' is not a literal")


def _apply(op, a, b):
    if a is None or b is None:
        raise _Fail(f"'{op}' with a null pointer")
    if isinstance(a, bool):
        a = int(a)
    if isinstance(b, bool):
        b = int(b)
    both_int = isinstance(a, int) and isinstance(b, int)
    if op in ("|", "^", "&", "<<", ">>", "%") and not both_int:
        raise _Fail(f"'{op}' of a floating value")
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        if b == 0:
            raise _Fail("division by zero")
        if not both_int:
            return a / b
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)   # C truncates
        return q if op == "/" else a - q * b
    if op in ("<<", ">>"):
        if b < 0 or b > 63:
            raise _Fail(f"a shift by {b}")
        return a << b if op == "<<" else a >> b
    return a | b if op == "|" else a ^ b if op == "^" else a & b


def _convert(value, ctype: str):
    """The Python value the launcher takes for a parameter of ctype."""
    if ctype.endswith("*"):
        if value is None or (not isinstance(value, float) and value == 0):
            return None
        raise _Fail("a pointer default other than NULL, nullptr or 0")
    if value is None:
        raise _Fail("nullptr for a non-pointer parameter")
    words = ctype.replace("const", "").split()
    if words == ["bool"]:
        return bool(value)
    if any(w in ("float", "double", "__half", "half", "__nv_bfloat16") for w in words):
        return float(value)
    if isinstance(value, float):
        raise _Fail("a floating default for an integer parameter")
    return int(value)


def evaluate(tokens, ctype: str):
    """The Python value of a default (tokens of signature's lexer)."""
    return _convert(_Parser(tokens).parse(), ctype)


_ATTRS = frozenset({"__launch_bounds__", "__attribute__", "__declspec", "alignas",
                    "__cluster_dims__", "__maxnreg__"})


def _declarations(toks):
    """(kernel base name, [default tokens or None per parameter]) for each
    ``__global__`` declaration in the token list."""
    out = []
    for i, t in enumerate(toks):
        if t.text != "__global__":
            continue
        j = i + 1
        depth = 0
        name = None
        while j < len(toks) and toks[j].text not in (";", "{"):
            if toks[j].text == "(" and toks[j - 1].kind == "ident" and depth == 0:
                if toks[j - 1].text not in _ATTRS:
                    name = toks[j - 1].text
                    break
                level, j = 1, j + 1             # skip __launch_bounds__(...) and such
                while j < len(toks) and level:
                    level += toks[j].text == "("
                    level -= toks[j].text == ")"
                    j += 1
                continue
            if toks[j].text == "<":
                depth += 1
            elif toks[j].text == ">":
                depth = max(depth - 1, 0)
            j += 1
        if name is None:
            continue
        k, level = j + 1, 1
        while k < len(toks) and level:
            level += toks[k].text == "("
            level -= toks[k].text == ")"
            k += 1
        inner = toks[j + 1:k - 1]
        params = signature._split_top(inner, ",") if inner else []
        if len(params) == 1 and [t.text for t in params[0]] in ([], ["void"]):
            params = []
        defaults = []
        for p in params:
            parts = signature._split_top(p, "=")
            defaults.append(None if len(parts) == 1 else
                            [tok for part in parts[1:] for tok in part] if len(parts) == 2
                            else parts[1:])
        out.append((name, defaults))
    return out


def kernel_defaults(source: str, name: str, params) -> tuple:
    """The defaults of kernel `name` (as an image names it: "ns::k",
    "k<float>") whose parameters are `params` (names and ctypes): a tuple
    for its trailing parameters, each a Python value or an Unevaluable;
    empty when it has none or its declarations cannot be read."""
    base = re.sub(r"<.*>$", "", name).split("::")[-1]
    try:
        toks, _ = signature._preprocess(source)
    except Exception:   # a source signature cannot lex: no defaults
        return ()
    n = len(params)
    merged: list = [None] * n
    for decl_name, defaults in _declarations(toks):
        if decl_name != base or len(defaults) != n:
            continue
        for i, d in enumerate(defaults):
            if d is not None and merged[i] is None:
                merged[i] = d
    first = n
    while first > 0 and merged[first - 1] is not None:
        first -= 1
    out = []
    for i in range(first, n):
        d = merged[i]
        p = params[i]
        text = signature._spell(d) if isinstance(d, list) and d and hasattr(d[0], "text") \
            else "?"
        if not isinstance(d, list) or (d and not hasattr(d[0], "text")):
            out.append(Unevaluable(p.name, text, "it is not a single expression"))
            continue
        try:
            out.append(evaluate(d, p.ctype))
        except _Fail as e:
            out.append(Unevaluable(p.name, text, str(e)))
    return tuple(out)

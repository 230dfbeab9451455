"""CUDA's shift semantics on the CPU device: a source rewrite.

An NVIDIA GPU clamps a shift's count to the operand's width (PTX shl/shr:
a 32-bit `x << 32` is 0, `x >> 32` is 0 or, signed, the sign; 64-bit values
at 64); x86 and AArch64 take it modulo the width, so a kernel relying on the
GPU's result ran silently wrong on the CPU device. Each built-in shift of an
integer (`<<`, `>>`, `<<=`, `>>=`) whose count is not a constant in range
becomes `x << __ql_clamp(n)`, computed by include/ql_shift.h as the GPU does.

Only the count is wrapped: the operator, the left operand and every line
stay where they were (columns after a wrapped count move right by
len("__ql_clamp()")), so errors and gdb point at the user's lines. Constant
counts in range are left alone (no cost, no change), as are shifts whose
operator or count comes out of a macro (the macro's text is not the user's
line, and the count's extent cannot be trusted there), and class operators.

The front end is libclang, as for fission (fission.py): the shim's
precompiled header from the compile cache, one parse of the module. A
source with no shift that could need it (the usual case: no `<<`/`>>`, or
only literal counts below 32) is not parsed at all. This pass runs on the
user's source before fission's, so fission sees the clamped shifts.
"""
from __future__ import annotations

import ctypes
import os
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from ...signature import strip_comments
from . import shift_macros

PASS = "shifts-3"
ENV = "QUICKLAUNCH_CPU_CLAMP_SHIFTS"   # "0": shifts as the host does them (for measuring)
WRAP = "__ql_clamp"
_OPS = (b"<<=", b">>=", b"<<", b">>")
# A shift with a literal count below 32 that nothing of higher precedence
# follows (`x >> 1;`, `(v << 8) |`) needs no parse; anything else does.
_SHIFT = re.compile(r"<<=?|>>=?")
_LITERAL_COUNT = re.compile(r"\s*(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)[uUlL]*(?![\w.])"
                            r"(?!\s*(?:[*/%+\-\[(.]|->))")
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_INT_KINDS = {"BOOL", "CHAR_U", "UCHAR", "CHAR16", "CHAR32", "USHORT", "UINT", "ULONG",
              "ULONGLONG", "UINT128", "CHAR_S", "SCHAR", "WCHAR", "SHORT", "INT", "LONG",
              "LONGLONG", "INT128", "ENUM"}


@dataclass
class Rewrite:
    text: str                       # the source with the counts wrapped
    wrapped: int = 0                # shifts rewritten
    macro: int = 0                  # shifts left alone: operator or count from a macro
    in_macros: int = 0              # counts wrapped in #define bodies (shift_macros.py)
    why: str = ""                   # why nothing was analysed, when it was not
    lines: list = field(default_factory=list)   # 1-based source lines rewritten


def identity() -> str:
    """What the rewrite depends on besides the source (for cache keys)."""
    from . import fission
    if not enabled():
        return f"{PASS}-off"
    ci = fission._cindex()
    if isinstance(ci, str):
        return f"{PASS}-no-libclang"
    from .clang_front import _libclang_version
    return f"{PASS}-{_libclang_version()}"


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() not in ("0", "no", "off", "false")


def candidates(source: str) -> bool:
    """Whether `source` has a shift the parse must look at."""
    code = _STRING.sub(lambda m: " " * len(m.group()), strip_comments(source))
    for m in _SHIFT.finditer(code):
        lit = _LITERAL_COUNT.match(code, m.end())
        if lit is None or int(lit.group(1), 0) >= 32:
            return True
    return False


_eval_ready: dict = {}


def _evaluator(ci):
    """clang_Cursor_Evaluate: an expression's constant value, or None."""
    lib = ci.conf.lib
    if "fn" not in _eval_ready:
        lib.clang_Cursor_Evaluate.argtypes = [ci.Cursor]
        lib.clang_Cursor_Evaluate.restype = ctypes.c_void_p
        lib.clang_EvalResult_getKind.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getKind.restype = ctypes.c_int
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_isUnsignedInt.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_isUnsignedInt.restype = ctypes.c_uint
        lib.clang_EvalResult_getAsUnsigned.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsUnsigned.restype = ctypes.c_ulonglong
        lib.clang_EvalResult_dispose.argtypes = [ctypes.c_void_p]

        def value(c):
            r = lib.clang_Cursor_Evaluate(c)
            if not r:
                return None
            try:
                if lib.clang_EvalResult_getKind(r) != 1:   # CXEval_Int
                    return None
                if lib.clang_EvalResult_isUnsignedInt(r):
                    return lib.clang_EvalResult_getAsUnsigned(r)
                return lib.clang_EvalResult_getAsLongLong(r)
            finally:
                lib.clang_EvalResult_dispose(r)
        _eval_ready["fn"] = value
    return _eval_ready["fn"]


def _parse(ci, body: str, cc: tuple[str, ...], compiler_path: str, cache):
    """The module parsed as fission parses it (the shim's PCH); (tu, main,
    offset of the body in the parsed unit)."""
    from . import fission
    from .toolchain import host_options
    defines = tuple(o for o in cc if o.startswith("-D__CUDA_ARCH__="))
    user = tuple(o for o in host_options(tuple(o for o in cc if o not in defines))
                 if o.startswith(("-D", "-U", "-I", "-include", "-std")))
    with fission._lock:
        try:
            pch = fission._pch(ci, compiler_path, defines, cache) if cache is not None else None
        except Exception:
            pch = None
        args = fission._base_args(compiler_path, defines) + list(user)
        if pch:
            args += ["-include-pch", pch]
        prefix = '#include "cuda_shim.h"\n'
        main = "/quicklaunch-shifts/module.cpp"
        tu = ci.Index.create().parse(main, args=args,
                                     unsaved_files=[(main, prefix + body + "\n")])
    return tu, main, len(prefix.encode())


def rewrite(source: str, cc: tuple[str, ...], compiler_path: str, cache=None) -> Rewrite:
    """`source` with every shift that needs it clamped as on the GPU: the
    code's (below), then the #define bodies' (shift_macros.py)."""
    if not enabled():
        return Rewrite(source, why=f"{ENV}=0")
    out = _rewrite_code(source, cc, compiler_path, cache)
    out.text, out.in_macros = shift_macros.rewrite(out.text)
    return out


def _rewrite_code(source: str, cc, compiler_path: str, cache) -> Rewrite:
    if not candidates(source):
        return Rewrite(source, why="no shift with a run-time or out-of-range count")
    from . import fission
    from .instantiations import rewrite_explicit_instantiations
    ci = fission._cindex()
    if isinstance(ci, str):
        return Rewrite(source, why=ci)
    # Same offsets as `source` (the instantiations' __global__ blanked, which
    # libclang would refuse as `inline`).
    tu, main, base = _parse(ci, rewrite_explicit_instantiations(source), cc, compiler_path,
                            cache)
    errors = [d for d in tu.diagnostics if d.severity >= 3]
    if errors:   # the compiler will say what is wrong; nothing rewritten
        return Rewrite(source, why=f"libclang could not parse the module: "
                                   f"{errors[0].spelling}")
    data = source.encode()
    value = _evaluator(ci)
    CK = ci.CursorKind
    shift_kinds = (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR)
    exprs, shifts = [], []     # (start, end, cursor hash) of every main-file expression

    def walk(c):
        for ch in c.get_children():
            f = ch.location.file
            if f is not None and f.name != main:
                continue
            if ch.kind.is_expression():
                ext = ch.extent
                exprs.append((ext.start.offset - base, ext.end.offset - base, ch.hash))
                if ch.kind in shift_kinds:
                    shifts.append(ch)
            walk(ch)

    walk(tu.cursor)
    spans = _Spans(exprs, base)
    out = Rewrite(source)
    edits = []   # (offset, text), applied from the end
    for node in shifts:
        kids = list(node.get_children())
        if len(kids) != 2:
            continue
        lhs, rhs = kids
        a, b = lhs.extent.end.offset - base, rhs.extent.start.offset - base
        kind = node.type.get_canonical().kind.name
        if kind not in _INT_KINDS and kind != "DEPENDENT":
            continue
        if not (0 <= a < b <= len(data)):
            same = (lhs.extent.start.offset, lhs.extent.end.offset) == \
                (rhs.extent.start.offset, rhs.extent.end.offset)
            if same and _is_shift(node, CK):
                out.macro += 1   # both operands (and the operator) from one macro
            continue
        op = data[a:b].strip()
        if op not in _OPS:
            if any(o in data[a:b] for o in _OPS):
                out.macro += 1   # the operator comes from a macro's text
            continue
        width = max(32, 8 * max(node.type.get_canonical().get_size(), 0))
        n = value(rhs)
        if n is not None and 0 <= n < (width if kind != "DEPENDENT" else 32):
            continue   # a constant in range: the plain shift is the GPU's
        if node.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR and _bitfield(lhs, CK):
            out.macro += 1   # a bit-field cannot bind to the operator's reference
            continue
        s, e = b, rhs.extent.end.offset - base
        if not (b < e <= len(data)) or not spans.own_count(s, e, node, rhs):
            out.macro += 1
            continue
        edits += [(s, WRAP.encode() + b"("), (e, b")")]
        out.wrapped += 1
        out.lines.append(data.count(b"\n", 0, s) + 1)
    for pos, text in sorted(edits, key=lambda x: x[0], reverse=True):
        data = data[:pos] + text + data[pos:]
    out.text = data.decode()
    out.lines = sorted(set(out.lines))
    return out


class _Spans:
    """The main file's expression extents, by start and by end."""

    def __init__(self, exprs, base: int):
        self.base = base
        self.by_start = sorted(exprs)
        self.starts = [x[0] for x in self.by_start]
        self.by_end = sorted(exprs, key=lambda x: x[1])
        self.ends = [x[1] for x in self.by_end]

    def own_count(self, s: int, e: int, node, rhs) -> bool:
        """Whether [s, e) holds the count and nothing else: an expression
        outside the count that starts or ends inside it (or has its very
        extent) means a macro spread the count's text over more than the
        count (`#define N a | b`: `x << N` shifts by a)."""
        inside = set(_hashes(rhs))
        first = node.extent.start.offset - self.base
        near = self.by_start[bisect_left(self.starts, s):bisect_left(self.starts, e)]
        near += self.by_end[bisect_right(self.ends, s):bisect_right(self.ends, e)]
        for a, b, h in near:
            if h in inside or h == node.hash or (a <= first and b >= e):
                continue          # the count's own, or enclosing the whole shift
            if s <= a < e and b > e or s < b <= e and a < s or (a == s and b == e):
                return False
            if s <= a and b <= e and (a, b) != (s, e):
                return False      # an outside expression inside the count's text
        return True


def _is_shift(node, CK) -> bool:
    """Whether a node whose operator text cannot be read is a shift (its
    tokens, as the macro expansion spells them, hold one)."""
    try:
        return any(t.spelling in ("<<", ">>", "<<=", ">>=") for t in node.get_tokens()) \
            or node.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR
    except Exception:
        return False


def _bitfield(lhs, CK) -> bool:
    c = lhs
    while c.kind in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR):
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    ref = c.referenced if c.kind == CK.MEMBER_REF_EXPR else None
    try:
        return ref is not None and ref.is_bitfield()
    except Exception:
        return False


def _hashes(c):
    yield c.hash
    for ch in c.get_children():
        yield from _hashes(ch)

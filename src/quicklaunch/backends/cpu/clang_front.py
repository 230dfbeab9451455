"""The libclang front end shared by the CPU device's source passes (region
fission, fission.py; shift clamping, shifts.py): libclang loaded once, the
shim parsed once into a precompiled header kept in the compile cache, the
host compiler's system include paths, and cursor helpers."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path

_lock = threading.Lock()
_state: dict = {}


def _cindex():
    """clang.cindex, or the reason it cannot be used (str)."""
    if "ci" not in _state:
        try:
            import clang.cindex as ci
            ci.Index.create()
            _state["ci"] = ci
        except Exception as exc:  # ImportError, a missing or broken libclang.so
            _state["ci"] = f"libclang is not available ({type(exc).__name__}: {exc}); " \
                           f"pip install libclang"
    return _state["ci"]



def _system_includes(compiler_path: str) -> list[str]:
    key = ("inc", compiler_path)
    if key not in _state:
        try:
            out = subprocess.run([compiler_path, "-x", "c++", "-E", "-v", "-"], input="",
                                 capture_output=True, text=True, timeout=30).stderr
            lines = out.split("#include <...> search starts here:", 1)[1]
            lines = lines.split("End of search list.", 1)[0]
            _state[key] = [x.strip() for x in lines.splitlines() if x.strip()]
        except Exception:
            _state[key] = []
    return _state[key]


def _base_args(compiler_path: str, defines: tuple[str, ...]) -> list[str]:
    from .toolchain import INCLUDE_DIR
    args = ["-xc++", "-std=c++17", f"-I{INCLUDE_DIR}", "-DQL_TIER2=1", *defines]
    for d in _system_includes(compiler_path):
        args += ["-isystem", d]
    return args


def _libclang_version() -> str:
    """"libclang-<wheel version>", read once per process (the metadata
    lookup costs ~0.9 ms, and every compile's cache key asks for it)."""
    if "version" not in _state:
        try:
            from importlib.metadata import version
            _state["version"] = "libclang-" + version("libclang")
        except Exception:
            _state["version"] = "libclang-?"
    return _state["version"]


def _pch(ci, compiler_path: str, defines: tuple[str, ...], cache) -> str | None:
    """A precompiled header of the shim (and cooperative groups) for these
    defines, built once and kept in the compile cache; None if it cannot be."""
    from .toolchain import INCLUDE_DIR, headers_digest_material
    base = _base_args(compiler_path, defines)
    key = hashlib.sha256(b"\0".join([_libclang_version().encode(), headers_digest_material(),
                                     "\0".join(base).encode()])).hexdigest()
    if ("pch", key) in _state:
        return _state[("pch", key)]
    path = None
    try:
        if cache.read("cpu-fission", key, ".pch") is not None:
            path = str(cache.path("cpu-fission", key, ".pch"))
    except Exception:
        path = None
    if path is None:
        with tempfile.TemporaryDirectory(prefix="quicklaunch-pch-") as tmp:
            out = Path(tmp, "shim.pch")
            idx = ci.Index.create()
            tu = idx.parse(str(INCLUDE_DIR / "cuda_shim.h"),
                           args=["-xc++-header", *base[1:], "-include",
                                 str(INCLUDE_DIR / "cooperative_groups.h")])
            if any(d.severity >= 3 for d in tu.diagnostics):
                _state[("pch", key)] = None
                return None
            tu.save(str(out))
            data = out.read_bytes()
            try:
                cache.put("cpu-fission", key, ".pch", data)
                path = str(cache.path("cpu-fission", key, ".pch"))
            except Exception:
                keep = Path(tempfile.gettempdir(), f"quicklaunch-{os.getuid()}-{key[:16]}.pch")
                keep.write_bytes(data)
                path = str(keep)
    _state[("pch", key)] = path
    return path


# ------------------------------------------------------------------ helpers


_LINE = re.compile(rb'^[ \t]*#[ \t]*line[ \t]+(\d+)', re.M)


class _Src:
    """The parsed unit's bytes, with the user's line of each byte offset."""

    def __init__(self, data: bytes, first_raw_line: int, first_line: int):
        self.data = data
        # raw line -> user line, following the body's own #line directives
        self.map = []   # (raw_line_of_next_line, user_line)
        self.map.append((first_raw_line, first_line))
        for m in _LINE.finditer(data):
            raw = data.count(b"\n", 0, m.start()) + 2
            self.map.append((raw, int(m.group(1))))
        self.map.sort()

    def text(self, a: int, b: int) -> str:
        return self.data[a:b].decode("utf-8", "replace")

    def user_line(self, offset: int) -> int:
        raw = self.data.count(b"\n", 0, offset) + 1
        best = self.map[0]
        for r, u in self.map:
            if r <= raw:
                best = (r, u)
        return best[1] + (raw - best[0])

    def column(self, offset: int) -> int:
        return offset - (self.data.rfind(b"\n", 0, offset) + 1)


# clang's BinaryOperatorKind and UnaryOperatorKind (libclang 17 and later):
# the operator from the AST, right where a macro spells it (a token scan
# reads the macro's name instead).
_BINOPS = {1: ".*", 2: "->*", 3: "*", 4: "/", 5: "%", 6: "+", 7: "-", 8: "<<", 9: ">>",
           10: "<=>", 11: "<", 12: ">", 13: "<=", 14: ">=", 15: "==", 16: "!=", 17: "&",
           18: "^", 19: "|", 20: "&&", 21: "||", 22: "=", 23: "*=", 24: "/=", 25: "%=",
           26: "+=", 27: "-=", 28: "<<=", 29: ">>=", 30: "&=", 31: "^=", 32: "|=", 33: ","}
_UNOPS = {1: "++", 2: "--", 3: "++", 4: "--", 5: "&", 6: "*", 7: "+", 8: "-", 9: "~",
          10: "!", 11: "__real", 12: "__imag", 13: "__extension__", 14: "co_await"}


def _operator_fn(name: str):
    key = ("opfn", name)
    if key not in _state:
        fn = None
        try:
            import ctypes

            import clang.cindex as ci
            fn = getattr(ci.conf.lib, name)
            fn.argtypes = [ci.Cursor]
            fn.restype = ctypes.c_uint
        except Exception:   # an older libclang: the caller treats the operator as unknown
            fn = None
        _state[key] = fn
    return _state[key]


def binary_operator(c) -> str | None:
    """The operator of a BINARY_OPERATOR or COMPOUND_ASSIGNMENT_OPERATOR
    cursor ('=', '+=', ',', ...), None when libclang cannot say."""
    fn = _operator_fn("clang_getCursorBinaryOperatorKind")
    return _BINOPS.get(fn(c)) if fn is not None else None


def unary_operator(c) -> str | None:
    """The operator of a UNARY_OPERATOR cursor ('++', '&', '-', ...; pre
    and post alike), None when libclang cannot say."""
    fn = _operator_fn("clang_getCursorUnaryOperatorKind")
    return _UNOPS.get(fn(c)) if fn is not None else None


def specialized_template(c):
    """The template a function template specialisation was instantiated
    from (what a resolved call to a template references), else None."""
    key = ("opfn", "specialized")
    if key not in _state:
        fn = None
        try:
            import clang.cindex as ci
            fn = ci.conf.lib.clang_getSpecializedCursorTemplate
            fn.argtypes = [ci.Cursor]
            fn.restype = ci.Cursor
            fn.errcheck = ci.Cursor.from_result
        except Exception:
            fn = None
        _state[key] = fn
    fn = _state[key]
    if fn is None:
        return None
    t = fn(c)
    return t if t is not None and t.kind == c.kind.FUNCTION_TEMPLATE else None


def _children(c):
    return list(c.get_children())


def _strip(c):
    """Through implicit casts, parens and unexposed wrappers."""
    CK = c.kind.__class__
    while c.kind in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR) and len(_children(c)) == 1:
        c = _children(c)[0]
    return c


def _walk(c, parent=None):
    yield c, parent
    for ch in c.get_children():
        yield from _walk(ch, c)


def _in_main(c, main: str) -> bool:
    f = c.location.file
    return f is not None and f.name == main



def _qualified(c, CK) -> str:
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            if p.spelling:
                parts.append(p.spelling)
        elif p.kind != CK.LINKAGE_SPEC:
            return ""
        p = p.semantic_parent
    return "::".join(reversed(parts))


def _namespaces(c, CK) -> list[str]:
    out = []
    p = c.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            out.append(p.spelling)
        p = p.semantic_parent
    return list(reversed(out))


def paren_group(tokens):
    """(offset of the first '(', offsets of the ';' directly inside it, offset
    just past its matching ')') of a control statement's tokens, or None."""
    depth, semis, start = 0, [], None
    for t in tokens:
        s = t.spelling
        if s == "(":
            depth += 1
            if depth == 1 and start is None:
                start = t.extent.start.offset
        elif s == ")":
            depth -= 1
            if depth == 0:
                return start, semis, t.extent.end.offset
        elif s == ";" and depth == 1:
            semis.append(t.extent.start.offset)
    return None


def statement_end(c, CK, data: bytes) -> int:
    """End offset of statement `c` in the unit's bytes, its `;` included (an
    expression statement's extent stops before it)."""
    end = c.extent.end.offset
    if c.kind in (CK.DECL_STMT, CK.COMPOUND_STMT):
        return end
    j = end
    while j < len(data) and data[j:j + 1] in (b" ", b"\t", b"\n", b"\r"):
        j += 1
    return j + 1 if data[j:j + 1] == b";" else end

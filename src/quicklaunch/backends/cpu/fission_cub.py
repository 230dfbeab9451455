"""Region fission, part 0c: cub::BlockReduce lowered, as source, to the two
halves of the device's own implementation (include/cub/block/block_reduce.cuh)
around a `__syncthreads`, so the usual CUB block reduction runs as fission.

`BlockReduce(temp_storage).Sum(v)` (or `.Sum(v, num_valid)`, `.Reduce(v,
op)` with a function object of a named class, with or without num_valid)
becomes a call of a generated helper: `BR::ql_fission_begin(temp, v)` (the
block check, and the thread's partial stored), `__syncthreads()`, then
`BR::ql_fission_end(temp, tid, v, valid[, op])` (thread 0 combines, in the
header's order, so the bits are the fibers'); the inliner inlines the
helper, so the barrier becomes a boundary of the kernel.

Refused (the kernel stays on fibers, with the reason): a BlockReduce not
constructed in the call from a `__shared__` TempStorage variable, the
array (items per thread) forms, lambdas as the operator, values other
than arithmetic types, and every other CUB collective.
"""
from __future__ import annotations

import re

from .clang_front import _walk
from .fission_classify import Refuse, _cub_header
from .fission_tiles import Tiles, _closes_at_end

PREFIX = "__ql_cub_"
_ARITH = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "FLOAT", "DOUBLE", "SHORT",
          "USHORT", "CHAR_S", "SCHAR", "UCHAR", "CHAR_U"}


def _in_cub(c) -> bool:
    r = c.referenced
    f = r.location.file if r is not None else None
    return f is not None and _cub_header(f.name)


class Cub(Tiles):
    """The lowering of one kernel's cub::BlockReduce calls (the tiles'
    rewriting machinery: replacements rendered into the kernel's text, and
    generated helpers); `lower` returns (kernel text, helpers text) or None."""

    def lower(self, fn):
        CK = self.CK
        self.src = self.inl.src
        body = [c for c in fn.get_children() if c.kind == CK.COMPOUND_STMT][0]
        self.parents = {c.hash: p for c, p in _walk(body)}
        self.repl: list = []
        for c, _ in _walk(body):
            if c.kind == CK.CALL_EXPR and c.spelling in ("Sum", "Reduce") and _in_cub(c) and \
                    c.referenced.semantic_parent is not None and \
                    c.referenced.semantic_parent.spelling == "BlockReduce":
                self.reduce(c)
        if not self.repl:
            return None
        self.repl.sort(key=lambda r: (r[0], -r[1]))
        a, b = body.extent.start.offset + 1, body.extent.end.offset
        kernel = self.inl.header(fn) + "{" + f"\n#line {self.src.user_line(a)}\n" + \
            self.render(a, b) + "\n"
        return kernel, "".join(self.helper_text)

    def reduce(self, call):
        CK = self.CK
        where = f"cub::BlockReduce::{call.spelling} (line {self.line(call)})"
        text = self.src.text(call.extent.start.offset, call.extent.end.offset)
        m = re.search(rf"\.\s*{call.spelling}\s*(?=\()", text)
        if m is None or not _closes_at_end(text, m.end()):
            raise Refuse(f"{where} spelled by a macro or with template arguments")
        kids = list(call.get_children())
        member = kids[0] if kids else None
        if member is None or member.kind != CK.MEMBER_REF_EXPR:
            raise Refuse(f"{where} called other than on a BlockReduce(temp_storage) temporary")
        base = [k for k in member.get_children()]
        obj = self.unwrap(base[0]) if base else None
        while obj is not None and obj.kind in (CK.CXX_FUNCTIONAL_CAST_EXPR,
                                               CK.UNEXPOSED_EXPR):   # BR(temp)
            inner = [k for k in obj.get_children() if k.kind not in (CK.TYPE_REF,
                                                                      CK.NAMESPACE_REF,
                                                                      CK.TEMPLATE_REF)]
            obj = inner[0] if len(inner) == 1 else None
        ctor_args = list(obj.get_arguments()) if obj is not None and \
            obj.kind == CK.CALL_EXPR and obj.spelling == "BlockReduce" and _in_cub(obj) else []
        if obj is None or len(ctor_args) != 1:
            raise Refuse(f"{where} called other than on a BlockReduce(temp_storage) temporary "
                         f"(fission lowers the temporary form)")
        temp = self.unwrap(ctor_args[0])
        if temp.kind != CK.DECL_REF_EXPR or temp.referenced is None or \
                not self.inl.is_shared(temp.referenced):
            raise Refuse(f"{where} on a TempStorage other than a __shared__ variable")
        br = obj.type.get_canonical().spelling
        if not re.fullmatch(r"cub::BlockReduce<[\w:, <>]+>", br):
            raise Refuse(f"{where} of a type the pass cannot spell ({br})")
        t = call.type.get_canonical()
        if t.kind.name not in _ARITH:
            raise Refuse(f"{where} of '{call.type.spelling}' (fission lowers arithmetic types)")
        args = list(call.get_arguments())
        if args and args[0].type.get_canonical().kind.name in ("CONSTANTARRAY",
                                                                 "INCOMPLETEARRAY"):
            raise Refuse(f"{where} of items per thread (an array)")
        if call.spelling == "Sum":
            op, rest = None, args[1:]
        else:
            if len(args) < 2:
                raise Refuse(f"{where} with an unexpected argument list")
            op, rest = self.cub_operator(args[1], where), args[2:]
        if len(args) < 1 or len(rest) > 1:
            raise Refuse(f"{where} with an unexpected argument list")
        key = ("cub", br, t.spelling, op)
        if key not in self.helpers:
            self.helpers[key] = f"{PREFIX}{len(self.helpers)}"
            self.helper_text.append(f"\n#line {self.line(call)}\n" +
                                    _helper(self.helpers[key], br, t.spelling, op))
        helper = self.helpers[key]
        value, valid = args[0], (rest[0] if rest else None)
        a = call.extent.start.offset, call.extent.end.offset
        opx = args[1] if op is not None else None
        self.repl.append((a[0], a[1], lambda: (
            f"{helper}({temp.spelling}, {self.text(value)}, " +
            (self.text(valid) if valid is not None else f"{br}::ql_fission_threads") +
            (f", {self.text(opx)})" if opx is not None else ")"))))
        self.count += 1

    def cub_operator(self, c, where) -> str:
        """The type of a reduction operator the helper can take by value."""
        t = c.type.get_canonical().spelling
        if not t or any(w in t for w in ("lambda", "(anonymous", "type-parameter", "dependent",
                                         "(", "*")):
            raise Refuse(f"{where}: an operator of type '{c.type.spelling}' (fission lowers "
                         f"function objects of a named class)")
        return t


def _helper(name: str, br: str, t: str, op: str | None) -> str:
    """reduce() of the device's BlockReduce, split at its barrier (the
    operator taken by value, as BlockReduce::Reduce takes it)."""
    opp, opa = (f", {op} __ql_op", ", __ql_op") if op else ("", "")
    return (f"static __device__ __forceinline__ {t} {name}({br}::TempStorage &__ql_ts, "
            f"{t} __ql_v, int __ql_n{opp}) {{ "
            f"const int __ql_t = {br}::ql_fission_begin(__ql_ts, __ql_v); "
            f"__syncthreads(); "
            f"return {br}::ql_fission_end(__ql_ts, __ql_t, __ql_v, __ql_n{opa}); }}\n")

"""Warp-uniform branches in region fission: `if (warp == 0) { ... }`.

The block reduction real kernels write ends with one warp reducing the
partial sums: `if (threadIdx.x < 32) v = warp_sum(v)`, or `if (wid == 0)`
with `int wid = threadIdx.x / warpSize`. Such a condition differs between
threads, so a barrier may not sit under it, but it has one value in every
warp, so a warp function under the full mask may. A branch like that
becomes a guard: one thread loop stores each thread's condition in
per-thread scratch (`__ql_g<N>`, evaluated once, as CUDA evaluates it),
and every thread loop inside the branch skips the threads whose guard is
false (the else branch, those whose guard is true). Warp functions inside
read only lanes of warps that all took the branch.

What counts as warp-uniform (proved from the expression, else the kernel
stays on fibers): block-uniform values; `threadIdx.x / K` and
`threadIdx.x >> S` with K a literal multiple of 32 (or warpSize, or an
object-like macro of the module defined once as such a literal, or a
const integer initialised with one) and S >= 5;
`threadIdx.x < K` and `threadIdx.x >= K` (K a multiple of 32), `<=` and `>`
with K + 1 one; threadIdx.y and .z; the counters of enclosing barrier loops; arithmetic, comparisons and logic over those; and locals
initialised from them (or from threadIdx.x itself) and never assigned
again. threadIdx.x's warps are whole rows of the block when blockDim.x is
a multiple of 32 or the block is one row: another block shape runs the
kernel on fibers, checked per launch (``ql_export::fission_warps``'s Rows).
A block barrier under such a branch is refused as before: the whole block
must reach it.
"""
from __future__ import annotations

import re

from . import fission_warp
from .clang_front import _children, _in_main, _strip, _walk

_COMPARE = {"<", ">=", "<=", ">"}
# Integer types that hold any threadIdx.x unchanged (a narrower or a
# floating-point cast does not keep warps together: (float)threadIdx.x / 32).
_WIDE_INTS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG"}
_ARITH = {"+", "-", "*", "/", "%", "&", "|", "^", "&&", "||", "==", "!=", "<<", ">>",
          "<", ">", "<=", ">="}


class Guards:
    """Mixin of the fission kernel (_Kernel): warp-uniform conditions."""

    def literal(self, c, depth=0) -> int | None:
        """The value of an integer literal (or warpSize, or a const integer
        initialised with one), else None."""
        CK = self.CK
        c = _strip(c)
        while c.kind in (CK.PAREN_EXPR, CK.UNEXPOSED_EXPR, CK.CSTYLE_CAST_EXPR,
                         CK.CXX_STATIC_CAST_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR):
            if c.type.get_canonical().kind.name not in _WIDE_INTS:
                return None      # (bool)64 is 1, not 64
            kids = [k for k in _children(c) if k.kind != CK.TYPE_REF]
            if len(kids) != 1:
                return None
            c = _strip(kids[0])
        if c.kind == CK.DECL_REF_EXPR and c.spelling == "warpSize" and \
                c.referenced is not None and not _in_main(c.referenced, self.main):
            return 32
        r = c.referenced if c.kind == CK.DECL_REF_EXPR else None
        if r is not None and r.kind == CK.VAR_DECL and r.type.is_const_qualified() and \
                r.type.get_canonical().kind.name in _WIDE_INTS and depth < 4:
            # `constexpr int kWarp = 32;` (a const integer's literal initialiser)
            inits = [k for k in _children(r) if k.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
            return self.literal(inits[0], depth + 1) if len(inits) == 1 else None
        if c.kind != CK.INTEGER_LITERAL:
            return None
        # the source text, not the cursor's tokens (wrong for a macro's literal)
        text = self.src.text(c.extent.start.offset, c.extent.end.offset).strip()
        if not re.fullmatch(r"[A-Za-z_0-9']+", text):
            return None
        if text[:1].isalpha() or text[:1] == "_":   # `#define WARP_SIZE 32`
            if not hasattr(self, "macros"):
                self.macros = fission_warp.object_macros(self.src.text(0, len(self.src.data)))
            text = fission_warp._resolve(text, self.macros)
        text = text.rstrip("uUlL").replace("'", "")
        if len(text) > 1 and text[0] == "0" and text.isdigit():
            text = "0o" + text[1:]          # C's octal 040
        try:
            return int(text, 0)
        except ValueError:
            return None

    def through_wide_casts(self, c):
        """`c` without its parentheses and casts to integer types of 32 bits
        or more (which keep any threadIdx.x unchanged); None through any
        other cast."""
        CK = self.CK
        c = _strip(c)
        while c.kind in (CK.PAREN_EXPR, CK.UNEXPOSED_EXPR, CK.CSTYLE_CAST_EXPR,
                         CK.CXX_STATIC_CAST_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR):
            if c.type.get_canonical().kind.name not in _WIDE_INTS:
                return None
            kids = [k for k in _children(c) if k.kind != CK.TYPE_REF]
            if len(kids) != 1:
                return None
            c = _strip(kids[0])
        return c

    def is_thread_x(self, c) -> bool:
        """Whether `c` (through wide casts) reads the builtin threadIdx.x."""
        c = self.through_wide_casts(c)
        if c is None or c.kind != self.CK.MEMBER_REF_EXPR or c.spelling != "x":
            return False
        base = _children(c)
        b = _strip(base[0]) if base else None
        return b is not None and b.kind == self.CK.DECL_REF_EXPR and \
            b.spelling == "threadIdx" and b.referenced is not None and \
            not _in_main(b.referenced, self.main)

    def x_like(self, c) -> bool:
        """`threadIdx.x`, the linear thread index, or a local holding either
        unchanged, through casts to integer types of 32 bits or more."""
        CK = self.CK
        if self.is_thread_x(c):
            return True
        c = self.through_wide_casts(c)
        if c is None:
            return False
        if self.is_linear_thread(c):     # a tile's ranks (fission_tiles.py): warps are
            return True                    # consecutive linear indices, whatever the rows
        if c.kind == CK.DECL_REF_EXPR and c.referenced is not None:
            return c.referenced.hash in self.x_locals
        return False

    def warp_uniform(self, c, counters=frozenset()) -> bool:
        """Whether expression `c` has one value in each warp of a block whose
        warps are whole rows of threadIdx.x (see the module's docstring);
        `counters`: the enclosing barrier loops' counters (block-uniform)."""
        CK = self.CK
        from .fission_classify import Refuse
        try:
            self.uniform_expr(c, allow_shared=False, counters=counters, why="condition")
            return True
        except Refuse:
            pass
        c = _strip(c)
        k = c.kind
        kids = [x for x in _children(c) if x.kind != CK.TYPE_REF]
        if k in (CK.PAREN_EXPR, CK.UNEXPOSED_EXPR, CK.CSTYLE_CAST_EXPR,
                 CK.CXX_STATIC_CAST_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR):
            return len(kids) == 1 and self.warp_uniform(kids[0], counters)
        if k == CK.MEMBER_REF_EXPR and c.spelling in ("y", "z"):
            # a warp lies in one row (blockDim.x a multiple of 32) or the
            # block is one row (y = z = 0): the Rows check of every launch
            b = _strip(kids[0]) if kids else None
            return b is not None and b.kind == CK.DECL_REF_EXPR and \
                b.spelling == "threadIdx" and b.referenced is not None and \
                not _in_main(b.referenced, self.main)
        if k == CK.DECL_REF_EXPR:
            return c.referenced is not None and c.referenced.hash in self.wu_locals
        if k == CK.UNARY_OPERATOR:
            return self.unop(c) in ("!", "-", "~", "+") and len(kids) == 1 and \
                self.warp_uniform(kids[0], counters)
        if k == CK.CONDITIONAL_OPERATOR:
            return len(kids) == 3 and all(self.warp_uniform(x, counters) for x in kids)
        if k != CK.BINARY_OPERATOR or len(kids) != 2:
            return False
        op = self.binop(c)
        a, b = kids
        if op in ("/", ">>") and c.type.get_canonical().kind.name not in _WIDE_INTS:
            return False
        if op == "/" and self.x_like(a):
            kv = self.literal(b)
            return kv is not None and kv > 0 and kv % 32 == 0
        if op == ">>" and self.x_like(a):
            kv = self.literal(b)
            return kv is not None and 5 <= kv < 32
        if op in _COMPARE:
            for x, lit, o in ((a, b, op), (b, a, {"<": ">", ">": "<", "<=": ">=",
                                                  ">=": "<="}[op])):
                if self.x_like(x):
                    kv = self.literal(lit)
                    if kv is None:
                        break
                    edge = kv if o in ("<", ">=") else kv + 1
                    return edge >= 0 and edge % 32 == 0
        if op in _ARITH:
            return self.warp_uniform(a, counters) and self.warp_uniform(b, counters)
        return False

    def find_warp_locals(self, written):
        """Locals holding threadIdx.x (x_locals) or a warp-uniform value
        (wu_locals), declared with one initialiser and never assigned."""
        CK = self.CK
        for x, _ in _walk(self.body):
            if x.kind != CK.VAR_DECL or x.hash in written or x.hash in self.shared:
                continue
            kind = x.type.get_canonical().kind.name
            if kind not in _WIDE_INTS | {"SHORT", "USHORT", "BOOL"}:
                continue
            inits = [c for c in x.get_children() if c.kind not in (
                CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
            if len(inits) != 1:
                continue
            if self.x_like(inits[0]) and kind in _WIDE_INTS:
                self.x_locals.add(x.hash)
            elif self.warp_uniform(inits[0]):
                self.wu_locals.add(x.hash)

    def block_barrier_in(self, c) -> bool:
        """Whether `c` holds a block barrier (not a warp function)."""
        return any(self.is_barrier_call(d) not in (None, "warp") for d, _ in _walk(c))

    def warp_if(self, st, kids, counters, last_barrier, why):
        """The ('wif', ...) item for an if whose condition is warp-uniform
        but not block-uniform; raises `why` (the block-uniformity refusal)
        when it is neither, or when a block barrier sits under it."""
        if any(self.block_barrier_in(b) for b in kids[1:]) or \
                not self.pure(kids[0]) or not self.warp_uniform(kids[0], frozenset(counters)):
            raise why
        self.guards += 1
        gid = self.guards
        grid = self.new_region()
        self.scan_region(kids[0], grid, top=False)
        parts = []
        for b in kids[1:]:
            parts.append(self.sequence([b] if b.kind != self.CK.COMPOUND_STMT
                                       else list(b.get_children()), counters, last_barrier))
        return ("wif", (kids[0].extent.start.offset, kids[0].extent.end.offset), parts[0],
                parts[1] if len(parts) > 1 else [], gid, grid)

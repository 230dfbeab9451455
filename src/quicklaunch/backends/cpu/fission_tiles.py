"""Region fission, part 0b: cooperative-groups tiles of at most 32 threads
lowered, as source, to the warp functions the CPU device builds them from
(include/cooperative_groups.h), so their kernels run as fission.

A tile `t` of N threads partitioned from the block (`auto t =
cg::tiled_partition<32>(block)`, or a copy or reference of one) disappears:
its declaration goes, and each use becomes what the header computes, spelled
on the launches fission runs (whole warps, every lane at the call, which the
pass proves or refuses): `t.shfl_down(v, d)` is `__shfl_down_sync(0xffffffffu,
v, d, N)` (the header's mask names the tile's own lanes, and a width-N
shuffle reads only those); `t.sync()` and `cg::sync(t)` are `__syncwarp`;
votes of a tile under 32 threads are the warp's ballot shifted to the tile's
lanes; `t.thread_rank()`, `meta_group_rank()`, `size()` are index
arithmetic. `cg::reduce`, `inclusive_scan` and `exclusive_scan` become calls
of generated helpers holding the header's own loop (the same shuffles and
the same order of `op`, so floating-point results are bit for bit the
fibers'), which the inliner (fission_inline.py) then inlines like the
user's.

Refused (the kernel stays on fibers, with the reason): tiles of more than
32 threads, tiles partitioned from tiles, a tile passed, stored or used other
than by its members, `match_any`/`match_all`, explicit template arguments,
values other than int, unsigned, long, long long, float and double, and an
operator other than a `cg::plus<T>()`-style temporary.
"""
from __future__ import annotations

import re

from .clang_front import _children, _strip, _walk
from .fission_classify import Refuse
from .fission_warp import COLLECTIVES as _COLLECTIVES
from .fission_warp import in_cg as _in_cg
from .fission_warp import reaches_tile

FULL = "0xffffffffu"
LINEAR = "::cooperative_groups::ql_linear_thread()"
_TILE = re.compile(r"^(?:const )?cooperative_groups::thread_block_tile<(\d+)U?(?:, .+)?>(?: &)?$")
_SCALARS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "FLOAT", "DOUBLE"}
# cooperative_groups' function objects: op(a, b), as the header defines them
_OPS = {"plus": "{a} + {b}", "less": "{b} < {a} ? {b} : {a}",
        "greater": "{a} < {b} ? {b} : {a}", "bit_and": "{a} & {b}", "bit_or": "{a} | {b}",
        "bit_xor": "{a} ^ {b}"}
_SHUFFLES = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync",
             "shfl_up": "__shfl_up_sync", "shfl_xor": "__shfl_xor_sync"}
PREFIX = "__ql_tile_"


def tile_size(t) -> int | None:
    """N of a (const, reference to) thread_block_tile<N> type, else None."""
    m = _TILE.match(t.get_canonical().spelling)
    return int(m.group(1)) if m else None


class Tiles:
    """The lowering of one kernel's tiles; `lower` returns (kernel text,
    helpers text), or None when the kernel uses no tile."""

    def __init__(self, inl):
        self.inl, self.CK, self.src = inl, inl.CK, inl.src
        self.helpers: dict = {}        # (kind, N, T, T2, op) -> helper name
        self.count = 0                 # tile operations lowered
        self.helper_text: list = []

    def line(self, c) -> int:
        return self.src.user_line(c.extent.start.offset)

    def text(self, c) -> str:
        a, b = c.extent.start.offset, c.extent.end.offset
        if a >= b:
            raise Refuse(f"a tile operation's argument spelled by a macro (line {self.line(c)})")
        return self.render(a, b)

    # ------------------------------------------------------------ driver
    def lower(self, fn):
        CK = self.CK
        self.src = self.inl.src
        body = [c for c in fn.get_children() if c.kind == CK.COMPOUND_STMT][0]
        self.parents = {c.hash: p for c, p in _walk(body)}
        self.tiles: dict = {}             # VAR_DECL hash -> N
        for c, p in _walk(body):
            if c.kind == CK.VAR_DECL and "thread_block_tile" in c.type.get_canonical().spelling:
                self.tiles[c.hash] = self.declaration(c, p)
        uses = [c for c, _ in _walk(body) if c.kind == CK.CALL_EXPR and reaches_tile(c)]
        if not self.tiles and not uses:
            return None
        self.repl: list = []              # (start, end, text function)
        for c, p in _walk(body):
            if c.kind == CK.DECL_STMT and any(v.hash in self.tiles for v in c.get_children()):
                v = next(v for v in c.get_children() if v.hash in self.tiles)
                text = self.src.text(c.extent.start.offset, c.extent.end.offset)
                if not re.search(rf"\b{re.escape(v.spelling)}\b", text) or \
                        not text.rstrip().endswith(";"):
                    raise Refuse(f"tile '{v.spelling}' declared by a macro (line "
                                 f"{self.line(c)})")
                self.repl.append((c.extent.start.offset, c.extent.end.offset, lambda: ""))
            elif c.kind == CK.DECL_REF_EXPR and c.referenced is not None and \
                    c.referenced.hash in self.tiles:
                self.use(c)
        for c in uses:                    # a temporary tile's, or one in an unevaluated place
            a, b = c.extent.start.offset, c.extent.end.offset
            if not any(s <= a and b <= e for s, e, _ in self.repl):
                raise Refuse(f"cooperative-groups '{c.spelling}' on a tile the pass cannot "
                             f"follow (line {self.line(c)})")
        self.repl.sort(key=lambda r: (r[0], -r[1]))
        a, b = body.extent.start.offset + 1, body.extent.end.offset
        kernel = self.inl.header(fn) + "{" + f"\n#line {self.src.user_line(a)}\n" + \
            self.render(a, b) + "\n"
        return kernel, "".join(self.helper_text)

    def render(self, a: int, b: int) -> str:
        """Source [a, b) with the outermost replacements inside it applied
        (a replacement's newlines kept, so later lines keep their numbers)."""
        out, pos = [], a
        for s, e, fn in self.repl:
            if s < pos or e > b or s < a:
                continue
            out.append(self.src.text(pos, s))
            out.append(fn() + "\n" * self.src.text(s, e).count("\n"))
            pos = e
        out.append(self.src.text(pos, b))
        return "".join(out)

    # ------------------------------------------------------ declarations
    def declaration(self, v, parent) -> int:
        """N of tile variable `v`, after checking that it is partitioned
        from the block or is a copy (or reference) of such a tile."""
        CK = self.CK
        n = tile_size(v.type)
        where = f"tile '{v.spelling}' (line {self.line(v)})"
        if n is None:
            raise Refuse(f"cooperative group of type '{v.type.spelling}' ({where})")
        if n > 32:
            raise Refuse(f"{where} of {n} threads (fission lowers tiles of at most 32)")
        grand = self.parents.get(parent.hash) if parent is not None else None
        if parent is None or parent.kind != CK.DECL_STMT or grand is None or \
                grand.kind != CK.COMPOUND_STMT or \
                len([x for x in parent.get_children() if x.kind == CK.VAR_DECL]) != 1:
            raise Refuse(f"{where} declared other than alone in a block")
        inits = [c for c in v.get_children()
                 if c.kind not in (CK.NAMESPACE_REF, CK.TEMPLATE_REF, CK.TYPE_REF)
                 and not (c.kind == CK.UNEXPOSED_EXPR and c.type.get_canonical().kind.name
                          == "UINT")]       # the template argument's conversion
        inits = [c for c in inits if c.kind != CK.INTEGER_LITERAL]
        if len(inits) != 1:
            raise Refuse(f"{where} without one initialiser")
        init = self.unwrap(inits[0])
        if init.kind == CK.DECL_REF_EXPR and init.referenced is not None and \
                init.referenced.hash in self.tiles:
            if self.tiles[init.referenced.hash] != n:
                raise Refuse(f"{where} converted from a tile of another size")
            return n
        if init.kind != CK.CALL_EXPR or init.spelling != "tiled_partition" or not _in_cg(init):
            raise Refuse(f"{where} not initialised by tiled_partition<{n}>(block)")
        args = list(init.get_arguments())
        if len(args) != 1 or not self.is_block(self.unwrap(args[0])):
            raise Refuse(f"{where} partitioned from something other than the thread block "
                         f"(fission lowers tiles of the block)")
        return n

    def unwrap(self, c):
        """`c` through parentheses, implicit conversions and a tile's copy
        constructor."""
        CK = self.CK
        while True:
            c = _strip(c)
            kids = [k for k in _children(c) if k.kind not in (CK.NAMESPACE_REF, CK.TYPE_REF,
                                                                  CK.TEMPLATE_REF)]
            if c.kind in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR) and len(kids) == 1:
                c = kids[0]
            elif c.kind == CK.CALL_EXPR and c.spelling == "thread_block_tile" and \
                    len(kids) == 1:
                c = kids[0]
            else:
                return c

    def is_block(self, c) -> bool:
        CK = self.CK
        if c.type.get_canonical().spelling.replace("const ", "") != \
                "cooperative_groups::thread_block":
            return False
        if c.kind == CK.DECL_REF_EXPR:
            return c.referenced is not None and c.referenced.kind in (CK.VAR_DECL,
                                                                       CK.PARM_DECL)
        return c.kind == CK.CALL_EXPR and c.spelling == "this_thread_block" and \
            _in_cg(c) and not list(c.get_arguments())

    # --------------------------------------------------------------- uses
    def up(self, c):
        """The nearest ancestor of `c` that is not an implicit conversion or a
        tile's copy constructor."""
        p = self.parents.get(c.hash)
        while p is not None and (p.kind in (self.CK.UNEXPOSED_EXPR, self.CK.PAREN_EXPR) or (
                p.kind == self.CK.CALL_EXPR and p.spelling == "thread_block_tile")):
            p = self.parents.get(p.hash)
        return p

    def use(self, ref):
        """Records the replacement of the member call or collective that
        tile reference `ref` is the object or first argument of."""
        CK = self.CK
        n = self.tiles[ref.referenced.hash]
        p = self.up(ref)
        where = f"tile '{ref.spelling}' (line {self.line(ref)})"
        if p is not None and p.kind == CK.VAR_DECL and p.hash in self.tiles:
            return                # a copy's or reference's initialiser: its declaration's
        if p is not None and p.kind == CK.MEMBER_REF_EXPR:
            call = self.up(p)
            if call is None or call.kind != CK.CALL_EXPR or not _in_cg(call):
                raise Refuse(f"{where}: member '{p.spelling}' used other than called")
            self.member(call, p.spelling, n, where)
            return
        if p is not None and p.kind == CK.CALL_EXPR and _in_cg(p):
            args = list(p.get_arguments())
            if args and self.unwrap(args[0]).hash == ref.hash:
                self.collective(p, n, where)
                return
        raise Refuse(f"{where} used other than by its members (passed, stored or copied)")

    def spelled(self, call, name, where, member: bool):
        """Refuses a call whose source range is not the call as written: a
        macro spelling it (`#define LANE (t.thread_rank() + 1)`: the range is
        the macro's name, and replacing it would drop the rest of the
        macro), or explicit template arguments (`t.shfl<int>(v, 0)`: the
        lowered intrinsic would deduce another type)."""
        a, b = call.extent.start.offset, call.extent.end.offset
        text = self.src.text(a, b)
        head = (r"\s*\(*\s*\w+\s*\)*\s*\.\s*" if member
                else r"\s*(?:::\s*)?(?:\w+\s*::\s*)*") + re.escape(name) + r"\s*"
        m = re.match(head, text)
        if m is None or not text.endswith(")") or not _closes_at_end(text, m.end()):
            if m is not None and text[m.end():m.end() + 1] == "<":
                raise Refuse(f"{where}: '{name}' with explicit template arguments")
            raise Refuse(f"{where}: '{name}' spelled by a macro (line {self.line(call)})")

    def member(self, call, name, n, where):
        args = list(call.get_arguments())
        self.spelled(call, name, where, member=True)
        m = (1 << n) - 1
        shift = f"({LINEAR} & {32 - n}u)"
        a = call.extent.start.offset, call.extent.end.offset

        def ballot(p):
            return f"((__ballot_sync({FULL}, {p}) >> {shift}) & {m}u)"
        if name == "sync":
            fn = lambda: f"__syncwarp({FULL})"                                   # noqa: E731
        elif name == "thread_rank":
            fn = lambda: f"({LINEAR} & {n - 1}u)"                                 # noqa: E731
        elif name in ("size", "num_threads"):
            fn = lambda: f"({n}u)"                                                # noqa: E731
        elif name == "meta_group_rank":
            fn = lambda: f"({LINEAR} / {n}u)"                                     # noqa: E731
        elif name == "meta_group_size":
            fn = lambda: f"((blockDim.x * blockDim.y * blockDim.z + {n - 1}u) / {n}u)"  # noqa: E731
        elif name in _SHUFFLES and len(args) == 2:
            self.scalar(call, where)
            if name == "shfl_xor" and n < 32 and not self.below(args[1], n):
                # a lane mask of N or more reads a lane of an earlier tile,
                # outside the tile's mask: the fibers report it, a full-warp
                # shuffle would not
                raise Refuse(f"{where}: shfl_xor of a {n}-thread tile with a lane mask the "
                             f"pass cannot prove below {n} (use a literal, or cg::reduce)")
            fn = lambda: (f"{_SHUFFLES[name]}({FULL}, {self.text(args[0])}, "    # noqa: E731
                          f"{self.text(args[1])}, {n})")
        elif name in ("any", "all", "ballot") and len(args) == 1:
            if n == 32:
                fn = lambda: f"__{name}_sync({FULL}, {self.text(args[0])})"     # noqa: E731
            elif name == "ballot":
                fn = lambda: ballot(self.text(args[0]))                          # noqa: E731
            elif name == "any":
                fn = lambda: f"((int)({ballot(self.text(args[0]))} != 0u))"     # noqa: E731
            else:
                fn = lambda: f"((int)({ballot(self.text(args[0]))} == {m}u))"   # noqa: E731
        else:
            raise Refuse(f"{where}: member '{name}' (fission lowers sync, ranks, sizes, "
                         f"shuffles and votes)")
        self.repl.append((a[0], a[1], fn))
        self.count += 1

    def below(self, c, n) -> bool:
        """Whether expression `c` is an integer literal in [0, n)."""
        c = self.unwrap(c)
        if c.kind != self.CK.INTEGER_LITERAL:
            return False
        text = self.src.text(c.extent.start.offset, c.extent.end.offset).rstrip("uUlL")
        return text.isdigit() and int(text, 10 if text[:1] != "0" or text == "0" else 8) < n

    def scalar(self, call, where) -> str:
        t = call.type.get_canonical()
        if t.kind.name not in _SCALARS:
            raise Refuse(f"{where}: a tile operation on '{call.type.spelling}' (fission "
                         f"lowers int, unsigned, long, long long, float and double)")
        return t.spelling

    # --------------------------------------------------------- collectives
    def collective(self, call, n, where):
        name = call.spelling
        args = list(call.get_arguments())
        a = call.extent.start.offset, call.extent.end.offset
        self.spelled(call, name, where, member=False)
        if name == "sync" and len(args) == 1:
            self.repl.append((a[0], a[1], lambda: f"__syncwarp({FULL})"))
            self.count += 1
            return
        if name not in _COLLECTIVES or len(args) not in (2, 3):
            raise Refuse(f"{where} passed to cooperative_groups::{name} (fission lowers "
                         f"sync, reduce, inclusive_scan and exclusive_scan)")
        t = self.scalar(call, where)
        if len(args) == 3:
            op, t2 = self.operator(args[2], where)
        elif name == "reduce":
            raise Refuse(f"{where}: reduce without an operator")
        else:
            op, t2 = "plus", t
        key = (name, n, t, t2, op)
        if key not in self.helpers:
            self.helpers[key] = f"{PREFIX}{len(self.helpers)}"
            self.helper_text.append(f"\n#line {self.line(call)}\n" +
                                    _helper(name, self.helpers[key], n, t, t2, op))
        helper = self.helpers[key]
        self.repl.append((a[0], a[1], lambda: f"{helper}({self.text(args[1])})"))
        self.count += 1

    def operator(self, c, where):
        """(op name, its T) of a `cg::plus<T>()` temporary."""
        CK = self.CK
        t = c.type.get_canonical()
        m = re.fullmatch(r"cooperative_groups::(\w+)<(.+)>", t.spelling)
        if m is None or m.group(1) not in _OPS:
            raise Refuse(f"{where}: an operator of type '{c.type.spelling}' (fission lowers "
                         f"cg::plus, less, greater, bit_and, bit_or and bit_xor)")
        for x, _ in _walk(c):
            if x.kind not in (CK.UNEXPOSED_EXPR, CK.CALL_EXPR, CK.NAMESPACE_REF,
                              CK.TEMPLATE_REF, CK.TYPE_REF, CK.INIT_LIST_EXPR) or \
                    (x.kind == CK.CALL_EXPR and x.spelling != m.group(1)):
                raise Refuse(f"{where}: an operator other than a cg::{m.group(1)}<T>() "
                             f"temporary")
        t2 = t.get_template_argument_type(0)
        if t2.kind.name not in _SCALARS:
            raise Refuse(f"{where}: an operator on '{m.group(2)}'")
        return m.group(1), t2.get_canonical().spelling


def _helper(kind: str, name: str, n: int, t: str, t2: str, op: str) -> str:
    """The header's collective for a tile of n <= 32 threads, as a function
    of the module (the inliner inlines it)."""
    def apply(a, b):
        return f"({t})({t2})({_OPS[op].format(a=f'({t2})({a})', b=f'({t2})({b})')})"
    head = f"static __device__ __forceinline__ {t} {name}({t} __ql_v) {{ "
    if kind == "reduce":
        return (head + f"for (unsigned __ql_o = {n // 2}u; __ql_o > 0u; __ql_o /= 2u) {{ "
                f"const {t} __ql_x = __shfl_xor_sync({FULL}, __ql_v, __ql_o, {n}); "
                f"__ql_v = {apply('__ql_v', '__ql_x')}; }} return __ql_v; }}\n")
    scan = (f"const unsigned __ql_r = {LINEAR} & {n - 1}u; "
            f"for (unsigned __ql_d = 1u; __ql_d < {n}u; __ql_d *= 2u) {{ "
            f"const {t} __ql_o = __shfl_up_sync({FULL}, __ql_v, __ql_d, {n}); "
            f"if (__ql_r >= __ql_d) __ql_v = {apply('__ql_o', '__ql_v')}; }} ")
    if kind == "inclusive_scan":
        return head + scan + "return __ql_v; }\n"
    return (head + scan + f"const {t} __ql_p = __shfl_up_sync({FULL}, __ql_v, 1u, {n}); "
            f"return __ql_r ? __ql_p : ({t})0; }}\n")


def _closes_at_end(text: str, i: int) -> bool:
    """Whether the '(' at text[i] is closed by text's last character."""
    if text[i:i + 1] != "(":
        return False
    depth = 0
    for j in range(i, len(text)):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return j == len(text) - 1
    return False

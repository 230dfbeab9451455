"""Region fission, part 1: what a kernel's calls and expressions are (the
barriers and warp functions, what a callee reaches, which values are
block-uniform, which variables a statement writes). A mixin of
fission._Kernel; the state it reads is set up there."""
from __future__ import annotations

import os

from ...signature import TIER2_NAMES
from . import fission_warp
from .clang_front import (_children, _in_main, _strip, _walk, binary_operator,
                          statement_end, unary_operator)


class Refuse(Exception):
    """The pass cannot prove the rewrite exact: the kernel stays on fibers,
    with this reason."""


def _cub_header(path: str) -> bool:
    """Whether `path` is one of the shim's CUB headers (include/cub/)."""
    from .toolchain import INCLUDE_DIR
    return os.path.realpath(path).startswith(os.path.realpath(INCLUDE_DIR / "cub") + os.sep)


BARRIERS = {"__syncthreads": None, "__syncthreads_count": "count",
            "__syncthreads_and": "and", "__syncthreads_or": "or"}
_ALLOWED_CG = {"this_thread_block", "cooperative_groups", "ql_linear_thread"}
# Fiber yields: a thread that waits for another one in its own region would
# wait for ever in a thread loop.
_YIELDS = {"__nanosleep"}
_REFUSED = (TIER2_NAMES | _YIELDS) - _ALLOWED_CG - set(BARRIERS) - set(fission_warp.WARP_OPS)
_UNIFORM_BUILTINS = {"blockIdx", "blockDim", "gridDim", "warpSize", "__ql_dyn_shared"}


class Classify:
    # ------------------------------------------------------------ tokens
    def tokens(self, c):
        return list(c.get_tokens())

    def first_token(self, c):
        for t in c.get_tokens():
            return t.spelling
        return None

    def ext(self, c):
        return c.extent.start.offset, c.extent.end.offset

    def stmt_end(self, c) -> int:
        """End offset of statement `c`, its `;` included."""
        return statement_end(c, self.CK, self.src.data)

    # ------------------------------------------------------- classification
    def is_barrier_call(self, c):
        """The barrier kind of a call ('plain', 'count', 'and', 'or'), else None."""
        if c.kind != self.CK.CALL_EXPR:
            return None
        name = c.spelling
        ref = c.referenced
        if name in BARRIERS:
            return BARRIERS[name] or "plain"
        if fission_warp.is_warp_call(c):
            return "warp"
        if name == "sync":
            if ref is not None and ref.semantic_parent is not None \
                    and ref.semantic_parent.spelling == "thread_block":
                return "plain"
            args = [a for a in c.get_arguments()]
            if ref is not None and ref.semantic_parent is not None and \
                    ref.semantic_parent.spelling == "cooperative_groups" and len(args) == 1 \
                    and "thread_block" in args[0].type.spelling \
                    and "tile" not in args[0].type.spelling:
                return "plain"
        return None

    def is_linear_thread(self, c) -> bool:
        """Whether `c` calls cooperative_groups' ql_linear_thread() (a tile's
        ranks, lowered by fission_tiles.py): the thread's linear index."""
        r = c.referenced if c.kind == self.CK.CALL_EXPR else None
        f = r.location.file if r is not None else None
        return c.spelling == "ql_linear_thread" and f is not None and \
            f.name.endswith("cooperative_groups.h")

    def contains_barrier(self, c) -> bool:
        return any(self.is_barrier_call(d) for d, _ in _walk(c))

    def check_callee(self, c):
        """Refuses a call whose callee (a user function) reaches a barrier or
        warp function, or a cooperative-groups function other than the block's."""
        ref = c.referenced
        name = c.spelling
        if name in _YIELDS:
            raise Refuse(f"'{name}' (a thread may be waiting for another one)")
        if name in _REFUSED:
            raise Refuse(f"warp or cooperative-groups operation '{name}' (fission handles "
                         f"block barriers only)")
        if ref is not None and ref.location.file is not None \
                and _cub_header(ref.location.file.name) and \
                not ref.spelling.startswith("ql_fission_") and \
                not (ref.kind == self.CK.CONSTRUCTOR and ref.spelling == "Uninitialized"):
            # (fission_cub.py's halves of a collective; TempStorage's raw bytes)
            raise Refuse(f"CUB collective '{name}' (its barriers are inside the library)")
        if ref is not None and ref.location.file is not None \
                and ref.location.file.name.endswith("cooperative_groups.h"):
            parent = ref.semantic_parent.spelling if ref.semantic_parent else ""
            if parent != "thread_block" and name not in _ALLOWED_CG:
                raise Refuse(f"cooperative-groups operation '{name}' (fission handles "
                             f"thread_block only)")
        targets = []
        if ref is not None and _in_main(ref, self.main):
            d = ref.get_definition() or ref
            targets = [d]
        elif ref is None and name:
            targets = self.defs.get(name, [])
        for d in targets:
            if self.reaches_tier2(d):
                raise Refuse(f"a barrier or warp function in called function '{name}'")
            if self.recursive(d, set()):
                raise Refuse(f"a recursive call through '{name}' (fibers bound each CUDA "
                             f"thread's stack and report its overflow)")

    def recursive(self, d, path) -> bool:
        """Whether user function `d` can call itself (through user functions)."""
        if d.hash in path:
            return True
        if len(path) > 30:
            return True
        path = path | {d.hash}
        for x, _ in _walk(d):
            if x.kind != self.CK.CALL_EXPR:
                continue
            r = x.referenced
            cands = [r.get_definition() or r] if r is not None and _in_main(r, self.main) \
                else (self.defs.get(x.spelling, []) if r is None else [])
            if any(self.recursive(c, path) for c in cands):
                return True
        return False

    def reaches_tier2(self, d, depth=0) -> bool:
        h = d.hash
        if h in self.callee_memo:
            return self.callee_memo[h]
        self.callee_memo[h] = False
        hit = False
        for x, _ in _walk(d):
            s = x.spelling
            if x.kind in (self.CK.CALL_EXPR, self.CK.DECL_REF_EXPR, self.CK.MEMBER_REF_EXPR,
                          self.CK.OVERLOADED_DECL_REF, self.CK.TYPE_REF,
                          self.CK.NAMESPACE_REF, self.CK.TEMPLATE_REF) and s:
                if s in TIER2_NAMES or s in _YIELDS or self.is_barrier_call(x) or \
                        (x.kind == self.CK.CALL_EXPR and s == "sync") or \
                        fission_warp.reaches_tile(x):
                    hit = True
                    break
            if x.kind == self.CK.CALL_EXPR and depth < 20:
                r = x.referenced
                cands = []
                if r is not None and _in_main(r, self.main):
                    cands = [r.get_definition() or r]
                elif r is None:
                    cands = self.defs.get(s, [])
                if any(c.hash != d.hash and self.reaches_tier2(c, depth + 1) for c in cands):
                    hit = True
                    break
        self.callee_memo[h] = hit
        return hit

    # -------------------------------------------------------- uniformity
    def var_of(self, c):
        r = c.referenced
        return r

    def is_shared_decl(self, vd) -> bool:
        """`__shared__` is `thread_local` in the shim: one per worker."""
        try:
            return vd.tls_kind != self.ci.TLSKind.NONE
        except Exception:
            return False

    def uniform_expr(self, c, allow_shared: bool, counters=frozenset(), why="condition"):
        """Raises Refuse unless `c` has the same value in every thread of the
        block. Returns whether it reads shared memory."""
        CK = self.CK
        reads_shared = False
        for x, parent in _walk(c):
            k = x.kind
            if k in (CK.INTEGER_LITERAL, CK.FLOATING_LITERAL, CK.CXX_BOOL_LITERAL_EXPR,
                     CK.CHARACTER_LITERAL, CK.PAREN_EXPR, CK.UNEXPOSED_EXPR,
                     CK.CONDITIONAL_OPERATOR, CK.CSTYLE_CAST_EXPR, CK.CXX_STATIC_CAST_EXPR,
                     CK.CXX_FUNCTIONAL_CAST_EXPR, CK.CXX_REINTERPRET_CAST_EXPR,
                     CK.CXX_CONST_CAST_EXPR, CK.TYPE_REF, CK.NAMESPACE_REF,
                     CK.TEMPLATE_REF, CK.CXX_NULL_PTR_LITERAL_EXPR):
                continue
            if k == CK.UNARY_OPERATOR:
                if self.unop(x) in ("++", "--", "&", None):
                    self.check_counter_write(x, counters, why)
                continue
            if k in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR):
                op = self.binop(x)
                if op is None or op in ("=",) or k == CK.COMPOUND_ASSIGNMENT_OPERATOR:
                    self.check_counter_write(x, counters, why)
                continue
            if k == CK.CXX_UNARY_EXPR:      # sizeof, alignof
                continue
            if k == CK.MEMBER_REF_EXPR:
                base = _children(x)
                if base and _strip(base[0]).kind == CK.DECL_REF_EXPR and \
                        _strip(base[0]).spelling == "threadIdx":
                    raise Refuse(f"a barrier under a thread-dependent {why} (threadIdx)")
                continue
            if k == CK.ARRAY_SUBSCRIPT_EXPR:
                base = _strip(_children(x)[0])
                r = base.referenced if base.kind == CK.DECL_REF_EXPR else None
                if r is not None and r.hash in self.shared:
                    reads_shared = True
                    continue
                raise Refuse(f"a barrier under a {why} that reads memory other threads "
                             f"may write")
            if k == CK.DECL_REF_EXPR:
                r = x.referenced
                if r is None:
                    raise Refuse(f"a barrier under a {why} naming '{x.spelling}', which "
                                 f"cannot be resolved")
                if r.kind in (CK.ENUM_CONSTANT_DECL, CK.TEMPLATE_NON_TYPE_PARAMETER,
                              CK.FUNCTION_DECL):
                    continue
                if r.kind == CK.PARM_DECL:
                    if r.hash in self.uniform:
                        continue
                    raise Refuse(f"a barrier under a {why} naming parameter '{r.spelling}', "
                                 f"which the kernel modifies")
                if r.kind == CK.VAR_DECL:
                    if r.spelling == "threadIdx":
                        raise Refuse(f"a barrier under a thread-dependent {why} (threadIdx)")
                    if r.hash in self.uniform or r.hash in counters:
                        continue
                    if r.hash in self.shared:
                        reads_shared = True
                        continue
                    if not _in_main(r, self.main) and r.spelling in _UNIFORM_BUILTINS:
                        continue
                    sp = r.semantic_parent
                    if sp is not None and sp.kind in (CK.NAMESPACE, CK.TRANSLATION_UNIT,
                                                      CK.LINKAGE_SPEC, CK.STRUCT_DECL,
                                                      CK.CLASS_DECL) \
                            and r.type.is_const_qualified():
                        continue
                    raise Refuse(f"a barrier under a thread-dependent {why} (it names "
                                 f"'{r.spelling}', line {self.src.user_line(x.extent.start.offset)})")
                raise Refuse(f"a barrier under a {why} naming '{x.spelling}'")
            if k == CK.CALL_EXPR:
                raise Refuse(f"a barrier under a {why} that calls '{x.spelling}'")
            raise Refuse(f"a barrier under a {why} the pass cannot read ({k.name.lower()})")
        if reads_shared and not allow_shared:
            raise Refuse(f"a barrier under a {why} that reads shared memory not just written "
                         f"before a barrier")
        return reads_shared

    def binop(self, x):
        """A binary operator cursor's operator, None when unknown (treated as
        a write by every caller)."""
        return binary_operator(x)

    def unop(self, x):
        """A unary operator cursor's operator ('++' pre or post, '&', ...)."""
        return unary_operator(x)

    def check_counter_write(self, x, counters, why):
        kids = _children(x)
        target = _strip(kids[0]) if kids else None
        if target is not None and target.kind == self.CK.DECL_REF_EXPR and \
                target.referenced is not None and target.referenced.hash in counters:
            return
        raise Refuse(f"a barrier under a {why} with a side effect")

    # ----------------------------------------------------------- writes
    def written_vars(self, root):
        """Names by hash of the variables `root` may modify. A variable is
        only read where its name is converted to a value (an implicit
        conversion of the same extent), subscripted, or an operand of an
        operator that reads it; every other use counts as a write: assigned
        (through parentheses, a conditional or a comma), incremented,
        address-taken, bound to a reference (a by-reference argument, a
        reference local or member, a cast to a reference, a brace list), or
        anything the pass does not know."""
        CK = self.CK
        out = {}
        stack = []

        def visit(c):
            if c.kind == CK.DECL_REF_EXPR:
                r = c.referenced
                if r is not None and r.kind in (CK.VAR_DECL, CK.PARM_DECL) and \
                        self.lvalue_use(c, stack):
                    out[r.hash] = r.spelling
            stack.append(c)
            for ch in c.get_children():
                visit(ch)
            stack.pop()
        visit(root)
        return out

    def lvalue_use(self, c, stack) -> bool:
        """Whether the name `c` (its ancestors in `stack`) may be written
        through where it is used (see written_vars)."""
        CK = self.CK
        q, i = c, len(stack) - 1
        while i >= 0 and stack[i].kind == CK.PAREN_EXPR:
            q, i = stack[i], i - 1
        if i < 0:
            return False
        p = stack[i]
        k = p.kind
        if k == CK.UNEXPOSED_EXPR:     # an implicit conversion keeps the extent
            return self.ext(p) != self.ext(q)
        if k in (CK.ARRAY_SUBSCRIPT_EXPR, CK.CXX_UNARY_EXPR, CK.IF_STMT, CK.WHILE_STMT,
                 CK.FOR_STMT, CK.DO_STMT, CK.SWITCH_STMT, CK.CASE_STMT, CK.RETURN_STMT,
                 CK.COMPOUND_STMT):
            return False
        if k == CK.UNARY_OPERATOR:
            return self.unop(p) in ("++", "--", "&", None)
        if k in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR):
            op = self.binop(p)
            kids = _children(p)
            first = bool(kids) and kids[0].hash == q.hash
            if op is None:
                return True
            if op == ",":
                return not first
            if op.endswith("=") and op not in ("==", "!=", "<=", ">="):
                return first
            return False
        if k == CK.CONDITIONAL_OPERATOR:
            kids = _children(p)
            return not (kids and kids[0].hash == q.hash)
        if k == CK.VAR_DECL:     # (auto& and decltype(auto) deduce to a reference)
            return p.type.get_canonical().kind in (self.ci.TypeKind.LVALUEREFERENCE,
                                                   self.ci.TypeKind.RVALUEREFERENCE)
        if k in (CK.CSTYLE_CAST_EXPR, CK.CXX_STATIC_CAST_EXPR, CK.CXX_FUNCTIONAL_CAST_EXPR,
                 CK.CXX_REINTERPRET_CAST_EXPR, CK.CXX_CONST_CAST_EXPR):
            # a value cast converts its operand first (an implicit conversion
            # in between) unless the operand's type is a template's: a name
            # right under the cast is cast to a reference
            if q.type.get_canonical().kind.name not in ("UNEXPOSED", "DEPENDENT"):
                return True
            before = [t.spelling for t in p.get_tokens()
                      if t.extent.start.offset < q.extent.start.offset]
            return "&" in before or "&&" in before
        return True

"""Thread-strided loops in region fission, lanes innermost.

`for (int c = threadIdx.x; c < cols; c += 32) { ... }` is how a warp (or a
block) walks a row together: thread x takes elements x, x + 32, ... Run
thread by thread, as a region's thread loop runs it, each thread's loop is
a chain of dependent steps (an online softmax's running max and sum) over
elements 32 apart: nothing the host compiler can vectorise. Run with the
threads innermost, step k of every thread comes before step k + 1 of any:
thread x works on element c0 + x, so one step of the whole block reads
consecutive elements and each thread's running values sit in consecutive
scratch slots (they are replicated locals: the loop is a region of its
own), a loop the compiler vectorises.

Only the order in which different threads' steps run changes, and nothing
orders them in CUDA either: the loop holds no barrier, so threads that
exchange data inside it race. Each thread still runs its own steps in
order, with its own values, so a race-free kernel gets the same bits.
The loop qualifies (else it stays in its region's thread loop) when:

* its counter is declared in its header, of an integer type, initialised
  to `threadIdx.x` or `threadIdx.x + A` (a local holding threadIdx.x
  counts), tested `c < B` or `c <= B` and stepped `c += S` or
  `c = c + S`, with A, B and S block-uniform and free of side effects, so
  every thread's counter is `c0 + x` at step k, where c0 is thread 0's,
  and the threads still in the loop are a prefix of the row;
* its body never writes the counter and holds no barrier, warp function,
  nested loop, switch, `return`, `break` or `goto`, nothing volatile, and
  calls only the shim's math (no atomics, printf or assert: their order
  across threads would show; no user function: it may do any of those).
  A `continue` ends the thread's step, as in the original.

The threads of one row (fixed threadIdx.y and z) are interchanged; a step
in which the last thread is still in the loop runs all of them with no
test (the vectorised loop), the last step tests each thread. Exited
threads and warp-uniform guards are skipped as in every thread loop. The
body reads its thread's coordinates from a local, as in every thread loop;
the thread-local copy that fault reports read holds threadIdx.y and .z but
not .x (a vectorised loop has no one current thread), so a fault in such a
loop names the thread as (?, y, z), as a plain (tier-1) kernel does, and
says how to have it named (a debug build runs fibers). A mixin of
fission._Kernel."""
from __future__ import annotations

import os
import re

from . import fission_warp
from .clang_front import _children, _in_main, _strip, _walk
from .fission_codegen import PARALLEL

_INTS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG"}
# The shim's headers whose functions are pure arithmetic
_PURE_HEADERS = {"ql_math.h", "ql_exp.h", "ql_half.h", "ql_vector_types.h"}
# The C library's math that the shim leaves to it (modules are built with
# -fno-math-errno: no errno either)
_LIBM = {f + s for f in ("fma", "sqrt", "cbrt", "hypot", "fabs", "floor", "ceil", "trunc",
                         "round", "rint", "nearbyint", "fmin", "fmax", "fmod", "remainder",
                         "copysign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
                         "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
                         "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "ldexp",
                         "scalbn", "ilogb", "logb", "lrint", "llrint", "lround", "llround",
                         "fdim") for s in ("", "f")} | {"abs", "labs", "llabs"}


class Strided:
    def strided_loop(self, st):
        """The interchange plan of `st` when it is a thread-strided loop
        that qualifies (see the module's docstring), else None."""
        CK = self.CK
        if st.kind != CK.FOR_STMT or self.first_token(st) != "for":
            return None
        kids = _children(st)
        parts = self.header_parts(st) if kids else None
        if not parts or len(parts[1]) != 2 or len(kids) != 4:
            return None
        start, (s1, s2), close = parts
        init, cond, inc, body = kids
        if init.kind != CK.DECL_STMT or not (init.extent.end.offset <= s1 + 1 and
                                             s1 < cond.extent.start.offset < s2 and
                                             s2 < inc.extent.start.offset < close):
            return None
        vds = [v for v in init.get_children() if v.kind == CK.VAR_DECL]
        if len(vds) != 1 or vds[0].type.get_canonical().kind.name not in _INTS or \
                vds[0].type.is_const_qualified() or vds[0].type.is_volatile_qualified():
            return None
        var = vds[0]
        inits = [c for c in var.get_children() if c.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF)]
        if len(inits) != 1:
            return None
        offset = self._x_plus(inits[0])
        bound = self._compare(cond, var)
        step = self._step(inc, var)
        if offset is None or bound is None or step is None:
            return None
        ctype = var.type.get_canonical()
        # thread x's first counter is c0 + x in the counter's type only when
        # threadIdx.x + A has its width (an unsigned sum widened to a 64-bit
        # counter is not), and the test orders the threads only when it
        # compares in the counter's type (an int against an unsigned bound
        # does not)
        total = _strip(inits[0]).type.get_canonical()
        if offset != "0" and (total.kind.name not in _INTS or
                              total.get_size() != ctype.get_size()):
            return None
        if bound[2].kind != ctype.kind:
            return None
        if not self._plain_body(body, var) or self._local_names(st):
            return None
        return {"var": var, "type": self.spell_type(var.type), "offset": offset,
                "op": bound[0], "bound": bound[1], "step": step, "body": body}

    # ------------------------------------------------------------ header
    def _uniform_text(self, e):
        """The source text of `e` when it is block-uniform and only reads,
        and names no macro of the module but a number (the text is emitted
        outside the loop's region, where a macro's locals are not)."""
        from .fission_classify import Refuse
        if not self.pure(e):
            return None
        text = self.src.text(e.extent.start.offset, e.extent.end.offset)
        if not hasattr(self, "defined"):
            self.defined = set(re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)",
                                          self.src.text(0, len(self.src.data)), re.M))
        if not hasattr(self, "macros"):   # (shared with fission_structure's warp_stmt)
            self.macros = fission_warp.object_macros(self.src.text(0, len(self.src.data)))
        for name in re.findall(r"[A-Za-z_]\w*", text):
            if name in self.defined and not re.fullmatch(r"\(*[0-9][0-9a-fA-FxXuUlL.]*\)*",
                                                         self.macros.get(name, "")):
                return None
        try:
            if self.uniform_expr(e, False, frozenset(getattr(self, "counters_now", ())),
                                 "strided loop"):
                return None
        except Refuse:
            return None
        return text

    def _x_only(self, c) -> bool:
        """`threadIdx.x`, or a local holding it unchanged (fission_guards.py's
        x_locals, the linear index excluded), through casts to integer types
        of 32 bits or more."""
        if self.is_thread_x(c):
            return True
        c = self.through_wide_casts(c)
        if c is not None and c.kind == self.CK.DECL_REF_EXPR and c.referenced is not None \
                and c.referenced.hash in self.x_locals:
            inits = [k for k in c.referenced.get_children()
                     if k.kind not in (self.CK.TYPE_REF, self.CK.NAMESPACE_REF)]
            return len(inits) == 1 and self._x_only(inits[0])
        return False

    def _x_plus(self, e):
        """A for `threadIdx.x + A` ("0" for threadIdx.x alone), else None."""
        CK = self.CK
        e = _strip(e)
        if self._x_only(e):
            return "0"
        if e.kind == CK.BINARY_OPERATOR and self.binop(e) == "+":
            a, b = _children(e)
            for x, other in ((a, b), (b, a)):
                if self._x_only(x):
                    return self._uniform_text(other)
        return None

    def _is_var(self, e, var) -> bool:
        e = _strip(e)
        return e.kind == self.CK.DECL_REF_EXPR and e.referenced is not None and \
            e.referenced.hash == var.hash

    def _compare(self, cond, var):
        """(op, B) for `var < B`, `var <= B`, `B > var` or `B >= var`."""
        e = _strip(cond)
        if e.kind != self.CK.BINARY_OPERATOR:
            return None
        op = self.binop(e)
        a, b = _children(e)
        flipped = {">": "<", ">=": "<="}
        if op in ("<", "<=") and self._is_var(a, var):
            other = b
        elif op in flipped and self._is_var(b, var):
            op, other = flipped[op], a
        else:
            return None
        text = self._uniform_text(other)
        side = a if other is b else b   # the counter, as converted for the test
        return None if text is None else (op, text, side.type.get_canonical())

    def _step(self, inc, var):
        """S for `var += S` or `var = var + S`."""
        CK = self.CK
        e = _strip(inc)
        kids = _children(e)
        if len(kids) != 2 or not self._is_var(kids[0], var):
            return None
        if e.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR:
            lhs_end = kids[0].extent.end.offset
            after = [t.spelling for t in e.get_tokens() if t.extent.start.offset >= lhs_end]
            return self._uniform_text(kids[1]) if after[:1] == ["+="] else None
        if e.kind == CK.BINARY_OPERATOR and self.binop(e) == "=":
            r = _strip(kids[1])
            if r.kind == CK.BINARY_OPERATOR and self.binop(r) == "+":
                a, b = _children(r)
                if self._is_var(a, var):
                    return self._uniform_text(b)
        return None

    def _local_names(self, st) -> bool:
        """Whether the loop names a type, enumerator or typedef the kernel
        declares: the loop's region is emitted apart from the statements
        before it, where such a declaration may sit."""
        CK = self.CK
        a, b = self.body.extent.start.offset, self.body.extent.end.offset
        for x, _ in _walk(st):
            if x.kind in (CK.TYPE_REF, CK.DECL_REF_EXPR, CK.TEMPLATE_REF):
                r = x.referenced
                if r is not None and r.kind in (
                        CK.TYPEDEF_DECL, CK.TYPE_ALIAS_DECL, CK.ENUM_DECL,
                        CK.ENUM_CONSTANT_DECL, CK.STRUCT_DECL, CK.CLASS_DECL,
                        CK.UNION_DECL) and _in_main(r, self.main) and \
                        a <= r.extent.start.offset < b and \
                        not (st.extent.start.offset <= r.extent.start.offset <
                             st.extent.end.offset):
                    return True
        return False

    # -------------------------------------------------------------- body
    def _plain_body(self, body, var) -> bool:
        CK = self.CK
        if var.hash in self.written_vars(body):
            return False
        loops = (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT)
        for x, _ in _walk(body):
            k = x.kind
            if k in loops or k in (CK.SWITCH_STMT, CK.RETURN_STMT, CK.BREAK_STMT,
                                   CK.GOTO_STMT, CK.INDIRECT_GOTO_STMT, CK.LAMBDA_EXPR,
                                   CK.CXX_THROW_EXPR, CK.CXX_NEW_EXPR, CK.CXX_DELETE_EXPR):
                return False
            if k == CK.CALL_EXPR and not self.pure_call(x):
                return False
            if k in (CK.DECL_REF_EXPR, CK.MEMBER_REF_EXPR, CK.VAR_DECL) and \
                    "volatile" in x.type.spelling:
                return False
            if k == CK.DECL_REF_EXPR and x.referenced is not None and \
                    "volatile" in x.referenced.type.spelling:
                return False
        return True

    def pure_call(self, call) -> bool:
        """A call of the shim's math (expf, fmaxf, __fdividef, make_float2,
        conversions), nothing else: their order across threads cannot show."""
        if self.is_barrier_call(call):
            return False
        ref = call.referenced
        if ref is None:
            return False
        if ref.kind in (self.CK.CONSTRUCTOR, self.CK.CONVERSION_FUNCTION) and \
                not _in_main(ref, self.main):
            return True   # (a vector type's or half's own)
        f = ref.location.file
        if f is None or _in_main(ref, self.main):
            return False
        return os.path.basename(f.name) in _PURE_HEADERS or ref.spelling in _LIBM

    # -------------------------------------------------------------- code
    def emit_strided(self, rid, st, plan) -> str:
        """The loop with the row's threads innermost (see the module's
        docstring)."""
        written = set(self.written_vars(st))
        refs, outs = self.copies(self.region_uses(rid, set()), set(), written)
        skip = "if (__ql_exited[__ql_t]) continue; " if self.returns else ""
        if self.guard_stack:
            skip += f"if (!({' && '.join(self.guard_stack)})) continue; "
        body = plan["body"]
        text = self.line(body.extent.start.offset) + self.piece(body, {}, rid)
        name, op, bound = plan["var"].spelling, plan["op"], plan["bound"]
        hdr = self.line(st.extent.start.offset)
        parallel = PARALLEL if self.parallel_ok((body,)) else ""

        def lanes(last: bool) -> str:
            test = f"if (!(__ql_cx{rid} {op} ({bound}))) break; " if last else ""
            # The counter is an induction variable of its own, not c0 plus a
            # converted lane index, so that element accesses stay affine; it
            # is declared in a scope of its own, inside the thread's copies of
            # the replicated locals (a local of the kernel may have its name).
            return (f"__ql_C{rid} __ql_cx{rid} = __ql_c{rid}; "
                    f"{parallel}for (size_t __ql_i = 0; __ql_i < __ql_bx; "
                    f"++__ql_i, ++__ql_cx{rid}) {{ "
                    "const size_t __ql_t = __ql_t0 + __ql_i; const unsigned __ql_x = "
                    f"(unsigned)__ql_i; {test}"
                    f"{skip}{{ const uint3 threadIdx = {{__ql_x, __ql_y, __ql_z}}; "
                    f"(void)threadIdx; {refs}{{ __ql_C{rid} {name} = __ql_cx{rid};"
                    f"\ndo {text}\n while (0);\n}}{outs}\n}} }}")
        # Runtime conditions (else the plain thread loop below): a step of
        # at least 1 and at most a quarter of the type's range, and no
        # counter of the block near the top of its type, so that thread x's
        # counter is c0 + x at every step and those still in the loop are a
        # prefix of the row (an unsigned step of 0xffffffff counts down).
        C = f"__ql_C{rid}"
        ok = (f"const {C} __ql_m{rid} = (({C})-1 < ({C})0) ? ({C})(~0ull >> (65 - 8 * "
              f"sizeof({C}))) : ({C})~({C})0; "
              f"const {C} __ql_s{rid} = ({C})({plan['step']}); "
              f"const bool __ql_ok{rid} = __ql_s{rid} > ({C})0 && __ql_s{rid} <= __ql_m{rid} / 4 "
              f"&& ({C})({plan['offset']}) <= __ql_m{rid} - ({C})__ql_bx && ({C})({bound}) <= "
              f"__ql_m{rid} - __ql_s{rid} - ({C})__ql_bx;")
        plain = self.thread_loop(rid, hdr + self.piece(st, {}, rid), self.region_uses(rid, set()),
                                 set(), written=written)
        return (f"\n{{ using __ql_C{rid} = {plan['type']};\n{ok}\nif (__ql_ok{rid}) {{"
                "\nfor (unsigned __ql_z = 0; __ql_z < __ql_bz; ++__ql_z) { "
                "for (unsigned __ql_y = 0; __ql_y < __ql_by; ++__ql_y) { "
                "::ql_export::row_of_threads(__ql_tid, __ql_y, __ql_z); "
                "const size_t __ql_t0 = ((size_t)__ql_z * __ql_by + __ql_y) * __ql_bx; "
                "const uint3 threadIdx = {0u, __ql_y, __ql_z}; (void)threadIdx;"
                f"{hdr}for (__ql_C{rid} __ql_c{rid} = (__ql_C{rid})({plan['offset']}); "
                f"__ql_c{rid} {op} ({bound}); __ql_c{rid} += ({plan['step']})) {{"
                f"\nif ((__ql_C{rid})(__ql_c{rid} + (__ql_C{rid})(__ql_bx - 1)) {op} ({bound})) "
                f"{{ {lanes(False)} }} else {{ {lanes(True)} }}\n}} }} }}\n}} else {{{plain}\n}} }}")

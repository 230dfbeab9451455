"""Region fission, part 3: the generated per-block function (thread loops
with #line directives back to the user's lines, replicated locals in the
block's scratch, the boundaries' operand loops). A mixin of
fission._Kernel."""
from __future__ import annotations

import re

from . import fission_warp
from .clang_front import _children, _qualified, _strip, _walk
from .fission_classify import Refuse


# Before every loop over a block's threads: its iterations are different
# CUDA threads between two barriers, which CUDA does not order (a thread
# that reads what another writes there races), and each thread's own locals
# and scratch slots are its own: no iteration depends on another, which the
# compiler cannot prove through the block's scratch (one allocation) and
# the kernel's pointers. Told so, it vectorises loops that gather (a
# shuffle's lanes) next to the thread's own stores, as PoCL marks its
# work-item loops parallel. Reductions over the threads (the counts of
# __syncthreads_count, exited threads) are scalars: still reductions.
# GCC only: clang's equivalent (vectorize(assume_safety)) also vectorises a
# loop of loads through per-thread pointers, where a fault then names
# another thread of the vector (tests/cpu/test_fission.py's faulting).
# Not where the loop's body has an object of its own in memory (an array or
# struct declared in it, a local whose address is taken, whatever a call
# other than the shim's math may declare once inlined): GCC keeps one such
# object for all iterations, and told they are independent it vectorises
# its stores and loads across threads wrongly (parallel_ok).
PARALLEL = "\n#if !defined(__clang__)\n#pragma GCC ivdep\n#endif\n"


class Codegen:
    # --------------------------------------------------------------- code
    def line(self, offset) -> str:
        return f'\n#line {self.src.user_line(offset)} "{self.filename}"\n' + \
            " " * self.src.column(offset)

    def piece(self, st, edits, rid) -> str:
        """The statement's text with its edits: returns, declarations of
        replicated locals, hoisted declarations removed."""
        CK = self.CK
        a, b = st.extent.start.offset, self.stmt_end(st)
        ed = dict(edits)
        for x, _ in _walk(st):
            if x.kind == CK.RETURN_STMT:
                ed[(x.extent.start.offset, self.stmt_end(x))] = \
                    f"{{ __ql_exited[__ql_t] = 1; ++__ql_gone; goto __ql_next{rid}; }}"
            elif x.kind == CK.DECL_STMT and x.hash in self.hoisted_ids:
                text = self.src.text(x.extent.start.offset, x.extent.end.offset)
                ed[(x.extent.start.offset, x.extent.end.offset)] = ";" + "\n" * text.count("\n")
        if st.kind == CK.DECL_STMT:
            vds = [v for v in st.get_children() if v.kind == CK.VAR_DECL]
            rep = [v for v in vds if v.hash in self.replicated]
            if rep:
                return " ".join(self.replicated_decl(st, v, ed) for v in vds)
        return self.apply(a, b, ed)

    def replicated_decl(self, st, v, ed) -> str:
        CK = self.CK
        if True:
            if True:
                inits = [c for c in v.get_children() if c.kind not in (
                    CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
                toks = [t for t in st.get_tokens()]
                names = [t for t in toks if t.spelling == v.spelling and
                         t.extent.start.offset == v.location.offset]
                if not names:
                    raise Refuse(f"local '{v.spelling}' declared through a macro")
                after = self.src.text(names[0].extent.end.offset, st.extent.end.offset).strip()
                i = self.index[v.hash]
                if self.is_array(v):
                    return self.replicated_array_decl(v, i, inits, after, ed)
                if not inits:
                    if not after.startswith((";", ",")):
                        raise Refuse(f"local '{v.spelling}' initialised in a way the pass "
                                     f"cannot read")
                    return f"__ql_T{i} {v.spelling} = __ql_r{i}[__ql_t];"
                if not after.startswith("="):
                    raise Refuse(f"local '{v.spelling}' initialised in a way the pass "
                                 f"cannot read (not `= value`)")
                init = inits[0]
                if _strip(init).kind == CK.INIT_LIST_EXPR:
                    raise Refuse(f"local '{v.spelling}' initialised by a brace list")
                ia, ib = init.extent.start.offset, init.extent.end.offset
                inner = {k: val for k, val in ed.items() if ia <= k[0] and k[1] <= ib}
                return f"__ql_T{i} {v.spelling} = ({self.apply(ia, ib, inner)});"

    def is_array(self, v) -> bool:
        return v.type.kind == self.ci.TypeKind.CONSTANTARRAY

    def replicated_array_decl(self, v, i, inits, after, ed) -> str:
        """A replicated array is its thread's row of the scratch, by
        reference (an array cannot be copied in and out as scalars are);
        an initialiser fills the row once, where the declaration was."""
        ref = f"__ql_T{i} &{v.spelling} = __ql_r{i}[__ql_t];"
        # the children are the dimensions' expressions, then the initialiser
        inits = [c for c in inits if _strip(c).kind == self.CK.INIT_LIST_EXPR]
        after = re.sub(r"^(\s*\[[^\]]*\])+", "", after).strip()   # the dimensions
        if not inits:
            if not after.startswith((";", ",")):
                raise Refuse(f"array '{v.spelling}' initialised in a way the pass cannot read")
            return ref
        if not after.startswith("="):
            raise Refuse(f"array '{v.spelling}' initialised in a way the pass cannot read "
                         f"(not `= {{...}}`)")
        ia, ib = inits[0].extent.start.offset, inits[0].extent.end.offset
        inner = {k: val for k, val in ed.items() if ia <= k[0] and k[1] <= ib}
        return (f"{{ const __ql_T{i} __ql_init{i} = {self.apply(ia, ib, inner)}; "
                f"__builtin_memcpy(__ql_r{i}[__ql_t], __ql_init{i}, sizeof(__ql_T{i})); }} {ref}")

    def apply(self, a, b, edits) -> str:
        out, pos = [], a
        for (s, e), val in sorted(edits.items()):
            if s < pos or e > b:
                continue
            out.append(self.src.text(pos, s))
            out.append(val)
            pos = e
        out.append(self.src.text(pos, b))
        return "".join(out)

    def copies(self, names_used, declared, written):
        """(loads, stores) of a thread loop's replicated locals: those it uses
        loaded from the thread's scratch slot (or rematerialised) at the top
        of its body; at the end, stored back those it declares or may write
        (`written`: hashes, None for all; arrays are the scratch itself)."""
        names_used = self.with_inputs(names_used) - set(declared)
        order = sorted(names_used, key=lambda h: self.index[h])
        refs = "".join(f"__ql_T{self.index[h]} "
                       f"{'&' if self.is_array(self.replicated[h]) else ''}"
                       f"{self.replicated[h].spelling} = "
                       + (f"({self.remat[h]}); " if h in self.remat else
                          f"__ql_r{self.index[h]}[__ql_t]; ")
                       for h in order)
        stored = set(names_used) if written is None else set(names_used) & set(written)
        outs = "".join(f" __ql_r{self.index[h]}[__ql_t] = {self.replicated[h].spelling};"
                       for h in sorted(stored | set(declared), key=lambda h: self.index[h])
                       if not self.is_array(self.replicated[h]) and h not in self.remat)
        return refs, outs

    def parallel_ok(self, cursors) -> bool:
        """Whether a thread loop over `cursors` (its statements) may be
        marked PARALLEL: no local array or struct, no address of a local,
        and no call but the shim's math and the warp functions (which the
        loop replaces by reads of the block's scratch)."""
        CK = self.CK
        kinds = {"CONSTANTARRAY", "INCOMPLETEARRAY", "VARIABLEARRAY", "DEPENDENTSIZEDARRAY",
                 "RECORD", "ELABORATED", "UNEXPOSED"}
        for c in cursors:
            if c is None:
                continue
            for x, _ in _walk(c):
                if x.kind == CK.VAR_DECL and x.type.get_canonical().kind.name in kinds:
                    return False
                if x.kind == CK.UNARY_OPERATOR and self.unop(x) in ("&", None):
                    return False
                if x.kind == CK.CALL_EXPR and not self.is_barrier_call(x) and \
                        not self.is_linear_thread(x) and not self.pure_call(x):
                    return False
        return True

    def thread_loop(self, rid, body_text: str, names_used: set, declared=(),
                    write=True, written=None, parallel=False) -> str:
        """A loop over the block's threads around `body_text`. Replicated
        locals are copied in at the start and out at the end (a register in
        the loop, not memory that the kernel's pointers might alias); out
        only those the region declares or may write (`written`: hashes, None
        for all), since the scratch still holds the others' values."""
        refs, outs = self.copies(names_used, declared, written if write else ())
        if write:
            body_text = body_text + "\n" + outs
        skip = "if (__ql_exited[__ql_t]) continue; " if self.returns else ""
        if self.guard_stack:   # inside warp-uniform branches: their threads only
            skip += f"if (!({' && '.join(self.guard_stack)})) continue; "
        tail = f" __ql_next{rid}:;" if self.returns else ""
        # The thread's coordinates are stored for what the region calls (and
        # for assert and fault reports) and read from a local shadow.
        # The thread's slot is the row's first plus the row's induction
        # variable (affine, so the scratch accesses are consecutive to the
        # vectoriser; an unsigned counter carried across rows is not). The
        # induction variable is threadIdx.x itself, so a condition on it
        # (`if (tid < k)`) splits the loop.
        return ("\nfor (unsigned __ql_z = 0; __ql_z < __ql_bz; ++__ql_z) { "
                "__ql_tid.z = __ql_z; for (unsigned __ql_y = 0; __ql_y < __ql_by; ++__ql_y) { "
                "__ql_tid.y = __ql_y; const size_t __ql_t0 = ((size_t)__ql_z * __ql_by + "
                f"__ql_y) * __ql_bx; {PARALLEL if parallel else ''}for (unsigned __ql_x = 0; "
                "__ql_x < __ql_bx; "
                "++__ql_x) { const size_t __ql_t = __ql_t0 + __ql_x; "
                f"__ql_tid.x = __ql_x; {skip}{{ "
                "const uint3 threadIdx = {__ql_x, __ql_y, __ql_z}; (void)threadIdx; "
                f"{refs}{body_text}\n}}{tail} }} }} }}")

    def region_uses(self, rid, declared):
        return {h for h in self.replicated if rid in self.used_in.get(h, set())
                and h not in declared}

    def emit(self, items) -> str:
        out = []
        for it in items:
            k = it[0]
            if k == "region":
                rid, pieces = it[1], it[2]
                declared = {v.hash for st, _ in pieces if st.kind == self.CK.DECL_STMT
                            for v in st.get_children() if v.hash in self.replicated}
                text = "".join(self.line(st.extent.start.offset) + self.piece(st, ed, rid)
                               for st, ed in pieces)
                # what the region may assign (written_vars: assignments,
                # ++/--, & and passing by reference, conservatively)
                written = set()
                for st, _ in pieces:
                    written |= set(self.written_vars(st))
                out.append(self.thread_loop(rid, text, self.region_uses(rid, declared),
                                            declared, written=written,
                                            parallel=self.parallel_ok(st for st, _ in pieces)))
                if self.returns:
                    out.append("\nif (__ql_gone == __ql_n) return;")
            elif k == "strided":   # fission_strided.py
                out.append(self.emit_strided(it[1], it[2], it[3]))
                if self.returns:
                    out.append("\nif (__ql_gone == __ql_n) return;")
            elif k == "barrier":
                _, kind, pred, bid, prid = it
                if pred is None:
                    continue
                if kind == "warp":
                    w = self.warp_ops[bid]

                    def text(c):
                        return "" if c is None else self.line(c.extent.start.offset) + \
                            self.apply(c.extent.start.offset, c.extent.end.offset, {})
                    out.append(self.thread_loop(prid, fission_warp.store(w, bid, text(w.value),
                                                                         text(w.arg)),
                                                self.region_uses(prid, set()), write=False,
                                                parallel=self.parallel_ok((w.value, w.arg))))
                    continue
                init, op = {"count": ("0", "+="), "and": ("1", "&="), "or": ("0", "|=")}[kind]
                ptxt = self.line(pred.extent.start.offset) + self.apply(
                    pred.extent.start.offset, pred.extent.end.offset, {})
                out.append(f"\nint __ql_b{bid} = {init};")
                out.append(self.thread_loop(prid, f"__ql_b{bid} {op} ((int)({ptxt}) != 0);",
                                            self.region_uses(prid, set()), write=False,
                                            parallel=self.parallel_ok((pred,))))
            elif k in ("for", "while"):
                header, off = it[1]
                out.append(self.line(off) + header + " {" + self.emit(it[2]) + "\n}")
            elif k == "if":
                cond, off = it[1]
                out.append("\nif (" + self.line(off) + cond + ") {" + self.emit(it[2]) +
                           "\n} else {" + self.emit(it[3]) + "\n}")
            elif k == "wif":   # a warp-uniform branch (fission_guards.py)
                (a, b), then, other, gid, grid = it[1], it[2], it[3], it[4], it[5]
                cond = self.line(a) + self.apply(a, b, {})
                out.append(self.thread_loop(grid, f"__ql_g{gid}[__ql_t] = (({cond}) != 0);",
                                            self.region_uses(grid, set()), write=False))
                self.guard_stack.append(f"__ql_g{gid}[__ql_t]")
                out.append(self.emit(then))
                self.guard_stack[-1] = f"!__ql_g{gid}[__ql_t]"
                out.append(self.emit(other))
                self.guard_stack.pop()
            elif k == "block":
                out.append("\n{" + self.emit(it[1]) + "\n}")
        return "".join(out)

    def spell_type(self, t) -> str:
        """Type `t` as the function's top can spell it: a type named through
        the kernel's own local typedef (`typedef double real;` in its body)
        is spelled canonically, or the name would find an outer `real`."""
        if not hasattr(self, "local_types"):
            self.local_types = {c.spelling for c, _ in _walk(self.body)
                                if c.kind in (self.CK.TYPEDEF_DECL, self.CK.TYPE_ALIAS_DECL)}
        s = t.spelling
        if not self.local_types & set(re.findall(r"[A-Za-z_]\w*", s)):
            return s
        c = t.get_canonical().spelling
        if any(w in c for w in ("type-parameter", "dependent", "(anonymous", "lambda")):
            raise Refuse(f"a local of the kernel's own type '{s}' the pass cannot spell "
                         f"outside its body")
        return c

    def local_typedefs(self) -> list:
        """The kernel's top-level typedefs, aliases and enums that a hoisted
        declaration names (`using R = cub::BlockReduce<int, 64>; __shared__
        R::TempStorage t;`) or that a later statement may name (in another
        region, it would not see them): declared again at the function's
        top, before it (they stay in place too; an inner scope may declare
        them again). One that reads a local of the kernel cannot move: a
        hoisted declaration naming it is refused, any other is left where
        it is."""
        CK = self.CK
        names = set()
        for st in self.hoisted:
            names |= set(re.findall(r"[A-Za-z_]\w*", self.src.text(st.extent.start.offset,
                                                                    st.extent.end.offset)))
        out = []
        end = self.body.extent.end.offset
        for st in self.body.get_children():
            kids = _children(st) if st.kind == CK.DECL_STMT else []
            if not kids or not all(k.kind in (CK.TYPEDEF_DECL, CK.TYPE_ALIAS_DECL,
                                              CK.ENUM_DECL) for k in kids):
                continue
            declared = {k.spelling for k in kids} | {
                e.spelling for k in kids if k.kind == CK.ENUM_DECL for e in k.get_children()
                if e.kind == CK.ENUM_CONSTANT_DECL}
            declared.discard("")
            later = set(re.findall(r"[A-Za-z_]\w*", self.src.text(st.extent.end.offset, end)))
            hoisted = bool(declared & names)
            if not hoisted and not declared & later:
                continue
            reads = [x for x, _ in _walk(st) if x.kind == CK.DECL_REF_EXPR and
                     x.referenced is not None and x.referenced.kind == CK.VAR_DECL and
                     x.referenced.hash in self.locals]
            if reads and hoisted:
                raise Refuse(f"typedef '{kids[0].spelling}' reads a local of the kernel "
                             f"and names a __shared__ variable's type")
            if not reads:
                out.append(st)
        return out

    def generate(self, fname: str) -> str:
        self.remat = self.rematerialisable()   # fission_remat.py (may add to replicated)
        self.index = {h: i for i, h in enumerate(self.replicated)}
        fn = self.fn
        tmpl = ""
        if fn.kind == self.CK.FUNCTION_TEMPLATE:
            toks = list(fn.get_tokens())
            if not toks or toks[0].spelling != "template":
                raise Refuse("a template header the pass cannot read")
            depth, end = 0, None
            for t in toks[1:]:
                if t.spelling == "<":
                    depth += 1
                elif t.spelling == ">":
                    depth -= 1
                    if depth == 0:
                        end = t.extent.end.offset
                        break
                elif t.spelling == ">>":
                    depth -= 2
                    if depth <= 0:
                        end = t.extent.end.offset
                        break
            if end is None or depth != 0:
                raise Refuse("a template header the pass cannot read")
            tmpl = self.src.text(toks[0].extent.start.offset, end) + "\n"
        params = ", ".join(self.src.text(p.extent.start.offset, p.extent.end.offset)
                           for p in self.params)
        lines = [f"{tmpl}static void {fname}({params}) {{",
                 "const unsigned __ql_bx = blockDim.x, __ql_by = blockDim.y, "
                 "__ql_bz = blockDim.z;",
                 "const unsigned __ql_n = __ql_bx * __ql_by * __ql_bz; (void)__ql_n;",
                 # launch-uniform coordinates read once, not through TLS per thread
                 "const uint3 blockIdx = ::blockIdx; const dim3 blockDim = ::blockDim, "
                 "gridDim = ::gridDim; (void)blockIdx; (void)blockDim; (void)gridDim;",
                 # the thread-local coordinates' address once (in a module
                 # loaded with dlopen each access is a call otherwise)
                 "uint3 &__ql_tid = ::threadIdx;"]
        sizes = []
        for h, i in self.index.items():
            v = self.replicated[h]
            lines.append(f"using __ql_T{i} = typename ::ql_export::unconst<"
                         f"{self.spell_type(v.type)}>::type;")
            lines.append(f"static_assert(__is_trivially_copyable(__ql_T{i}), \"fission\");")
            sizes.append(f"::ql_export::scratch_bytes<__ql_T{i}>(__ql_n)")
        warp_scratch = [ts for bid, w in sorted(self.warp_ops.items())
                         for ts in fission_warp.scratch(w, bid)]
        for ty, _ in warp_scratch:
            sizes.append(f"::ql_export::scratch_bytes<{ty}>(__ql_n)")
        if self.returns:
            sizes.append("::ql_export::scratch_bytes<unsigned char>(__ql_n)")
        sizes += ["::ql_export::scratch_bytes<unsigned char>(__ql_n)"] * self.guards
        if sizes:
            lines.append(f"char *__ql_p = ::ql_export::fission_scratch({' + '.join(sizes)});")
            for h, i in self.index.items():
                lines.append(f"__ql_T{i} *__restrict__ __ql_r{i} = "
                             f"::ql_export::scratch_take<__ql_T{i}>(__ql_p, __ql_n);")
            for ty, name in warp_scratch:
                lines.append(f"{ty} *__restrict__ {name} = "
                             f"::ql_export::scratch_take<{ty}>(__ql_p, __ql_n);")
        for gid in range(1, self.guards + 1):
            lines.append(f"unsigned char *__restrict__ __ql_g{gid} = "
                         "::ql_export::scratch_take<unsigned char>(__ql_p, __ql_n);")
        if self.returns:
            lines.append("unsigned char *__restrict__ __ql_exited = "
                         "::ql_export::scratch_take<unsigned char>(__ql_p, __ql_n);")
            lines.append("memset(__ql_exited, 0, __ql_n); unsigned __ql_gone = 0;")
        text = "\n".join(lines)
        if fn.kind != self.CK.FUNCTION_TEMPLATE:
            # assert() names the kernel as the compiler spells the original's
            # signature in __PRETTY_FUNCTION__ (the fibers' message): g++
            # "const int*", clang "const int *" (libclang's own spelling)
            qual = getattr(self, "qual", None) or _qualified(fn, self.CK) or fn.spelling

            def pretty(types):
                return f"void {qual}({', '.join(types)})".replace("\\", "\\\\").replace('"', '\\"')
            spelled = [p.type.spelling for p in self.params]
            gnu = pretty(re.sub(r" ([*&])", r"\1", t) for t in spelled)
            text = (f'#pragma push_macro("__ASSERT_FUNCTION")\n#undef __ASSERT_FUNCTION\n'
                    f'#if defined(__clang__)\n#define __ASSERT_FUNCTION "{pretty(spelled)}"\n'
                    f'#else\n#define __ASSERT_FUNCTION "{gnu}"\n#endif\n{text}')
            self.pop = '\n#pragma pop_macro("__ASSERT_FUNCTION")\n'
        for st in self.local_typedefs() + self.hoisted:
            text += self.line(st.extent.start.offset) + \
                self.src.text(st.extent.start.offset, st.extent.end.offset)
        text += self.emit(self.items)
        text += "\n}\n" + getattr(self, "pop", "")
        return text



"""Region fission, part 2: the kernel's structure (regions between
barriers and warp functions, uniform loops and branches around them,
early returns) and which locals live across a boundary. A mixin of
fission._Kernel."""
from __future__ import annotations

import re

from . import fission_warp
from .clang_front import _children, _strip, _walk, paren_group
from .fission_classify import _REFUSED, _UNIFORM_BUILTINS, _YIELDS, BARRIERS, Refuse


# A name and an opening parenthesis: where a function-like macro is used
_MACRO_CALL = re.compile(rb"[A-Za-z_][A-Za-z_0-9]*[ \t]*\(")


class Structure:
    # ---------------------------------------------------- structure
    def analyse(self):
        CK = self.CK
        copied = (CK.COMPOUND_STMT, CK.IF_STMT, CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT,
                  CK.SWITCH_STMT, CK.VAR_DECL)   # parents of statements, conditions, inits
        for x, parent in _walk(self.body):
            k = x.kind
            if k in (CK.GOTO_STMT, CK.INDIRECT_GOTO_STMT, CK.LABEL_STMT):
                raise Refuse("goto or a label in the kernel")
            if k == CK.LAMBDA_EXPR:
                raise Refuse("a lambda in the kernel")
            if x.extent.start.offset == x.extent.end.offset and parent is not None and \
                    parent.kind in copied and (k.is_expression() or k.is_statement()) and \
                    _MACRO_CALL.match(self.src.data, x.extent.start.offset):
                raise Refuse(f"a statement spelled by a function-like macro's arguments "
                             f"alone (line {self.src.user_line(x.extent.start.offset)}: "
                             f"libclang gives it no source range to copy)")
            if k in (CK.ASM_STMT, CK.MS_ASM_STMT) or k.name == "GCC_ASM_STMT":
                raise Refuse("inline assembly in the kernel")
            if k == CK.CXX_TRY_STMT:
                raise Refuse("try in the kernel")
            if k == CK.CALL_EXPR and not self.is_barrier_call(x):
                self.check_callee(x)
            if k == CK.OVERLOADED_DECL_REF and (x.spelling in fission_warp.WARP_OPS or
                                                x.spelling in BARRIERS):
                # a template kernel's call on a dependent type: the pass would
                # not see it as a boundary
                raise Refuse(f"'{x.spelling}' on a value of a template parameter's type "
                             f"(line {self.src.user_line(x.extent.start.offset)})")
            if k in (CK.DECL_REF_EXPR, CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF,
                     CK.MEMBER_REF_EXPR, CK.OVERLOADED_DECL_REF) and \
                    x.spelling in _REFUSED and x.spelling not in _YIELDS and \
                    not (x.spelling == "cub" and k == CK.NAMESPACE_REF):
                # (CUB's types are harmless; its collectives are calls, which
                # check_callee refuses unless fission_cub.py lowered them)
                raise Refuse(f"warp or cooperative-groups operation '{x.spelling}' (fission "
                             f"handles block barriers only)")
            if k == CK.VAR_DECL:
                t = x.type.spelling
                if "thread_block_tile" in t or "grid_group" in t or "thread_group" in t \
                        or "coalesced_group" in t:
                    raise Refuse(f"cooperative group '{t}' (fission handles thread_block only)")
                if self.is_shared_decl(x):
                    self.shared.add(x.hash)
                elif x.storage_class == self.ci.StorageClass.STATIC:
                    raise Refuse(f"static local '{x.spelling}'")
        written = self.written_vars(self.body)
        for p in self.params:
            if p.hash in written:
                raise Refuse(f"the kernel modifies its parameter '{p.spelling}'")
            self.uniform.add(p.hash)
        # hoisting: __shared__ declarations anywhere, uniform consts and
        # thread_block objects at the top level
        for x, parent in _walk(self.body):
            if x.kind == CK.DECL_STMT:
                vds = [v for v in x.get_children() if v.kind == CK.VAR_DECL]
                if vds and all(v.hash in self.shared for v in vds):
                    self.hoist(x)
        for st in self.body.get_children():
            if st.kind != CK.DECL_STMT or st.hash in self.hoisted_ids:
                continue
            vds = [v for v in st.get_children() if v.kind == CK.VAR_DECL]
            if len(vds) != 1:
                continue
            v = vds[0]
            t = v.type.spelling
            if ("thread_block" in t and "tile" not in t):
                self.hoist(st)
                self.uniform.add(v.hash)
                continue
            if not (v.type.is_const_qualified() or "constexpr" in
                    [tk.spelling for tk in st.get_tokens()][:3]):
                continue
            inits = [c for c in v.get_children() if c.kind not in (CK.TYPE_REF,
                                                                    CK.NAMESPACE_REF,
                                                                    CK.TEMPLATE_REF)]
            if len(inits) != 1 or v.hash in written:
                continue
            try:
                self.uniform_expr(inits[0], allow_shared=False, why="initializer")
            except Refuse:
                continue
            self.hoist(st)
            self.uniform.add(v.hash)
        self.find_warp_locals(written)      # fission_guards.py
        self.items = self.sequence(list(self.body.get_children()), counters=frozenset(),
                                   prev_barrier=True)
        if self.barriers == 0:
            raise Refuse("no barrier found where expected")
        if self.warp_calls and self.returns:
            raise Refuse("an early return in a kernel with warp functions (its exited lanes "
                         "are the fibers' to report)")
        self.finish_locals()

    def hoist(self, st):
        self.hoisted.append(st)
        self.hoisted_ids.add(st.hash)

    def new_region(self):
        self.regions += 1
        return self.regions

    def sequence(self, stmts, counters, prev_barrier):
        """Items for a statement list: ('region', rid, [(cursor, extra_edits)]),
        ('strided', rid, cursor, plan) (fission_strided.py),
        ('barrier', kind, pred, bid), ('for'/'while', header, items),
        ('if', cond, then, else), ('block', items)."""
        CK = self.CK
        items = []
        cur = None

        def flush():
            nonlocal cur
            if cur is not None:
                items.append(cur)
                cur = None

        last_barrier = prev_barrier
        for st in stmts:
            if st.hash in self.hoisted_ids:
                continue
            if not self.contains_barrier(st):
                if st.kind == CK.NULL_STMT:
                    continue
                self.counters_now = counters
                # fission_strided.py
                plan = self.strided_loop(st) if self.allow_strided else None
                if plan is not None:   # a region of its own, threads innermost
                    flush()
                    rid = self.new_region()
                    items.append(("strided", rid, st, plan))
                    self.scan_region(st, rid, top=True)
                    self.strided += 1
                    last_barrier = False
                    continue
                if cur is None:
                    cur = ["region", self.new_region(), []]
                cur[2].append((st, {}))
                self.scan_region(st, cur[1], top=True)
                last_barrier = False
                continue
            flush()
            self.counters_now = counters   # for warp_stmt's uniform lane arguments
            b = self.barrier_stmt(st)
            if b is not None:
                kind, call, pred = b
                bid = self.barriers = self.barriers + 1
                prid = None
                if pred is not None:
                    prid = self.new_region()
                    self.scan_region(pred, prid, top=False)
                items.append(("barrier", kind, pred, bid, prid))
                if kind == "warp":
                    self.warp_ops[bid] = self.pending_warp
                if kind != "plain" and not (call.hash == _strip(st).hash):
                    # the statement using the result opens the next region
                    res = fission_warp.result(self.warp_ops[bid], bid) if kind == "warp" \
                        else f"__ql_b{bid}"
                    cur = ["region", self.new_region(), []]
                    cur[2].append((st, {self.ext(call): res}))
                    self.scan_region(st, cur[1], top=True, skip=call)
                    last_barrier = False
                else:
                    last_barrier = True
                continue
            items.append(self.control(st, counters, last_barrier))
            last_barrier = self.ends_with_barrier(items[-1])
        flush()
        return items

    def ends_with_barrier(self, item):
        if item[0] == "barrier":
            return True
        if item[0] in ("for", "while"):
            return False
        if item[0] == "block":
            return bool(item[1]) and self.ends_with_barrier(item[1][-1])
        if item[0] == "if":
            return bool(item[2]) and bool(item[3]) and self.ends_with_barrier(item[2][-1]) \
                and self.ends_with_barrier(item[3][-1])
        return False

    def barrier_stmt(self, st):
        """(kind, call, pred-or-None) when `st` is a barrier statement."""
        CK = self.CK
        s = _strip(st)
        if st.kind == CK.DECL_STMT or st.kind.is_expression():
            warps = [d for d, _ in _walk(st) if self.is_barrier_call(d) == "warp"]
            if warps:
                return self.warp_stmt(st, s, warps[0])
        call = None
        if s.kind == CK.CALL_EXPR and self.is_barrier_call(s):
            call = s
        elif st.kind == CK.DECL_STMT:
            vds = [v for v in st.get_children() if v.kind == CK.VAR_DECL]
            if len(vds) == 1:
                inits = [c for c in vds[0].get_children() if c.kind not in (
                    CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF)]
                if len(inits) == 1 and self.is_barrier_call(_strip(inits[0])):
                    call = _strip(inits[0])
        elif s.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR):
            kids = _children(s)
            if len(kids) == 2 and _strip(kids[0]).kind == CK.DECL_REF_EXPR and \
                    self.is_barrier_call(_strip(kids[1])) and \
                    (s.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR or self.binop(s) == "="):
                call = _strip(kids[1])
        if call is None:
            return None
        if self.first_token(call) not in (call.spelling, "cg", "cooperative_groups") and \
                call.spelling != "sync":
            raise Refuse("a barrier spelled through a macro")
        kind = self.is_barrier_call(call)
        if call.spelling == "sync":
            toks = [t.spelling for t in call.get_tokens()]
            if "sync" not in toks:
                raise Refuse("a barrier spelled through a macro")
        pred = None
        if kind != "plain":
            args = list(call.get_arguments())
            if len(args) != 1:
                raise Refuse("a barrier with an unexpected argument list")
            pred = args[0]
            if self.contains_barrier(pred):
                raise Refuse("a barrier inside a barrier's argument")
            if self.written_vars(pred):
                raise Refuse("a barrier's predicate with a side effect")
        elif call.hash != s.hash:
            raise Refuse("the result of a plain barrier used")
        # nothing else in the statement may be a barrier
        n = sum(1 for d, _ in _walk(st) if self.is_barrier_call(d))
        if n != 1:
            raise Refuse("two barriers in one statement")
        return kind, call, pred

    def warp_stmt(self, st, s, call):
        """(kind, call, operands) for a statement (an expression or one
        declaration) holding one warp function anywhere in it: "plain" for
        __syncwarp, else "warp" with the call as the operands' cursor. The
        operands (value, lane argument) are evaluated in the boundary's thread
        loop, the rest of the statement after it: so the operands may have no
        side effect, and the rest may write none of what they read but the
        statement's own target (`v += __shfl_down_sync(m, v, o)`)."""
        CK = self.CK

        def refuse(why):
            raise Refuse(why)
        if not hasattr(self, "macros"):
            self.macros = fission_warp.object_macros(self.src.text(0, len(self.src.data)))
        w = fission_warp.classify(call, refuse, self.macros)
        if w.ctype:
            w.ctype = self.spell_type(call.type)
        self.warp_calls += 1
        n = sum(1 for d, _ in _walk(st) if self.is_barrier_call(d))
        if n != 1:
            raise Refuse("two barriers or warp functions in one statement")
        if self.conditional_in(st, call):
            raise Refuse(f"'{w.name}' in a branch of ?: or right of && or || (every thread "
                         f"would run it; line {self.src.user_line(call.extent.start.offset)})")
        read = set()
        for a in (w.value, w.arg):
            if a is None:
                continue
            if not self.pure(a):
                raise Refuse(f"an operand of '{w.name}' with a side effect or a call")
            read |= {x.referenced.hash for x, _ in _walk(a)   # (the built-in coordinates
                     if x.kind == CK.DECL_REF_EXPR and x.referenced is not None  # are
                     and x.spelling not in _UNIFORM_BUILTINS | {"threadIdx"}}     # read-only)
        target = None
        if st.kind == CK.DECL_STMT:
            vds = [v for v in st.get_children() if v.kind == CK.VAR_DECL]
            if len(vds) != 1:
                raise Refuse(f"'{w.name}' in a declaration of several variables")
            target = vds[0].hash
        elif s.kind in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR) and \
                (s.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR or self.binop(s) == "="):
            lhs = _strip(_children(s)[0])
            if lhs.kind == CK.DECL_REF_EXPR and lhs.referenced is not None:
                target = lhs.referenced.hash
        if (set(self.written_vars(st)) - {target}) & read:
            raise Refuse(f"a statement with '{w.name}' that writes what its operands read")
        if w.op is None:
            if call.hash != s.hash:
                raise Refuse("the result of __syncwarp used")
            return "plain", call, None
        if call.hash == s.hash:
            raise Refuse(f"the result of '{w.name}' not used")
        if w.op not in fission_warp.VOTES and w.arg is not None:
            try:   # a block-uniform delta or lane (a loop's counter): read where used
                self.uniform_expr(w.arg, False, frozenset(getattr(self, "counters_now", ())),
                                  "shuffle lane")
                w.uniform_arg = self.src.text(w.arg.extent.start.offset, w.arg.extent.end.offset)
            except Refuse:
                pass
        self.pending_warp = w
        return "warp", call, call

    def conditional_in(self, st, call) -> bool:
        """Whether `call` is evaluated conditionally within statement `st`:
        in a branch of ?: or the right operand of && or ||."""
        CK = self.CK
        parents = {x.hash: p for x, p in _walk(st)}
        child, p = call, parents.get(call.hash)
        while p is not None and child.hash != st.hash:
            kids = _children(p)
            if p.kind == CK.CONDITIONAL_OPERATOR and kids and kids[0].hash != child.hash:
                return True
            if p.kind == CK.BINARY_OPERATOR and self.binop(p) in ("&&", "||") and kids and \
                    kids[0].hash != child.hash:
                return True
            child, p = p, parents.get(p.hash)
        return False

    def pure(self, e) -> bool:
        """Whether expression `e` only reads: no call (but the linear thread
        index's), assignment, increment or decrement (a field read such as
        threadIdx.x is a read)."""
        CK = self.CK
        for x, _ in _walk(e):
            if x.kind == CK.CALL_EXPR and self.is_linear_thread(x):
                continue
            if x.kind in (CK.CALL_EXPR, CK.COMPOUND_ASSIGNMENT_OPERATOR, CK.LAMBDA_EXPR,
                          CK.CXX_NEW_EXPR, CK.CXX_DELETE_EXPR, CK.CXX_THROW_EXPR):
                return False
            if x.kind == CK.BINARY_OPERATOR and self.binop(x) in (None, "="):
                return False
            if x.kind == CK.UNARY_OPERATOR and self.unop(x) in (None, "++", "--"):
                return False
        return True

    def header_parts(self, st):
        """(open paren offset, ';' offsets, close paren offset) of a for header."""
        parts = paren_group(st.get_tokens())
        if parts is None:
            raise Refuse("a for header the pass cannot read")
        return parts

    def control(self, st, counters, last_barrier):
        CK = self.CK
        kids = _children(st)
        if st.kind not in (CK.COMPOUND_STMT, CK.FOR_STMT, CK.WHILE_STMT, CK.IF_STMT,
                           CK.DO_STMT, CK.SWITCH_STMT, CK.CXX_FOR_RANGE_STMT) and \
                len(kids) == 1 and kids[0].kind in (CK.FOR_STMT, CK.WHILE_STMT):
            return self.control(kids[0], counters, last_barrier)   # #pragma unroll
        if st.kind == CK.COMPOUND_STMT:
            return ("block", self.sequence(list(st.get_children()), counters, last_barrier))
        if st.kind == CK.FOR_STMT:
            if self.first_token(st) != "for":
                raise Refuse("a loop with a barrier spelled through a macro")
            kids = _children(st)
            body = kids[-1]
            start, semis, close = self.header_parts(st)
            if len(semis) != 2:
                raise Refuse("a for header the pass cannot read")
            init = [c for c in kids[:-1] if c.extent.end.offset <= semis[0] + 1]
            cond = [c for c in kids[:-1] if semis[0] < c.extent.start.offset < semis[1]]
            inc = [c for c in kids[:-1] if semis[1] < c.extent.start.offset < close]
            new = set()
            for c in init:
                if c.kind != CK.DECL_STMT:
                    raise Refuse("a loop with a barrier whose initialisation is not a "
                                 "declaration")
                for v in c.get_children():
                    if v.kind == CK.VAR_DECL:
                        new.add(v.hash)
                        for e in v.get_children():
                            if e.kind not in (CK.TYPE_REF, CK.NAMESPACE_REF):
                                self.uniform_expr(e, False, frozenset(counters),
                                                  "loop initialisation")
            ctr = frozenset(counters | new)
            reads = False
            for c in cond:
                reads |= self.uniform_expr(c, True, ctr, "loop condition")
            for c in inc:
                self.uniform_expr(c, False, ctr, "loop increment")
            sub = self.sequence([body] if body.kind != CK.COMPOUND_STMT
                                else list(body.get_children()), ctr, False)
            if reads and not (last_barrier and sub and self.ends_with_barrier(sub[-1])):
                raise Refuse("a loop with a barrier whose condition reads shared memory "
                             "without a barrier before it")
            self.check_not_written(body, ctr - counters)
            header = self.src.text(st.extent.start.offset, close)
            return ("for", (header, st.extent.start.offset), sub)
        if st.kind == CK.WHILE_STMT:
            if self.first_token(st) != "while":
                raise Refuse("a loop with a barrier spelled through a macro")
            kids = _children(st)
            if len(kids) != 2 or kids[0].kind == CK.VAR_DECL:
                raise Refuse("a while loop the pass cannot read")
            reads = self.uniform_expr(kids[0], True, frozenset(counters), "loop condition")
            body = kids[1]
            sub = self.sequence([body] if body.kind != CK.COMPOUND_STMT
                                else list(body.get_children()), counters, False)
            if reads and not (last_barrier and sub and self.ends_with_barrier(sub[-1])):
                raise Refuse("a loop with a barrier whose condition reads shared memory "
                             "without a barrier before it")
            close = self.header_parts(st)[2]
            header = self.src.text(st.extent.start.offset, close)
            return ("while", (header, st.extent.start.offset), sub)
        if st.kind == CK.IF_STMT:
            if self.first_token(st) != "if":
                raise Refuse("a branch with a barrier spelled through a macro")
            kids = _children(st)
            if len(kids) not in (2, 3) or kids[0].kind in (CK.DECL_STMT, CK.VAR_DECL):
                raise Refuse("an if the pass cannot read")
            toks = [t.spelling for t in st.get_tokens()][:2]
            if toks[1:] == ["constexpr"]:
                raise Refuse("if constexpr around a barrier")
            try:
                self.uniform_expr(kids[0], last_barrier, frozenset(counters), "condition")
            except Refuse as why:   # a warp-uniform branch? (fission_guards.py)
                return self.warp_if(st, kids, counters, last_barrier, why)
            parts = []
            for b in kids[1:]:
                parts.append(self.sequence([b] if b.kind != CK.COMPOUND_STMT
                                           else list(b.get_children()), counters, last_barrier))
            cond = self.src.text(kids[0].extent.start.offset, kids[0].extent.end.offset)
            return ("if", (cond, kids[0].extent.start.offset), parts[0],
                    parts[1] if len(parts) > 1 else [])
        if st.kind in (CK.DO_STMT, CK.SWITCH_STMT, CK.CXX_FOR_RANGE_STMT):
            raise Refuse(f"a barrier inside a {st.kind.name.lower().replace('_stmt', '')}")
        raise Refuse(f"a barrier under a thread-dependent condition or inside an expression "
                     f"(line {self.src.user_line(st.extent.start.offset)})")

    def check_not_written(self, body, ctrs):
        w = self.written_vars(body)
        for h in ctrs:
            if h in w:
                raise Refuse(f"the loop counter '{w[h]}' of a loop with a barrier is "
                             f"modified in its body")

    def scan_region(self, st, rid, top, skip=None):
        """Records the locals `st` declares and uses, and its returns."""
        CK = self.CK
        if top and st.kind == CK.DECL_STMT:
            self.top_decls.append(st)
            for v in st.get_children():
                if v.kind == CK.VAR_DECL and v.hash not in self.shared:
                    self.locals[v.hash] = v
                    self.decl_region[v.hash] = rid

        def rec(x, depth_loop):
            k = x.kind
            if k == CK.VAR_DECL and x.hash not in self.locals and x.hash not in self.shared:
                self.locals.setdefault(x.hash, x)
                self.decl_region.setdefault(x.hash, -rid)   # nested: region-local
            if k == CK.DECL_REF_EXPR:
                r = x.referenced
                if r is not None and r.kind == CK.VAR_DECL:
                    self.used_in.setdefault(r.hash, set()).add(rid)
            if k == CK.RETURN_STMT:
                if self.first_token(x) != "return":
                    raise Refuse("a return spelled through a macro")
                if _children(x):
                    raise Refuse("a return with a value")
                self.returns = True
            if k in (CK.BREAK_STMT, CK.CONTINUE_STMT) and depth_loop == 0:
                raise Refuse("break or continue out of a loop that holds a barrier")
            inner = depth_loop
            if k in (CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT, CK.CXX_FOR_RANGE_STMT):
                inner += 1
            if k == CK.SWITCH_STMT:
                inner += 1   # a break leaves the switch (a continue would not: rare, refused below)
                for y, _ in _walk(x):
                    if y.kind == CK.CONTINUE_STMT:
                        raise Refuse("continue inside a switch in a barrier kernel")
            for ch in x.get_children():
                rec(ch, inner)

        rec(st, 0)

    def finish_locals(self):
        CK = self.CK
        self.replicated = {}
        for h, v in self.locals.items():
            if h in self.uniform:
                continue
            regs = set(self.used_in.get(h, set()))
            d = self.decl_region.get(h)
            if d is not None and d > 0:
                regs.add(d)
            if len(regs) <= 1:
                continue
            if d is None or d < 0:
                raise Refuse(f"local '{v.spelling}' is used across a barrier from an inner "
                             f"scope")
            self.check_replicable(v)
            self.replicated[h] = v
        # a declaration of several locals with one replicated: all of them
        for st in self.top_decls:
            vds = [v for v in st.get_children() if v.kind == CK.VAR_DECL]
            if len(vds) > 1 and any(v.hash in self.replicated for v in vds):
                for v in vds:
                    self.check_replicable(v)
                    self.replicated[v.hash] = v
        # addresses: a local whose address is taken may outlive its region
        for x, parent in _walk(self.body):
            if x.kind == CK.UNARY_OPERATOR:
                kids = _children(x)
                if self.unop(x) in ("&", None) and kids:
                    tgt = _strip(kids[0])
                    if tgt.kind == CK.DECL_REF_EXPR and tgt.referenced is not None and \
                            tgt.referenced.hash in self.locals and \
                            (parent is None or parent.kind != CK.CALL_EXPR):
                        raise Refuse(f"the address of local '{tgt.spelling}' is taken")
        # a region naming two replicated variables of the same name (shadowing)
        names = {}
        for h, v in self.replicated.items():
            names.setdefault(v.spelling, []).append(h)
        for n, hs in names.items():
            if len(hs) > 1:
                regs = [self.used_in.get(h, set()) | {self.decl_region[h]} for h in hs]
                for i in range(len(regs)):
                    for j in range(i + 1, len(regs)):
                        if regs[i] & regs[j]:
                            raise Refuse(f"two locals named '{n}' live across barriers")


    def check_replicable(self, v):
        if True:
            t = v.type
            if t.kind in (self.ci.TypeKind.LVALUEREFERENCE, self.ci.TypeKind.RVALUEREFERENCE):
                raise Refuse(f"reference '{v.spelling}' live across a barrier")
            if t.kind == self.ci.TypeKind.CONSTANTARRAY:
                # replicated as an array per thread, reached by reference
                if t.element_type.is_const_qualified():
                    raise Refuse(f"const array '{v.spelling}' live across a barrier")
            elif t.kind in (self.ci.TypeKind.INCOMPLETEARRAY, self.ci.TypeKind.VARIABLEARRAY,
                            self.ci.TypeKind.DEPENDENTSIZEDARRAY):
                raise Refuse(f"array '{v.spelling}' of a size known only at run time "
                             f"live across a barrier")
            sp = t.spelling
            if "(anonymous" in sp or "(unnamed" in sp or "lambda" in sp or \
                    re.search(r"\bauto\b", sp):
                raise Refuse(f"local '{v.spelling}' of a type the pass cannot spell ({sp})")

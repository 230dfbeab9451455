"""Region fission, part 0: the user's device functions that reach a barrier
or a warp function (`warp_sum`, `block_reduce` helpers) inlined into the
kernel, as source, before the pass runs.

Each call is replaced where its statement stands by: the result variable,
the parameters as locals initialised from the arguments (in order), the
callee's body with every name it declares renamed (`__ql_i<n>_<name>`) and
its template parameters replaced by their arguments, its final `return e;`
turned into an assignment of the result, then the statement with the call
replaced by the result. A callee's `__shared__` variables are declared once,
at the top of the kernel (one per block, as CUDA's are). The rewritten kernel
(`__ql_inl_<name>`) is appended to the unit and parsed again; calls the
inlined bodies make are inlined the next round. `#line` directives keep every
line the user's: the callee's lines inside its inlined body, the caller's
elsewhere.

What the rewrite cannot keep exact is refused (the kernel stays on fibers,
with the reason): an early `return`, a call whose evaluation is conditional
(`?:`, `&&`, `||`) or ordered after a side effect, a call in a loop header,
default arguments, array or packed parameters, a callee in another namespace
or a class, a name the callee uses that the kernel declares too, a local the
callee reaches through a macro. Where a call may stand:
fission_inline_calls.py; template arguments: fission_inline_templates.py.
"""
from __future__ import annotations

import re

from .clang_front import (_children, _in_main, _namespaces, _Src, _walk, specialized_template,
                          statement_end)
from .fission_classify import Refuse
from .fission_inline_calls import CallSites
from .fission_inline_templates import _TPARAMS, TemplateArgs, _strip_cv
from .fission_cub import PREFIX as CUB_PREFIX
from .fission_cub import Cub
from .fission_tiles import PREFIX as TILE_PREFIX
from .fission_tiles import Tiles

PREFIX = "__ql_inl_"
MAX_ROUNDS = 6
_DECLS = ("VAR_DECL", "TYPEDEF_DECL", "TYPE_ALIAS_DECL")
MAX_CALLS = 64                            # inlined calls per kernel, all rounds


class Inliner(TemplateArgs, CallSites):
    """Inlines one kernel's calls to user functions reaching tier-2
    operations; `run` returns (kernel cursor, _Src, defs) of the last parse."""

    def __init__(self, ci, fn, src, main, defs, reaches, reparse):
        self.ci, self.CK = ci, ci.CursorKind
        self.fn, self.src, self.main, self.defs = fn, src, main, defs
        self.reaches = reaches            # callee cursor -> whether it reaches tier 2
        self.reparse = reparse            # unit text -> (tu, defs)
        self.name = fn.spelling
        self.base = src.data.decode("utf-8")
        self.counter = 0
        self.generated_calls = 0          # ... of which the tiles' collectives
        self.statics: dict = {}           # (usr, bindings) -> {name: hoisted name}
        self.hoisted: list = []           # hoisted __shared__ declarations (text)
        self.emitted = 0                  # ... of which the kernel text holds these
        self.ns = _namespaces(fn, self.CK)
        self.exact: dict = {}             # call hash -> a resolved template call's arguments
        self.kernel_names: set = set()
        self.tiles = Tiles(self)          # cooperative-groups tiles (fission_tiles.py)
        self.cub = Cub(self)              # cub::BlockReduce (fission_cub.py)
        self.pending = [self.tiles, self.cub]
        self.generated = ""               # tile and CUB collectives, as functions
        # the module's own macros: name -> replacement text (a continued
        # multi-line body is kept whole); those its helpers use are checked
        # for names the kernel declares (they would be captured inlined)
        self.macros = {}
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n]*\\\n)*[^\n]*)",
                             self.base, re.M):
            self.macros[m.group(1)] = self.macros.get(m.group(1), "") + " " + m.group(2)

    # ------------------------------------------------------------ tokens
    def toks(self, c, end=None):
        """The tokens of cursor `c`'s source range (to `end`), read from the
        unit's own token stream: a cursor whose extent starts in a macro
        (`__shared__ T x;`, `__device__ float f()`) has none of its own."""
        import bisect
        tu = c.translation_unit
        if getattr(self, "_toks_tu", None) is not tu:
            main = [t for t in tu.get_tokens(extent=tu.cursor.extent)
                    if t.location.file is not None and t.location.file.name == self.main]
            self._toks = main
            self._offs = [t.extent.start.offset for t in main]
            self._toks_tu = tu
        a = c.extent.start.offset
        b = c.extent.end.offset if end is None else end
        i = bisect.bisect_left(self._offs, a)
        j = bisect.bisect_left(self._offs, b)
        return self._toks[i:j]

    # ------------------------------------------------------------ driver
    def run(self):
        fn, src = self.fn, self.src
        for _ in range(MAX_ROUNDS):
            calls = self.candidates(fn)
            if calls:
                text = self.rewrite(fn, src, calls)
            else:       # every helper inlined: the tiles, then CUB, once each (their
                got = None                # generated helpers are inlined next rounds)
                while got is None and self.pending:
                    got = self.pending.pop(0).lower(fn)
                if got is None:
                    return fn, src, self.defs
                text = got[0]
                self.generated += got[1]
            unit = self.base + "\n" + "".join(f"namespace {n} {{ " for n in self.ns) + \
                self.generated + "\n" + text + "\n" + "}" * len(self.ns) + "\n"
            tu, self.defs = self.reparse(unit)
            errors = [d for d in tu.diagnostics if d.severity >= 3]
            if errors:
                raise Refuse(f"the kernel with its callees inlined did not parse "
                             f"({errors[0].spelling}, line {errors[0].location.line})")
            self.tu = tu                                       # cursors keep it alive
            src = _Src(unit.encode(), src.map[0][0], src.map[0][1])
            fn = self.find(tu.cursor)
            self.src, self.fn = src, fn
        if self.candidates(fn):
            raise Refuse(f"calls to functions reaching barriers nested more than "
                         f"{MAX_ROUNDS} deep")
        return fn, src, self.defs

    def find(self, c):
        for ch in c.get_children():
            if ch.kind == self.CK.NAMESPACE and _in_main(ch, self.main):
                got = self.find(ch)
                if got is not None:
                    return got
            elif ch.kind in (self.CK.FUNCTION_DECL, self.CK.FUNCTION_TEMPLATE) and \
                    ch.spelling == PREFIX + self.name and ch.is_definition():
                return ch
        if c.kind == self.CK.TRANSLATION_UNIT:
            raise Refuse("the inlined kernel was not found after parsing")
        return None

    # --------------------------------------------------------- the calls
    def callee(self, x):
        """The user function call `x` runs, when it reaches tier 2; else None."""
        if x.kind != self.CK.CALL_EXPR:
            return None
        r = x.referenced
        if r is not None:
            if not _in_main(r, self.main) or r.kind not in (self.CK.FUNCTION_DECL,
                                                            self.CK.FUNCTION_TEMPLATE):
                return None
            d = r.get_definition() or r
            tmpl = specialized_template(r) if r.kind == self.CK.FUNCTION_DECL else None
            if tmpl is not None:          # a resolved call of a template: its arguments
                self.exact[x.hash] = self.specialisation(r, tmpl)
                d = tmpl.get_definition() or tmpl
        else:
            kids = _children(x)     # a dependent call: the callee named by its first child
            name = None
            if kids and kids[0].kind in (self.CK.DECL_REF_EXPR, self.CK.UNEXPOSED_EXPR,
                                         self.CK.OVERLOADED_DECL_REF):
                for c in [kids[0]] + _children(kids[0]):
                    if c.kind == self.CK.OVERLOADED_DECL_REF:
                        name = c.spelling
                        break
            cands = self.defs.get(name or "", [])
            if len(cands) != 1:
                return None
            d = cands[0]
        if d.spelling.startswith(PREFIX) or not self.reaches(d):
            return None
        return d

    def candidates(self, fn):
        body = [c for c in fn.get_children() if c.kind == self.CK.COMPOUND_STMT][0]
        self.parents = {}
        found = []
        for c, p in _walk(body):
            self.parents[c.hash] = p
            if c.kind == self.CK.CALL_EXPR:
                d = self.callee(c)
                if d is not None:
                    found.append((c, d))
        # a call in another one's arguments waits for the next round
        spans = [(c.extent.start.offset, c.extent.end.offset) for c, _ in found]
        outer = []
        for c, d in found:
            a, b = c.extent.start.offset, c.extent.end.offset
            if not any(s <= a and b <= e and (s, e) != (a, b) for s, e in spans):
                outer.append((c, d))
        return outer

    # ------------------------------------------------------------- rewrite
    def stmt_end(self, st) -> int:
        return statement_end(st, self.CK, self.src.data)

    def chunk(self, a: int, b: int) -> str:
        """Source bytes [a, b) with a #line directive to their user line."""
        if a >= b:
            return ""
        return f"\n#line {self.src.user_line(a)}\n{self.src.text(a, b)}"

    def rewrite(self, fn, src, calls) -> str:
        by_stmt: dict = {}
        order = []
        for x, d in calls:
            st, brace = self.statement(x)
            if st.hash not in by_stmt:
                by_stmt[st.hash] = (st, brace, [])
                order.append(st.hash)
            by_stmt[st.hash][2].append((x, d))
        stmts = sorted((by_stmt[h] for h in order), key=lambda s: s[0].extent.start.offset)
        chosen, last_end = [], -1
        for st, brace, xs in stmts:     # a statement inside another waits a round
            a = st.extent.start.offset
            if a >= last_end:
                chosen.append((st, brace, xs))
                last_end = self.stmt_end(st)
        body = [c for c in fn.get_children() if c.kind == self.CK.COMPOUND_STMT][0]
        kernel_names = {c.spelling for c, _ in _walk(fn)
                        if c.kind.name in _DECLS + _TPARAMS + ("PARM_DECL",)}
        self.kernel_names = kernel_names
        pos = body.extent.start.offset + 1
        pieces = []
        for st, brace, xs in chosen:
            a, b = st.extent.start.offset, self.stmt_end(st)
            pieces.append(self.chunk(pos, a))
            # the statement after its calls' bodies: one #line, the calls'
            # newlines kept (its `;` must follow the expression directly)
            pro, cur, tail = [], a, [f"\n#line {self.src.user_line(a)}\n"]
            for x, d in sorted(xs, key=lambda t: t[0].extent.start.offset):
                text, result = self.expand(x, d, kernel_names)
                pro.append(text)
                xa, xb = x.extent.start.offset, x.extent.end.offset
                tail.append(self.src.text(cur, xa))
                tail.append(f" {result} " + "\n" * self.src.text(xa, xb).count("\n"))
                cur = xb
            tail.append(self.src.text(cur, b))
            pieces.append(("{" if brace else "") + "".join(pro) + "".join(tail) +
                          ("\n}" if brace else ""))
            pos = b
        pieces.append(self.chunk(pos, body.extent.end.offset))
        head = self.header(fn)
        new = self.hoisted[self.emitted:]
        self.emitted = len(self.hoisted)
        return head + "{" + "".join(new) + "".join(pieces) + "\n"

    def header(self, fn) -> str:
        """The kernel's text up to its body, the kernel's name renamed (a
        later round's copy keeps its name)."""
        body = [c for c in fn.get_children() if c.kind == self.CK.COMPOUND_STMT][0]
        a, b = fn.extent.start.offset, body.extent.start.offset
        o = fn.location.offset      # the name (the extent's tokens start in a macro)
        if self.src.text(o, o + len(fn.spelling)) != fn.spelling or not a <= o < b:
            raise Refuse("a kernel header the pass cannot read")
        if fn.spelling == self.name:
            out = [self.src.text(a, o), PREFIX + self.name, self.src.text(o + len(self.name), b)]
        else:
            out = [self.src.text(a, b)]
        return f"\n#line {self.src.user_line(a)}\n" + "".join(out)

    # -------------------------------------------------------- one call
    def expand(self, x, d, kernel_names):
        """(the statements running callee `d` for call `x`, the result's name)."""
        CK = self.CK
        fname = d.spelling
        bodies = [c for c in d.get_children() if c.kind == CK.COMPOUND_STMT]
        if not bodies:
            raise Refuse(f"called function '{fname}' has no body to inline")
        cbody = bodies[0]
        if d.semantic_parent is None or d.semantic_parent.kind not in (
                CK.NAMESPACE, CK.TRANSLATION_UNIT, CK.LINKAGE_SPEC) or \
                _namespaces(d, CK) != self.ns:
            raise Refuse(f"called function '{fname}' is in another namespace or a class "
                         f"than the kernel (its names would resolve differently inlined)")
        self.counter += 1
        self.generated_calls += fname.startswith((TILE_PREFIX, CUB_PREFIX))
        n = self.counter
        if n > MAX_CALLS:
            raise Refuse(f"more than {MAX_CALLS} calls to inline (recursion or a very "
                         f"large helper tree)")
        if self.recursive(d):
            raise Refuse(f"a recursive call through '{fname}'")
        pre = f"__ql_i{n}_"
        params = [c for c in d.get_children() if c.kind == CK.PARM_DECL]
        args = self.arguments(x)
        if len(args) != len(params):
            raise Refuse(f"a call to '{fname}' with default or variadic arguments")
        binds = self.bindings(x, d, params, args)
        self.check_binds(d, binds)
        # the names the callee declares, renamed; its uses of them checked
        decls = {}
        for c, _ in _walk(d):
            if c.kind == CK.PARM_DECL or c.kind.name in _DECLS:
                decls.setdefault(c.spelling, set()).add(c.hash)
            if c.kind in (CK.CALL_EXPR, CK.DECL_REF_EXPR) and c.spelling in (
                    "assert", "__assert_fail", "__PRETTY_FUNCTION__", "__func__"):
                raise Refuse(f"called function '{fname}' asserts or names itself (its "
                             f"message would name the kernel inlined)")
            if c.kind in (CK.LABEL_STMT, CK.LAMBDA_EXPR, CK.STRUCT_DECL, CK.CLASS_DECL,
                          CK.GOTO_STMT, CK.ENUM_DECL, CK.UNION_DECL, CK.USING_DIRECTIVE,
                          CK.USING_DECLARATION, CK.NAMESPACE_ALIAS, CK.CLASS_TEMPLATE):
                raise Refuse(f"called function '{fname}' declares a {c.kind.name.lower()} "
                             f"(not inlined)")
        shared = self.shared_decls(d, cbody, binds)
        rename = {k: pre + k for k in decls if k}
        for k, v in shared.items():
            rename[k] = v
        self.check_names(d, decls, rename, binds, kernel_names)
        # the result, the parameters, the body
        rtype = self.result_type(d, binds)
        lines = [f"\n#line {self.src.user_line(x.extent.start.offset)}\n"]
        result = ""
        if rtype is not None:
            result = pre + "r"
            lines.append(f"{rtype} {result};")
        for p, arg in zip(params, args):
            alias = self.alias(p, arg)
            if alias is not None:     # a reference to the kernel's variable: its name
                rename[p.spelling] = alias
                continue
            ptext = self.subst(p, binds, rename)
            lines.append(f"{ptext} = ({self.src.text(*arg)});")
        rets = [c for c, _ in _walk(cbody) if c.kind == CK.RETURN_STMT]
        stmts = _children(cbody)
        last = stmts[-1] if stmts else None
        if any(r.hash != (last.hash if last is not None else None) for r in rets):
            raise Refuse(f"called function '{fname}' returns early (not inlined)")
        for st in stmts:
            if st.kind == CK.DECL_STMT and any(self.is_shared(v) for v in _children(st)):
                continue
            if st.kind == CK.RETURN_STMT:
                kids = _children(st)
                if kids:                  # void: `return f(a);` still runs f(a), as a
                    e = kids[0]           # statement (a later round inlines f there)
                    text = self.subst(e, binds, rename)
                    lines.append(f"\n#line {self.src.user_line(e.extent.start.offset)}\n" +
                                 (f"{result} = ({text});" if rtype is not None else f"{text};"))
                continue
            lines.append(f"\n#line {self.src.user_line(st.extent.start.offset)}\n" +
                         self.subst(st, binds, rename, end=self.stmt_end(st)))
        return "\n".join(lines) + "\n", result

    def alias(self, p, arg):
        """For a reference parameter bound to a variable named alone (`t`),
        that name: the callee's uses of the parameter become uses of the
        variable itself (a reference is that object; no callee name can
        shadow it, all are renamed)."""
        TK = self.ci.TypeKind
        if p.type.kind != TK.LVALUEREFERENCE:
            return None
        c = self.arg_cursor(*arg)
        while c is not None and c.kind in (self.CK.UNEXPOSED_EXPR, self.CK.PAREN_EXPR) and \
                len(_children(c)) == 1:
            c = _children(c)[0]
        if c is None or c.kind != self.CK.DECL_REF_EXPR or c.referenced is None or \
                c.referenced.kind not in (self.CK.VAR_DECL, self.CK.PARM_DECL):
            return None
        name = c.spelling
        if self.src.text(*arg).strip() != name or not _in_main(c.referenced, self.main):
            return None
        # the same object only when no conversion binds it (const double & to a
        # float is a temporary)
        want = _strip_cv(p.type.get_pointee().get_canonical().spelling)
        have = _strip_cv(c.referenced.type.get_canonical().spelling)
        if not want or want != have or "dependent" in want or "type-parameter" in want:
            return None
        return name

    def recursive(self, d, path=frozenset()) -> bool:
        """Whether user function `d` can reach itself through user functions."""
        key = d.get_usr() or d.spelling
        if key in path or len(path) > 30:
            return True
        for x, _ in _walk(d):
            if x.kind == self.CK.CALL_EXPR:
                r = x.referenced
                cands = [r.get_definition() or r] if r is not None and \
                    _in_main(r, self.main) else self.defs.get(x.spelling, []) \
                    if r is None else []
                if r is not None and r.kind == self.CK.FUNCTION_DECL:
                    t = specialized_template(r)
                    if t is not None:
                        cands = [t.get_definition() or t]
                if any(self.recursive(c, path | {key}) for c in cands):
                    return True
        return False

    def arguments(self, x):
        if x.referenced is not None:
            out = list(x.get_arguments())
        else:
            out = _children(x)[1:]
        spans = []
        for a in out:
            s, e = a.extent.start.offset, a.extent.end.offset
            if e <= s:
                raise Refuse(f"a call to '{x.spelling}' with a default argument")
            if spans and s < spans[-1][1]:
                raise Refuse(f"a call to '{x.spelling}' whose arguments a macro spells "
                             f"(not inlined)")
            spans.append((s, e))
        return spans

    def is_shared(self, v) -> bool:
        if v.kind != self.CK.VAR_DECL:
            return False
        try:                          # __shared__ is thread_local in the shim
            return v.tls_kind != self.ci.TLSKind.NONE
        except Exception:
            raise Refuse("libclang cannot say which variables are __shared__")

    def shared_decls(self, d, cbody, binds):
        """The callee's `__shared__` variables: declared once per callee (and
        template arguments), at the top of the kernel; name -> hoisted name."""
        CK = self.CK
        key = (d.get_usr(), tuple(sorted(binds.items())))
        if key in self.statics:
            return self.statics[key]
        names = {}
        for c, p in _walk(cbody):
            if c.kind == CK.VAR_DECL and self.is_shared(c):
                if d.kind == CK.FUNCTION_TEMPLATE and self.fn.kind == CK.FUNCTION_TEMPLATE:
                    raise Refuse(f"a __shared__ variable of template '{d.spelling}' called "
                                 f"from a template kernel (one per instantiation; not "
                                 f"inlined)")
                if p is None or p.kind != CK.DECL_STMT or len(_children(p)) != 1 or \
                        p.hash not in {s.hash for s in _children(cbody)}:
                    raise Refuse(f"a __shared__ variable of '{d.spelling}' not declared "
                                 f"alone at its top level (not inlined)")
                local = {x.spelling for x, _ in _walk(cbody) if x.kind.name in _DECLS
                         and x.hash != c.hash}
                used = {t.spelling for t in self.toks(p)}
                if local & used:
                    raise Refuse(f"a __shared__ variable of '{d.spelling}' whose type names "
                                 f"the function's own '{sorted(local & used)[0]}' "
                                 f"(not inlined)")
                names[c.spelling] = f"__ql_s{len(self.statics) + 1}_{c.spelling}"
        self.statics[key] = names
        for c, p in _walk(cbody):
            if c.kind == CK.VAR_DECL and self.is_shared(c):
                text = self.subst(p, binds, names, end=p.extent.end.offset)
                self.hoisted.append(f"\n#line {self.src.user_line(p.extent.start.offset)}\n"
                                    f"{text}\n")
        return names

    def check_names(self, d, decls, rename, binds, kernel_names):
        """Every use of a renamed name is a token the rewrite sees (not a
        macro's), refers to the callee's own declaration, and no free name of
        the callee is one the kernel declares too (it would be captured)."""
        CK = self.CK
        fname = d.spelling
        ids = {}
        parts = [c for c in d.get_children() if c.kind in (CK.PARM_DECL, CK.COMPOUND_STMT)]
        for part in parts:
            prev = None       # (the function's own tokens start in a macro: __device__)
            for t in self.toks(part):
                if t.kind.name == "IDENTIFIER" and prev not in (".", "->", "::"):
                    ids[t.extent.start.offset] = t.spelling
                prev = t.spelling
        own = set().union(*decls.values()) if decls else set()
        own |= {c.hash for c in d.get_children() if c.kind.name in _TPARAMS}
        for c, _ in (w for part in parts for w in _walk(part)):
            if c.kind in (CK.DECL_REF_EXPR, CK.TYPE_REF, CK.MEMBER_REF_EXPR) and \
                    c.referenced is not None and c.referenced.hash in own:
                if ids.get(c.extent.start.offset) != c.spelling:
                    raise Refuse(f"called function '{fname}' uses its '{c.spelling}' "
                                 f"through a macro (not inlined)")
            elif c.kind in (CK.DECL_REF_EXPR, CK.TYPE_REF) and c.spelling in rename and \
                    c.referenced is not None and c.referenced.hash not in own and \
                    c.referenced.kind not in (CK.TEMPLATE_TYPE_PARAMETER,
                                              CK.TEMPLATE_NON_TYPE_PARAMETER):
                raise Refuse(f"called function '{fname}' uses both its own and an outer "
                             f"'{c.spelling}' (not inlined)")
        free = {s for o, s in ids.items() if s not in rename and s not in binds}
        for o, s in list(ids.items()):           # what the module's macros spell there
            if s in self.macros and s not in rename:
                free |= self.macro_names(s)
        if d.kind == CK.FUNCTION_TEMPLATE:       # the result type, spelled as declared
            free |= set(re.findall(r"[A-Za-z_]\w*", d.result_type.spelling)) - set(binds)
        clash = sorted(free & kernel_names)
        if clash:
            raise Refuse(f"called function '{fname}' uses '{clash[0]}', which the kernel "
                         f"declares too (not inlined)")

    def macro_names(self, name, depth=0) -> set:
        """The identifiers macro `name` of the module expands to (through
        the module's other macros); a macro the pass cannot read gives a
        name no kernel declares... except that it refuses."""
        body = self.macros.get(name)
        if body is None or depth > 8:
            raise Refuse(f"a macro '{name}' the inliner cannot follow")
        out = set()
        for w in re.findall(r"[A-Za-z_]\w*", body):
            out.add(w)
            if w in self.macros and w != name:
                out |= self.macro_names(w, depth + 1)
        return out

    def subst(self, c, binds, rename, end=None) -> str:
        """The text of cursor `c` (to `end`), names renamed, template
        parameters replaced."""
        a = c.extent.start.offset
        b = c.extent.end.offset if end is None else end
        out, cur, prev = [], a, None
        for t in self.toks(c, end=b):
            o = t.extent.start.offset
            s = t.spelling
            if t.kind.name == "IDENTIFIER" and prev not in (".", "->", "::"):
                new = binds.get(s) or rename.get(s)
                if new is not None:
                    out.append(self.src.text(cur, o) + new)
                    cur = t.extent.end.offset
            prev = s
        out.append(self.src.text(cur, b))
        return "".join(out)

    def result_type(self, d, binds):
        t = d.result_type
        if t.kind == self.ci.TypeKind.VOID:
            return None
        if t.kind in (self.ci.TypeKind.LVALUEREFERENCE, self.ci.TypeKind.RVALUEREFERENCE):
            raise Refuse(f"called function '{d.spelling}' returns a reference (not inlined)")
        s = _strip_cv(t.spelling if d.kind == self.CK.FUNCTION_TEMPLATE else
                      t.get_canonical().spelling)
        for k, v in binds.items():
            s = re.sub(rf"\b{re.escape(k)}\b", v, s)
        return s

    def arg_cursor(self, s, e):
        for c, _ in _walk(self.fn):
            if c.extent.start.offset == s and c.extent.end.offset == e and \
                    c.kind.is_expression():
                return c
        return None

"""Region fission, part 0 (the inliner's call sites): where a helper's
call may be inlined and where the rewrite could not keep it exact. A call
is inlined at its statement: the checks walk from the call up to that
statement and refuse a call evaluated conditionally (`?:`, `&&`, `||`), one
ordered after a side effect (`,`, `<<`, an assignment's right side, a
braced list, a subscript), one in a loop or switch header, in an
unevaluated operand, in a declaration's second declarator, or under a
control statement a macro spells. A mixin of fission_inline.Inliner."""
from __future__ import annotations

from .clang_front import _children, _walk, binary_operator, paren_group
from .fission_classify import Refuse

_LATER_SEQUENCED = {",", "<<", ">>"}      # their left operand is evaluated first
_CONDITIONAL = {"&&", "||"}
_UNEVALUATED = {"decltype", "sizeof", "alignof", "_Alignof", "noexcept", "typeid",
                "__typeof__", "typeof", "__alignof__"}


class CallSites:
    def statement(self, x):
        """(statement holding call `x`, whether braces must wrap its rewrite)."""
        CK = self.CK
        child, p = x, self.parents.get(x.hash)
        while p is not None:
            k = p.kind
            if k == CK.COMPOUND_STMT:
                if {t.spelling for t in self.toks(child)} & _UNEVALUATED:
                    raise Refuse(self.why(x, "in a statement with an unevaluated operand "
                                          "(decltype, sizeof, noexcept, typeid)"))
                decls = _children(child) if child.kind == CK.DECL_STMT else []
                if len(decls) > 1 and x.extent.start.offset >= decls[0].extent.end.offset:
                    raise Refuse(self.why(x, "in a declaration's second declarator"))
                return child, False
            if k in (CK.LAMBDA_EXPR, CK.CXX_UNARY_EXPR, CK.CXX_TYPEID_EXPR):
                raise Refuse(f"a call to '{x.spelling or 'a helper'}' inside a lambda, sizeof "
                             f"or alignof")
            if k == CK.CONDITIONAL_OPERATOR and _children(p)[0].hash != child.hash:
                raise Refuse(self.why(x, "in a branch of ?: (evaluated conditionally)"))
            if k == CK.BINARY_OPERATOR:
                op = binary_operator(p)
                first = _children(p)[0]
                if op is None:
                    raise Refuse(self.why(x, "under an operator libclang cannot name"))
                if op in _CONDITIONAL and first.hash != child.hash:
                    raise Refuse(self.why(x, f"on the right of {op} (evaluated conditionally)"))
                if op in _LATER_SEQUENCED and first.hash != child.hash and \
                        self.side_effects(first):
                    raise Refuse(self.why(x, f"after a side effect its {op} orders first"))
                if op == "=" and first.hash == child.hash and \
                        self.side_effects(_children(p)[1]):
                    raise Refuse(self.why(x, "left of an assignment whose right side, "
                                          "ordered first, has a side effect"))
            if k == CK.COMPOUND_ASSIGNMENT_OPERATOR and _children(p)[0].hash == child.hash \
                    and self.side_effects(_children(p)[1]):
                raise Refuse(self.why(x, "left of an assignment whose right side, ordered "
                                      "first, has a side effect"))
            if k == CK.INIT_LIST_EXPR:
                before = []
                for e in _children(p):
                    if e.hash == child.hash:
                        break
                    before.append(e)
                if any(self.side_effects(e) for e in before):
                    raise Refuse(self.why(x, "in a braced list after a side effect it "
                                          "orders first"))
            if k == CK.ARRAY_SUBSCRIPT_EXPR and _children(p)[0].hash != child.hash and \
                    self.side_effects(_children(p)[0]):
                raise Refuse(self.why(x, "after a side effect its subscript orders first"))
            if k in (CK.IF_STMT, CK.SWITCH_STMT, CK.FOR_STMT, CK.WHILE_STMT, CK.DO_STMT,
                     CK.CXX_FOR_RANGE_STMT, CK.CASE_STMT, CK.DEFAULT_STMT, CK.LABEL_STMT):
                first_tok = next((t.spelling for t in self.toks(p)), None)
                if k != CK.LABEL_STMT and first_tok not in (
                        "if", "switch", "for", "while", "do", "case", "default"):
                    raise Refuse(self.why(x, "under a control statement a macro spells"))
                if self.in_header(p, child):
                    if k == CK.IF_STMT and not self.has_init(p):
                        child, p = p, self.parents.get(p.hash)
                        continue
                    raise Refuse(self.why(x, "in a loop or switch header"))
                if child.kind == CK.DECL_STMT:
                    raise Refuse(self.why(x, "in a declaration that is a branch's body"))
                return child, True
            child, p = p, self.parents.get(p.hash)
        raise Refuse(self.why(x, "outside any statement the pass can read"))

    def has_init(self, st) -> bool:
        """Whether if statement `st` has an init-statement (`if (a = g(); c)`)."""
        depth = 0
        for t in self.toks(st):
            if t.spelling in ("(", "[", "{"):
                depth += 1
            elif t.spelling in (")", "]", "}"):
                depth -= 1
                if depth == 0:
                    return False
            elif t.spelling == ";" and depth == 1:
                return True
        return True

    def in_header(self, st, child) -> bool:
        """Whether `child` of control statement `st` is in its parenthesised
        header (condition, init, increment), not its body."""
        CK = self.CK
        if st.kind in (CK.CASE_STMT, CK.DEFAULT_STMT, CK.LABEL_STMT):
            kids = _children(st)
            return bool(kids) and kids[-1].hash != child.hash
        if st.kind == CK.DO_STMT:
            return _children(st)[0].hash != child.hash
        parts = paren_group(self.toks(st))
        if parts is None:
            raise Refuse("a control statement the pass cannot read")
        close = parts[2]
        return child.extent.start.offset < close

    def side_effects(self, e) -> bool:
        CK = self.CK
        for c, _ in _walk(e):
            if c.kind in (CK.CALL_EXPR, CK.COMPOUND_ASSIGNMENT_OPERATOR, CK.UNARY_OPERATOR,
                          CK.BINARY_OPERATOR):
                if c.kind == CK.CALL_EXPR or c.kind == CK.COMPOUND_ASSIGNMENT_OPERATOR:
                    return True
                if c.kind == CK.BINARY_OPERATOR and binary_operator(c) in (None, "="):
                    return True
                if c.kind == CK.UNARY_OPERATOR:
                    toks = [t.spelling for t in self.toks(c)]
                    if "++" in toks or "--" in toks:
                        return True
        return False

    def why(self, x, what) -> str:
        name = x.spelling or next((t.spelling for t in self.toks(x)), "?")
        return (f"a call to '{name}' (it reaches a barrier or warp function) {what}, "
                f"line {self.src.user_line(x.extent.start.offset)}")

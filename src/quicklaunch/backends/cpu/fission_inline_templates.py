"""Region fission, part 0b: the template arguments of an inlined call (the
helper's template parameters, replaced by them in its text): read from a
resolved call's specialisation, given explicitly (`warp_max<float, 8>(v)`),
deduced from a parameter declared `T`, `const T`, `T &` or `const T &`, or
defaulted. A mixin of fission_inline.Inliner."""
from __future__ import annotations

import re

from .fission_classify import Refuse

_TPARAMS = ("TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER")


def _tokens_text(src, toks) -> str:
    return src.text(toks[0].extent.start.offset, toks[-1].extent.end.offset) if toks else ""


def _strip_cv(spelling: str) -> str:
    """A deduced type argument: the argument's type, top-level cv dropped."""
    s = spelling.strip()
    while s.endswith((" const", " volatile")):
        s = s.rsplit(" ", 1)[0]
    if "*" not in s and "&" not in s and "[" not in s:
        s = re.sub(r"^(?:(?:const|volatile)\s+)+", "", s)
        s = re.sub(r"\s+(?:const|volatile)\b", "", s)
    return s


class TemplateArgs:
    def specialisation(self, r, tmpl) -> dict:
        """Template parameter -> argument text of specialisation `r`."""
        CK, TK = self.CK, self.ci.TemplateArgumentKind
        tps = [c for c in tmpl.get_children() if c.kind.name in _TPARAMS + (
            "TEMPLATE_TEMPLATE_PARAMETER",)]
        n = r.get_num_template_arguments()
        if n != len(tps):
            raise Refuse(f"a call to template '{r.spelling}' whose arguments the pass "
                         f"cannot read (packs or template template parameters)")
        out = {}
        for i, tp in enumerate(tps):
            kind = r.get_template_argument_kind(i)
            if tp.kind == CK.TEMPLATE_TYPE_PARAMETER and kind == TK.TYPE:
                out[tp.spelling] = r.get_template_argument_type(i).get_canonical().spelling
            elif tp.kind == CK.TEMPLATE_NON_TYPE_PARAMETER and kind == TK.INTEGRAL:
                out[tp.spelling] = self.integral(r, i, tp)
            else:
                raise Refuse(f"a call to template '{r.spelling}' with an argument the pass "
                             f"cannot spell")
        return out

    def integral(self, r, i, tp) -> str:
        """Integral template argument `i` of `r`, spelled in its parameter's
        type (an enum's value cast back to the enum)."""
        TK = self.ci.TypeKind
        t = tp.type.get_canonical()
        unsigned = t.kind in (TK.BOOL, TK.UCHAR, TK.USHORT, TK.UINT, TK.ULONG, TK.ULONGLONG,
                              TK.CHAR_U, TK.CHAR16, TK.CHAR32, TK.WCHAR)
        v = r.get_template_argument_unsigned_value(i) if unsigned else \
            r.get_template_argument_value(i)
        suffix = {TK.INT: "", TK.UINT: "u", TK.LONG: "l", TK.ULONG: "ul", TK.LONGLONG: "ll",
                  TK.ULONGLONG: "ull"}
        if t.kind in suffix:          # a literal, as the pass reads widths and offsets
            return f"({v}{suffix[t.kind]})"
        if t.kind == TK.BOOL:
            return "(true)" if v else "(false)"
        if t.kind in (TK.ENUM, TK.CHAR_S, TK.SCHAR, TK.SHORT) or unsigned:
            return f"(static_cast<{t.spelling}>({v}{'ULL' if unsigned else 'LL'}))"
        raise Refuse(f"a call to template '{r.spelling}' with an argument of type "
                     f"'{tp.type.spelling}' the pass cannot spell")

    def bindings(self, x, d, params, args) -> dict:
        CK = self.CK
        if d.kind != CK.FUNCTION_TEMPLATE:
            return {}
        if x.hash in self.exact:
            return self.exact[x.hash]
        fname = d.spelling
        tparams = [c for c in d.get_children() if c.kind in (
            CK.TEMPLATE_TYPE_PARAMETER, CK.TEMPLATE_NON_TYPE_PARAMETER,
            CK.TEMPLATE_TEMPLATE_PARAMETER)]
        for tp in tparams:
            if tp.kind == CK.TEMPLATE_TEMPLATE_PARAMETER or \
                    any(t.spelling == "..." for t in self.toks(tp)):
                raise Refuse(f"called template '{fname}' has a template template parameter "
                             f"or a pack (not inlined)")
        explicit = self.explicit_args(x, fname)
        if len(explicit) > len(tparams):
            raise Refuse(f"a call to '{fname}' with more template arguments than it has")
        binds: dict = {}
        for tp, text in zip(tparams, explicit):
            binds[tp.spelling] = text if tp.kind == CK.TEMPLATE_TYPE_PARAMETER else f"({text})"
        for tp in tparams[len(explicit):]:
            deduced = self.deduce(tp, params, args)
            if deduced is None:
                toks = self.toks(tp)
                eq = [i for i, t in enumerate(toks) if t.spelling == "="]
                if not eq:
                    raise Refuse(f"a call to '{fname}' whose template argument "
                                 f"'{tp.spelling}' the pass cannot deduce; write it "
                                 f"(`{fname}<...>(...)`)")
                dflt = _tokens_text(self.src, toks[eq[0] + 1:])
                named = {t.spelling for t in toks[eq[0] + 1:] if t.kind.name == "IDENTIFIER"}
                clash = sorted((named - {t.spelling for t in tparams}) & self.kernel_names)
                if clash:
                    raise Refuse(f"the default of '{fname}''s template parameter "
                                 f"'{tp.spelling}' names '{clash[0]}', which the kernel "
                                 f"declares too (not inlined)")
                for k, v in binds.items():
                    dflt = re.sub(rf"\b{re.escape(k)}\b", v, dflt)
                deduced = dflt if tp.kind == CK.TEMPLATE_TYPE_PARAMETER else f"({dflt})"
            binds[tp.spelling] = deduced
        return binds

    def check_binds(self, d, binds):
        """A type argument is pasted as text: a compound one (`const float *`)
        would not bind alike (`T a, b;` makes `b` a float)."""
        for tp in d.get_children():
            v = binds.get(tp.spelling, "")
            if tp.kind == self.CK.TEMPLATE_TYPE_PARAMETER and any(ch in v for ch in "*&[("):
                raise Refuse(f"a call to '{d.spelling}' whose template argument "
                             f"'{tp.spelling}' is a pointer, reference, array or function "
                             f"type ({v}; not inlined)")

    def explicit_args(self, x, fname) -> list[str]:
        toks = self.toks(x)
        i = next((j for j, t in enumerate(toks) if t.spelling == fname), None)
        if i is None:
            raise Refuse(f"a call to '{fname}' spelled by a macro (not inlined)")
        if i + 1 >= len(toks) or toks[i + 1].spelling != "<":
            return []
        depth, start, out = 0, toks[i + 2].extent.start.offset, []
        for t in toks[i + 1:]:
            s = t.spelling
            if s in ("<", "(", "["):
                depth += 1
            elif s in (")", "]"):
                depth -= 1
            elif s in (">", ">>"):
                depth -= len(s)
                if depth <= 0:
                    if depth < 0:
                        raise Refuse(f"template arguments of '{fname}' the pass cannot read")
                    out.append(self.src.text(start, t.extent.start.offset).strip())
                    return out
            elif s == "," and depth == 1:
                out.append(self.src.text(start, t.extent.start.offset).strip())
                start = t.extent.end.offset
        raise Refuse(f"template arguments of '{fname}' the pass cannot read")

    def deduce(self, tp, params, args):
        """Type parameter `tp` from a parameter declared `T`, `const T`,
        `T &` or `const T &`: the argument's type, cv dropped."""
        if tp.kind != self.CK.TEMPLATE_TYPE_PARAMETER:
            return None
        for p, (s, e) in zip(params, args):
            toks = [t.spelling for t in self.toks(p)]
            if toks and toks[-1] == p.spelling:
                toks = toks[:-1]
            shape = [t for t in toks if t != "const"]
            if shape not in ([tp.spelling], [tp.spelling, "&"]):
                continue
            arg = self.arg_cursor(s, e)
            if arg is None:
                continue
            ty = arg.type.spelling
            if not ty or "dependent" in ty or "(" in ty or "[" in ty:
                continue
            return _strip_cv(ty)
        return None

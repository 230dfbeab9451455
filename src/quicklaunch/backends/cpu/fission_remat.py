"""Region fission, rematerialisation: which replicated locals each region
recomputes from the thread's coordinates instead of reading back from the
block's scratch. A mixin of fission._Kernel.

`unsigned tid = threadIdx.x;` or `int i = blockIdx.x * blockDim.x + tid;`,
never assigned after, is live across every barrier of a reduction. Stored
per thread and loaded back, it is an opaque value to the compiler; declared
again in each region from its initialiser it is the thread loop's own
induction variable, so `if (tid < k) s[tid] += s[tid + k];` becomes a loop
the compiler can split at k and vectorise. Only initialisers that give the
same value wherever they are evaluated qualify: literals, arithmetic, the
builtin coordinates, parameters the kernel never modifies, and other such
locals; no memory reads, no calls."""
from __future__ import annotations

from .clang_front import _children, _in_main, _strip, _walk

_COORDS = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"}


class Remat:
    def rematerialisable(self) -> dict:
        """{hash: initialiser source text} of the replicated locals that
        qualify, in declaration order (a local's inputs come before it)."""
        written = set(self.written_vars(self.body))
        out = {}
        self.remat_inputs = {}
        helpers = self._helper_candidates(written)
        for h, v in sorted({**self.replicated, **helpers}.items(),
                           key=lambda hv: hv[1].extent.start.offset):
            if self.is_array(v) or h in written or v.type.is_volatile_qualified():
                continue
            inits = [c for c in v.get_children() if c.kind not in (
                self.CK.TYPE_REF, self.CK.NAMESPACE_REF, self.CK.TEMPLATE_REF)]
            inputs = set()
            if len(inits) != 1 or not self._pure(inits[0], out, inputs):
                continue
            if not self._assigned_by_equals(v):
                continue
            init = inits[0]
            out[h] = self.src.text(init.extent.start.offset, init.extent.end.offset)
            self.remat_inputs[h] = inputs
        # helpers that a rematerialised local reads become replicated locals
        # rematerialised themselves (never stored: they have no scratch use)
        needed, todo = set(), [h for h in out if h in self.replicated]
        while todo:
            for i in self.remat_inputs.get(todo.pop(), ()):
                if i in helpers and i not in needed:
                    needed.add(i)
                    todo.append(i)
        for h in helpers:
            if h not in needed:
                out.pop(h, None)
                self.remat_inputs.pop(h, None)
        if needed:
            self.promoted = needed
            self.replicated = dict(sorted({**self.replicated, **{h: helpers[h] for h in needed}}
                                          .items(), key=lambda hv: hv[1].extent.start.offset))
        return out

    def _helper_candidates(self, written) -> dict:
        """Locals used in one region only that a replicated local's
        initialiser may read (`const int row = blockIdx.x * blockDim.y +
        threadIdx.y;` before `const float *xr = x + row * cols;`): declared
        alone at a region's top level, never written, a name no other local
        of the kernel has. Rematerialised with the local that reads them,
        `xr` is the same pointer for a row's threads in every region, not a
        value loaded per thread (which no vector loop can use)."""
        CK = self.CK
        names: dict = {}
        for x, _ in _walk(self.body):
            if x.kind == CK.VAR_DECL:
                names[x.spelling] = names.get(x.spelling, 0) + 1
        alone = {vds[0].hash for st in self.top_decls
                 for vds in [[v for v in st.get_children() if v.kind == CK.VAR_DECL]]
                 if len(vds) == 1}
        return {h: v for h, v in self.locals.items()
                if h not in self.replicated and h in alone and h not in written and
                h not in self.uniform and (self.decl_region.get(h) or 0) > 0 and
                names.get(v.spelling) == 1 and not self.is_array(v) and
                v.type.get_canonical().kind.name not in ("RECORD", "ELABORATED")}

    def _assigned_by_equals(self, v) -> bool:
        """`T v = expr` (not a constructor call or a brace list)."""
        toks = list(v.get_tokens())
        names = [i for i, t in enumerate(toks) if t.spelling == v.spelling and
                 t.extent.start.offset == v.location.offset]
        return bool(names) and names[0] + 1 < len(toks) and toks[names[0] + 1].spelling == "="

    def _pure(self, c, remat, inputs) -> bool:
        CK = self.CK
        for x, parent in _walk(c):
            k = x.kind
            if k in (CK.INTEGER_LITERAL, CK.FLOATING_LITERAL, CK.CXX_BOOL_LITERAL_EXPR,
                     CK.CHARACTER_LITERAL, CK.PAREN_EXPR, CK.UNEXPOSED_EXPR,
                     CK.CONDITIONAL_OPERATOR, CK.CSTYLE_CAST_EXPR, CK.CXX_STATIC_CAST_EXPR,
                     CK.CXX_FUNCTIONAL_CAST_EXPR, CK.TYPE_REF, CK.CXX_UNARY_EXPR):
                continue
            if k == CK.UNARY_OPERATOR:
                if self.unop(x) in (None, "++", "--", "&", "*"):
                    return False
                continue
            if k == CK.BINARY_OPERATOR:
                if self.binop(x) in (None, "=", ","):
                    return False
                continue
            if k == CK.MEMBER_REF_EXPR:
                base = _children(x)
                b = _strip(base[0]) if base else None
                if b is None or b.kind != CK.DECL_REF_EXPR or b.spelling not in _COORDS:
                    return False
                continue
            if k == CK.DECL_REF_EXPR:
                r = x.referenced
                if r is None:
                    return False
                if r.kind in (CK.ENUM_CONSTANT_DECL, CK.TEMPLATE_NON_TYPE_PARAMETER):
                    continue
                if r.kind == CK.PARM_DECL and r.hash in self.uniform:
                    continue
                if r.kind == CK.VAR_DECL and r.hash in remat:
                    inputs.add(r.hash)
                    continue
                if r.kind == CK.VAR_DECL and r.spelling in _COORDS and \
                        not _in_main(r, self.main):
                    continue
                return False
            else:
                return False
        return True

    def with_inputs(self, hashes) -> set:
        """`hashes` and the rematerialised locals their initialisers read."""
        out, todo = set(), list(hashes)
        while todo:
            h = todo.pop()
            if h in out:
                continue
            out.add(h)
            if h in self.remat:
                todo.extend(self.remat_inputs.get(h, ()))
        return out

"""Region fission: barrier kernels as loops over the block's threads.

For a tier-2 kernel (tiers.py) whose barriers sit where CUDA requires them to
be reached uniformly, this pass writes a second, per-block version of the
kernel (MCUDA's "deep fission"): the body split at each barrier into
regions, each region a loop over the block's threads (x fastest, threadIdx
set per iteration); locals used in more than one region replicated per
thread (scratch arrays of blockDim size; a local fixed-size array is its
thread's row of such scratch, by reference); `__shared__` variables and
block-uniform constants hoisted to the function, so they stay one per block;
uniform loops and branches holding barriers run once per block around their
region loops; an early `return` marks the thread exited (later regions skip
it and barriers count only live threads, as the fibers do);
`__syncthreads_count/_and/_or` are reductions between two regions; warp
shuffles and votes reached by the whole block are boundaries too, their
operands stored per thread before and their results read by CUDA's lane
rules after (fission_warp.py).

The front end is libclang (the PyPI `libclang` wheel, imported lazily): the
shim is parsed once into a precompiled header kept in the compile cache, so
a kernel parses in ~10 ms. The pass is conservative: whatever it cannot
prove (a barrier under a thread-dependent condition, in a called function,
in a macro, inside do/switch; warp functions under a condition that is not
block-uniform or with a partial mask; tiles; goto; lambdas; a
modified parameter; the address of a local that could outlive its region;
...) leaves that kernel on fibers, with the reason recorded. The generated
code is text taken from the user's source, with `#line` directives back to
the user's lines.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...signature import TIER2_NAMES
from . import fission_warp

ENV = "QUICKLAUNCH_CPU_FISSION"   # "0": every barrier kernel runs as fibers
MAX_THREADS = 1024

_lock = threading.Lock()
_state: dict = {}


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() not in ("0", "no", "off", "false")


def _cindex():
    """clang.cindex, or the reason it cannot be used (str)."""
    if "ci" not in _state:
        try:
            import clang.cindex as ci
            ci.Index.create()
            _state["ci"] = ci
        except Exception as exc:  # ImportError, a missing or broken libclang.so
            _state["ci"] = f"libclang is not available ({type(exc).__name__}: {exc}); " \
                           f"pip install libclang"
    return _state["ci"]


def identity() -> str:
    """What the pass's output depends on besides the source (for cache keys)."""
    if not enabled():
        return "fission=off"
    ci = _cindex()
    if isinstance(ci, str):
        return "fission=no-libclang"
    try:
        from importlib.metadata import version
        v = version("libclang")
    except Exception:
        v = "?"
    return f"fission=libclang-{v}-pass-12"


@dataclass
class Result:
    tiers: dict = field(default_factory=dict)     # expr -> ("fission"|"fibers", reason)
    rows: dict = field(default_factory=dict)      # expr -> the fission function's expression
    warps: set = field(default_factory=set)       # exprs whose fission uses warp functions
    code: str = ""                                 # the generated functions
    parse_s: float = 0.0


class Refuse(Exception):
    pass


# ----------------------------------------------------------------- front end
def _system_includes(compiler_path: str) -> list[str]:
    key = ("inc", compiler_path)
    if key not in _state:
        try:
            out = subprocess.run([compiler_path, "-x", "c++", "-E", "-v", "-"], input="",
                                 capture_output=True, text=True, timeout=30).stderr
            lines = out.split("#include <...> search starts here:", 1)[1]
            lines = lines.split("End of search list.", 1)[0]
            _state[key] = [x.strip() for x in lines.splitlines() if x.strip()]
        except Exception:
            _state[key] = []
    return _state[key]


def _base_args(compiler_path: str, defines: tuple[str, ...]) -> list[str]:
    from .toolchain import INCLUDE_DIR
    args = ["-xc++", "-std=c++17", f"-I{INCLUDE_DIR}", "-DQL_TIER2=1", *defines]
    for d in _system_includes(compiler_path):
        args += ["-isystem", d]
    return args


def _pch(ci, compiler_path: str, defines: tuple[str, ...], cache) -> str | None:
    """A precompiled header of the shim (and cooperative groups) for these
    defines, built once and kept in the compile cache; None if it cannot be."""
    from .toolchain import INCLUDE_DIR, headers_digest_material
    base = _base_args(compiler_path, defines)
    key = hashlib.sha256(b"\0".join([identity().encode(), headers_digest_material(),
                                     "\0".join(base).encode()])).hexdigest()
    if ("pch", key) in _state:
        return _state[("pch", key)]
    path = None
    try:
        if cache.read("cpu-fission", key, ".pch") is not None:
            path = str(cache.path("cpu-fission", key, ".pch"))
    except Exception:
        path = None
    if path is None:
        with tempfile.TemporaryDirectory(prefix="quicklaunch-pch-") as tmp:
            out = Path(tmp, "shim.pch")
            idx = ci.Index.create()
            tu = idx.parse(str(INCLUDE_DIR / "cuda_shim.h"),
                           args=["-xc++-header", *base[1:], "-include",
                                 str(INCLUDE_DIR / "cooperative_groups.h")])
            if any(d.severity >= 3 for d in tu.diagnostics):
                _state[("pch", key)] = None
                return None
            tu.save(str(out))
            data = out.read_bytes()
            try:
                cache.put("cpu-fission", key, ".pch", data)
                path = str(cache.path("cpu-fission", key, ".pch"))
            except Exception:
                keep = Path(tempfile.gettempdir(), f"quicklaunch-{os.getuid()}-{key[:16]}.pch")
                keep.write_bytes(data)
                path = str(keep)
    _state[("pch", key)] = path
    return path


# ------------------------------------------------------------------ helpers
def _cub_header(path: str) -> bool:
    """Whether `path` is one of the shim's CUB headers (include/cub/)."""
    from .toolchain import INCLUDE_DIR
    return os.path.realpath(path).startswith(os.path.realpath(INCLUDE_DIR / "cub") + os.sep)


BARRIERS = {"__syncthreads": None, "__syncthreads_count": "count",
            "__syncthreads_and": "and", "__syncthreads_or": "or"}
_ALLOWED_CG = {"this_thread_block", "cooperative_groups"}
# Fiber yields: a thread that waits for another one in its own region would
# wait for ever in a thread loop.
_YIELDS = {"__nanosleep"}
_REFUSED = (TIER2_NAMES | _YIELDS) - _ALLOWED_CG - set(BARRIERS) - set(fission_warp.WARP_OPS)
_UNIFORM_BUILTINS = {"blockIdx", "blockDim", "gridDim", "warpSize", "__ql_dyn_shared"}
_LINE = re.compile(rb'^[ \t]*#[ \t]*line[ \t]+(\d+)', re.M)


class _Src:
    """The parsed unit's bytes, with the user's line of each byte offset."""

    def __init__(self, data: bytes, first_raw_line: int, first_line: int):
        self.data = data
        # raw line -> user line, following the body's own #line directives
        self.map = []   # (raw_line_of_next_line, user_line)
        self.map.append((first_raw_line, first_line))
        for m in _LINE.finditer(data):
            raw = data.count(b"\n", 0, m.start()) + 2
            self.map.append((raw, int(m.group(1))))
        self.map.sort()

    def text(self, a: int, b: int) -> str:
        return self.data[a:b].decode("utf-8", "replace")

    def user_line(self, offset: int) -> int:
        raw = self.data.count(b"\n", 0, offset) + 1
        best = self.map[0]
        for r, u in self.map:
            if r <= raw:
                best = (r, u)
        return best[1] + (raw - best[0])

    def column(self, offset: int) -> int:
        return offset - (self.data.rfind(b"\n", 0, offset) + 1)


def _children(c):
    return list(c.get_children())


def _strip(c):
    """Through implicit casts, parens and unexposed wrappers."""
    CK = c.kind.__class__
    while c.kind in (CK.UNEXPOSED_EXPR, CK.PAREN_EXPR) and len(_children(c)) == 1:
        c = _children(c)[0]
    return c


def _walk(c, parent=None):
    yield c, parent
    for ch in c.get_children():
        yield from _walk(ch, c)


def _in_main(c, main: str) -> bool:
    f = c.location.file
    return f is not None and f.name == main


class _Kernel:
    """The analysis and rewrite of one kernel definition."""

    def __init__(self, ci, fn, src: _Src, main: str, filename: str, defs: dict):
        self.ci, self.CK, self.fn, self.src, self.main = ci, ci.CursorKind, fn, src, main
        self.filename, self.defs = filename, defs
        self.params = [c for c in fn.get_children() if c.kind == self.CK.PARM_DECL]
        bodies = [c for c in fn.get_children() if c.kind == self.CK.COMPOUND_STMT]
        if not bodies:
            raise Refuse("no body")
        self.body = bodies[0]
        self.regions = 0
        self.barriers = 0
        self.warp_ops: dict = {}       # barrier id -> fission_warp.WarpOp
        self.warp_calls = 0            # warp functions, __syncwarp included
        self.uniform: set = set()      # hashes of uniform variables
        self.shared: set = set()       # hashes of __shared__ variables
        self.hoisted: list = []        # DECL_STMT cursors hoisted to the function
        self.hoisted_ids: set = set()
        self.locals: dict = {}         # hash -> VAR_DECL (locals of region code)
        self.decl_region: dict = {}    # hash -> region id of its top-level DECL_STMT
        self.used_in: dict = {}        # hash -> set of region ids
        self.returns = False
        self.callee_memo: dict = {}
        self.top_decls: list = []

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
        end = c.extent.end.offset
        if c.kind in (self.CK.DECL_STMT, self.CK.COMPOUND_STMT):
            return end
        data = self.src.data
        j = end
        while j < len(data) and data[j:j + 1] in (b" ", b"\t", b"\n", b"\r"):
            j += 1
        if data[j:j + 1] == b";":
            return j + 1
        return end

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
                and _cub_header(ref.location.file.name):
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
                        (x.kind == self.CK.CALL_EXPR and s == "sync"):
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
                toks = [t.spelling for t in x.get_tokens()]
                if toks and (toks[0] in ("++", "--") or toks[-1] in ("++", "--")):
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
        kids = _children(x)
        if not kids:
            return None
        end = kids[0].extent.end.offset
        for t in x.get_tokens():
            if t.extent.start.offset >= end:
                return t.spelling
        return None

    def check_counter_write(self, x, counters, why):
        kids = _children(x)
        target = _strip(kids[0]) if kids else None
        if target is not None and target.kind == self.CK.DECL_REF_EXPR and \
                target.referenced is not None and target.referenced.hash in counters:
            return
        raise Refuse(f"a barrier under a {why} with a side effect")

    # ----------------------------------------------------------- writes
    def written_vars(self, root):
        """Hashes of variables assigned, incremented, address-taken or passed
        by reference anywhere in `root`."""
        CK = self.CK
        out = {}
        for x, parent in _walk(root):
            k = x.kind
            target = None
            if k in (CK.BINARY_OPERATOR, CK.COMPOUND_ASSIGNMENT_OPERATOR):
                op = self.binop(x)
                if k == CK.COMPOUND_ASSIGNMENT_OPERATOR or op == "=":
                    kids = _children(x)
                    target = _strip(kids[0]) if kids else None
            elif k == CK.UNARY_OPERATOR:
                toks = [t.spelling for t in x.get_tokens()]
                if toks and (toks[0] in ("++", "--", "&") or toks[-1] in ("++", "--")):
                    kids = _children(x)
                    target = _strip(kids[0]) if kids else None
            elif k == CK.DECL_REF_EXPR and parent is not None and \
                    parent.kind in (CK.CALL_EXPR, CK.MEMBER_REF_EXPR, CK.VAR_DECL):
                if parent.kind == CK.VAR_DECL and parent.type.kind != self.ci.TypeKind.LVALUEREFERENCE:
                    continue
                if parent.kind == CK.CALL_EXPR and x.referenced is not None and \
                        x.referenced.kind == CK.FUNCTION_DECL:
                    continue
                target = x
            if target is not None and target.kind == CK.DECL_REF_EXPR and \
                    target.referenced is not None:
                out[target.referenced.hash] = target.referenced.spelling
        return out

    # ---------------------------------------------------- structure
    def analyse(self):
        CK = self.CK
        for x, _ in _walk(self.body):
            k = x.kind
            if k in (CK.GOTO_STMT, CK.INDIRECT_GOTO_STMT, CK.LABEL_STMT):
                raise Refuse("goto or a label in the kernel")
            if k == CK.LAMBDA_EXPR:
                raise Refuse("a lambda in the kernel")
            if k in (CK.ASM_STMT, CK.MS_ASM_STMT) or k.name == "GCC_ASM_STMT":
                raise Refuse("inline assembly in the kernel")
            if k == CK.CXX_TRY_STMT:
                raise Refuse("try in the kernel")
            if k == CK.CALL_EXPR and not self.is_barrier_call(x):
                self.check_callee(x)
            if k in (CK.DECL_REF_EXPR, CK.TYPE_REF, CK.NAMESPACE_REF, CK.TEMPLATE_REF,
                     CK.MEMBER_REF_EXPR, CK.OVERLOADED_DECL_REF) and \
                    x.spelling in _REFUSED and x.spelling not in _YIELDS:
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
                if cur is None:
                    cur = ["region", self.new_region(), []]
                cur[2].append((st, {}))
                self.scan_region(st, cur[1], top=True)
                last_barrier = False
                continue
            flush()
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
        self.warp_calls += 1
        n = sum(1 for d, _ in _walk(st) if self.is_barrier_call(d))
        if n != 1:
            raise Refuse("two barriers or warp functions in one statement")
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
        self.pending_warp = w
        return "warp", call, call

    def pure(self, e) -> bool:
        """Whether expression `e` only reads: no call, assignment,
        increment or decrement (a field read such as threadIdx.x is a read)."""
        CK = self.CK
        for x, _ in _walk(e):
            if x.kind in (CK.CALL_EXPR, CK.COMPOUND_ASSIGNMENT_OPERATOR, CK.LAMBDA_EXPR,
                          CK.CXX_NEW_EXPR, CK.CXX_DELETE_EXPR, CK.CXX_THROW_EXPR):
                return False
            if x.kind == CK.BINARY_OPERATOR and self.binop(x) == "=":
                return False
            if x.kind == CK.UNARY_OPERATOR:
                toks = [t.spelling for t in x.get_tokens()]
                if toks and (toks[0] in ("++", "--") or toks[-1] in ("++", "--")):
                    return False
        return True

    def header_parts(self, st):
        """(open paren offset, ';' offsets, close paren offset) of a for header."""
        toks = list(st.get_tokens())
        depth, semis, start = 0, [], None
        for t in toks:
            s = t.spelling
            if s == "(":
                depth += 1
                if depth == 1 and start is None:
                    start = t.extent.start.offset
            elif s == ")":
                depth -= 1
                if depth == 0:
                    return start, semis, t.extent.end.offset
            elif s == ";" and depth == 1:
                semis.append(t.extent.start.offset)
        raise Refuse("a for header the pass cannot read")

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
            self.uniform_expr(kids[0], last_barrier, frozenset(counters), "condition")
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
        loops = []

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
                toks = [t.spelling for t in x.get_tokens()]
                kids = _children(x)
                if toks and toks[0] == "&" and kids:
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

    def thread_loop(self, rid, body_text: str, names_used: set, declared=(),
                    write=True) -> str:
        """A loop over the block's threads around `body_text`. Replicated
        locals are copied in at the start and out at the end (a register in
        the loop, not memory that the kernel's pointers might alias)."""
        order = sorted(names_used, key=lambda h: self.index[h])
        refs = "".join(f"__ql_T{self.index[h]} "
                       f"{'&' if self.is_array(self.replicated[h]) else ''}"
                       f"{self.replicated[h].spelling} = __ql_r{self.index[h]}[__ql_t]; "
                       for h in order)
        if write:   # arrays are the scratch itself: nothing to copy out
            outs = "".join(f" __ql_r{self.index[h]}[__ql_t] = {self.replicated[h].spelling};"
                           for h in sorted(set(names_used) | set(declared),
                                           key=lambda h: self.index[h])
                           if not self.is_array(self.replicated[h]))
            body_text = body_text + "\n" + outs
        skip = "if (__ql_exited[__ql_t]) continue; " if self.returns else ""
        tail = f" __ql_next{rid}:;" if self.returns else ""
        # The thread's coordinates are stored for what the region calls (and
        # for assert and fault reports) and read from a local shadow.
        return ("\nfor (unsigned __ql_z = 0, __ql_t = 0; __ql_z < __ql_bz; ++__ql_z) { "
                "::threadIdx.z = __ql_z; for (unsigned __ql_y = 0; __ql_y < __ql_by; ++__ql_y) { "
                "::threadIdx.y = __ql_y; for (unsigned __ql_x = 0; __ql_x < __ql_bx; "
                f"++__ql_x, ++__ql_t) {{ ::threadIdx.x = __ql_x; {skip}{{ "
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
                out.append(self.thread_loop(rid, text, self.region_uses(rid, declared),
                                            declared))
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
                                                self.region_uses(prid, set()), write=False))
                    continue
                init, op = {"count": ("0", "+="), "and": ("1", "&="), "or": ("0", "|=")}[kind]
                ptxt = self.line(pred.extent.start.offset) + self.apply(
                    pred.extent.start.offset, pred.extent.end.offset, {})
                out.append(f"\nint __ql_b{bid} = {init};")
                out.append(self.thread_loop(prid, f"__ql_b{bid} {op} (({ptxt}) != 0);",
                                            self.region_uses(prid, set()), write=False))
            elif k in ("for", "while"):
                header, off = it[1]
                out.append(self.line(off) + header + " {" + self.emit(it[2]) + "\n}")
            elif k == "if":
                cond, off = it[1]
                out.append("\nif (" + self.line(off) + cond + ") {" + self.emit(it[2]) +
                           "\n} else {" + self.emit(it[3]) + "\n}")
            elif k == "block":
                out.append("\n{" + self.emit(it[1]) + "\n}")
        return "".join(out)

    def generate(self, fname: str) -> str:
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
                 "gridDim = ::gridDim; (void)blockIdx; (void)blockDim; (void)gridDim;"]
        sizes = []
        for h, i in self.index.items():
            v = self.replicated[h]
            lines.append(f"using __ql_T{i} = typename ::ql_export::unconst<{v.type.spelling}>::type;")
            lines.append(f"static_assert(__is_trivially_copyable(__ql_T{i}), \"fission\");")
            sizes.append(f"::ql_export::scratch_bytes<__ql_T{i}>(__ql_n)")
        warp_scratch = [ts for bid, w in sorted(self.warp_ops.items())
                         for ts in fission_warp.scratch(w, bid)]
        for ty, _ in warp_scratch:
            sizes.append(f"::ql_export::scratch_bytes<{ty}>(__ql_n)")
        if self.returns:
            sizes.append("::ql_export::scratch_bytes<unsigned char>(__ql_n)")
        if sizes:
            lines.append(f"char *__ql_p = ::ql_export::fission_scratch({' + '.join(sizes)});")
            for h, i in self.index.items():
                lines.append(f"__ql_T{i} *__restrict__ __ql_r{i} = "
                             f"::ql_export::scratch_take<__ql_T{i}>(__ql_p, __ql_n);")
            for ty, name in warp_scratch:
                lines.append(f"{ty} *__restrict__ {name} = "
                             f"::ql_export::scratch_take<{ty}>(__ql_p, __ql_n);")
        if self.returns:
            lines.append("unsigned char *__restrict__ __ql_exited = "
                         "::ql_export::scratch_take<unsigned char>(__ql_p, __ql_n);")
            lines.append("memset(__ql_exited, 0, __ql_n); unsigned __ql_gone = 0;")
        text = "\n".join(lines)
        if fn.kind != self.CK.FUNCTION_TEMPLATE:
            # assert() names the kernel as the compiler spells the original's
            # signature in __PRETTY_FUNCTION__ (the fibers' message): g++
            # "const int*", clang "const int *" (libclang's own spelling)
            qual = _qualified(fn, self.CK) or fn.spelling

            def pretty(types):
                return f"void {qual}({', '.join(types)})".replace("\\", "\\\\").replace('"', '\\"')
            spelled = [p.type.spelling for p in self.params]
            gnu = pretty(re.sub(r" ([*&])", r"\1", t) for t in spelled)
            text = (f'#pragma push_macro("__ASSERT_FUNCTION")\n#undef __ASSERT_FUNCTION\n'
                    f'#if defined(__clang__)\n#define __ASSERT_FUNCTION "{pretty(spelled)}"\n'
                    f'#else\n#define __ASSERT_FUNCTION "{gnu}"\n#endif\n{text}')
            self.pop = '\n#pragma pop_macro("__ASSERT_FUNCTION")\n'
        for st in self.hoisted:
            text += self.line(st.extent.start.offset) + \
                self.src.text(st.extent.start.offset, st.extent.end.offset)
        text += self.emit(self.items)
        text += "\n}\n" + getattr(self, "pop", "")
        return text


def _qualified(c, CK) -> str:
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            if p.spelling:
                parts.append(p.spelling)
        elif p.kind != CK.LINKAGE_SPEC:
            return ""
        p = p.semantic_parent
    return "::".join(reversed(parts))


def _namespaces(c, CK) -> list[str]:
    out = []
    p = c.semantic_parent
    while p is not None and p.kind != CK.TRANSLATION_UNIT:
        if p.kind == CK.NAMESPACE:
            out.append(p.spelling)
        p = p.semantic_parent
    return list(reversed(out))


def plan(body: str, exprs: list[str], kernel_tiers: dict, filename: str, first_line: int,
         cc: tuple[str, ...], compiler_path: str, cache=None) -> Result:
    """Which tier-2 kernels run as fission, and their generated functions."""
    import time
    res = Result()
    wanted = [e for e in exprs if kernel_tiers.get(e) == 2]
    if not wanted:
        return res
    ci = _cindex()
    if isinstance(ci, str):
        for e in wanted:
            res.tiers[e] = ("fibers", ci)
        return res
    from .toolchain import host_options
    t0 = time.perf_counter()
    defines = tuple(o for o in cc if o.startswith("-D__CUDA_ARCH__="))
    user = tuple(o for o in host_options(tuple(o for o in cc if o not in defines))
                 if o.startswith(("-D", "-U", "-I", "-include", "-std")))
    with _lock:
        try:
            pch = _pch(ci, compiler_path, defines, cache) if cache is not None else None
        except Exception:
            pch = None
        args = _base_args(compiler_path, defines) + list(user)
        if pch:
            args += ["-include-pch", pch]
        prefix = '#include "cuda_shim.h"\n'
        unit = prefix + body + "\n"
        main = "/quicklaunch-fission/module.cpp"
        idx = ci.Index.create()
        tu = idx.parse(main, args=args, unsaved_files=[(main, unit)])
    res.parse_s = time.perf_counter() - t0
    errors = [d for d in tu.diagnostics if d.severity >= 3]
    if errors:
        why = f"libclang could not parse the module: {errors[0].spelling}"
        for e in wanted:
            res.tiers[e] = ("fibers", why)
        return res
    CK = ci.CursorKind
    src = _Src(unit.encode(), 2, first_line)
    defs: dict = {}
    kernels: dict = {}

    def collect(c):
        for ch in c.get_children():
            if ch.kind in (CK.NAMESPACE, CK.LINKAGE_SPEC):
                if _in_main(ch, main):
                    collect(ch)
            elif ch.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE) and \
                    ch.is_definition() and _in_main(ch, main):
                defs.setdefault(ch.spelling, []).append(ch)
                kernels.setdefault(_qualified(ch, CK), []).append(ch)
    collect(tu.cursor)
    code = []
    for e in wanted:
        base = e.split("<")[0].strip()
        if base.startswith("::"):
            base = base[2:]
        fns = kernels.get(base, [])
        if len(fns) != 1:
            res.tiers[e] = ("fibers", "the kernel's definition was not found once "
                            "(overloaded, or a specialisation)")
            continue
        fn = fns[0]
        if fn.kind == CK.FUNCTION_TEMPLATE and "<" not in e:
            res.tiers[e] = ("fibers", "a template kernel without template arguments")
            continue
        if fn.kind == CK.FUNCTION_DECL and "<" in e:
            res.tiers[e] = ("fibers", "a specialised template kernel")
            continue
        key = fn.hash
        fname = "__ql_fission_" + fn.spelling
        try:
            if key not in _done(res):
                k = _Kernel(ci, fn, src, main, filename, defs)
                k.analyse()
                text = k.generate(fname)
                ns = _namespaces(fn, CK)
                opened = "".join(f"namespace {n} {{ " for n in ns)
                closed = "}" * len(ns)
                code.append(f"{opened}\n{text}{closed}\n")
                _done(res)[key] = k
        except Refuse as exc:
            res.tiers[e] = ("fibers", str(exc))
            _done(res)[key] = exc
            continue
        done = _done(res)[key]
        if isinstance(done, Refuse):
            res.tiers[e] = ("fibers", str(done))
            continue
        prefix_ns = base.rsplit("::", 1)[0] + "::" if "::" in base else ""
        res.rows[e] = prefix_ns + fname + e[len(e.split("<")[0]):]
        nwarp = done.warp_calls
        what = f"{done.barriers - nwarp} barrier(s)" + (
            f" and {nwarp} warp function(s)" if nwarp else "")
        res.tiers[e] = ("fission", f"{what} split into {done.regions} thread loop(s), "
                        f"{len(done.replicated)} local(s) replicated per thread")
        if nwarp:
            res.warps.add(e)
    res.code = "".join(code)
    return res


def _done(res) -> dict:
    if not hasattr(res, "_done"):
        res._done = {}
    return res._done

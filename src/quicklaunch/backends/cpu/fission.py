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
rules after (fission_warp.py); under a warp-uniform branch (`if (wid == 0)`)
they run in thread loops guarded by the branch's per-thread condition
(fission_guards.py).

The front end is libclang (the PyPI `libclang` wheel, imported lazily): the
shim is parsed once into a precompiled header kept in the compile cache, so
a kernel parses in ~10 ms. The pass is conservative: whatever it cannot
prove (a barrier under a thread-dependent condition, in a called function
the inliner refuses (fission_inline.py inlines the module's helpers first),
in a macro, inside do/switch; warp functions under a condition that is not
block- or warp-uniform or with a partial mask; tiles fission_tiles.py
cannot lower (wider than a warp, of tiles, of structs); goto; lambdas; a
modified parameter; the address of a local that could outlive its region;
...) leaves that kernel on fibers, with the reason recorded. The generated
code is text taken from the user's source, with `#line` directives back to
the user's lines.

Files: this one (the plan of a module), clang_front.py (libclang, the
precompiled shim, cursor helpers), fission_inline.py (helpers inlined),
fission_tiles.py (cooperative-groups tiles lowered), fission_classify.py (calls, uniformity,
writes), fission_structure.py (regions, boundaries, live locals),
fission_codegen.py (the generated function), fission_warp.py (warp
functions as boundaries), fission_guards.py (warp-uniform branches).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

# _base_args, _lock, _pch and _state are the front end's, used here, by shifts.py and in tests
from .clang_front import (_base_args, _cindex, _in_main, _libclang_version, _lock,  # noqa: F401
                          _namespaces, _pch, _qualified, _Src, _state)
from .fission_classify import Classify, Refuse  # noqa: F401
from .fission_codegen import Codegen
from .fission_guards import Guards
from .fission_inline import Inliner
from .fission_remat import Remat
from .fission_strided import Strided
from .fission_structure import Structure

ENV = "QUICKLAUNCH_CPU_FISSION"   # "0": every barrier kernel runs as fibers
MAX_THREADS = 1024


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() not in ("0", "no", "off", "false")


def identity() -> str:
    """What the pass's output depends on besides the source (for cache keys)."""
    if not enabled():
        return "fission=off"
    ci = _cindex()
    if isinstance(ci, str):
        return "fission=no-libclang"
    return f"fission={_libclang_version()}-pass-32"


@dataclass
class Result:
    tiers: dict = field(default_factory=dict)     # expr -> ("fission"|"fibers", reason)
    rows: dict = field(default_factory=dict)      # expr -> the fission function's expression
    warps: set = field(default_factory=set)       # exprs whose fission uses warp functions
    warp_rows: set = field(default_factory=set)   # ... and warp-uniform branches on threadIdx.x
    code: str = ""                                 # the generated functions
    strided: bool = False                          # some loop runs threads innermost
    parse_s: float = 0.0




class _Kernel(Classify, Structure, Strided, Codegen, Remat, Guards):
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
        self.guards = 0                # warp-uniform branches (fission_guards.py)
        self.guard_stack: list = []    # while emitting: the enclosing guards' tests
        self.x_locals: set = set()     # locals holding threadIdx.x
        self.wu_locals: set = set()    # locals with a warp-uniform value
        self.strided = 0               # thread-strided loops, threads innermost
        self.allow_strided = True      # (False: a second try without them)




def plan(body: str, exprs: list[str], kernel_tiers: dict, filename: str, first_line: int,
         cc: tuple[str, ...], compiler_path: str, cache=None, strided: bool = True) -> Result:
    """Which tier-2 kernels run as fission, and their generated functions
    (`strided`: False leaves thread-strided loops in their regions)."""
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
    defs, kernels = _collect(tu, CK, main)

    def reparse(text):
        """The unit with an inlined kernel appended (fission_inline.py)."""
        with _lock:
            tu2 = idx.parse(main, args=args, unsaved_files=[(main, text)])
        return tu2, _collect(tu2, CK, main)[0]
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
                inl = Inliner(ci, fn, src, main, defs, k.reaches_tier2, reparse)
                fn2, src2, defs2 = inl.run()

                def kernel(strided=True):
                    if fn2 is fn:
                        k = _Kernel(ci, fn, src, main, filename, defs)
                    else:
                        k = _Kernel(ci, fn2, src2, main, filename, defs2)
                        k.qual = _qualified(fn, CK) or fn.spelling
                        k.inlined = inl.counter - inl.generated_calls
                        k.tile_ops = inl.tiles.count
                        k.cub_ops = inl.cub.count
                    k.allow_strided = strided
                    return k
                k = kernel(strided)
                _check_late(tu, CK, main, fn, k, body)
                try:
                    k.analyse()
                    text = k.generate(fname)
                except Refuse as why:
                    if not k.strided:
                        raise
                    # the strided loops' own regions made a local live
                    # across a boundary the pass cannot carry: without them
                    k = kernel(strided=False)
                    k.analyse()
                    text = k.generate(fname)
                    k.strided_refused = str(why)
                ns = _namespaces(fn, CK)
                opened = "".join(f"namespace {n} {{ " for n in ns)
                closed = "}" * len(ns)
                code.append(f"{opened}\n{text}{closed}\n")
                _done(res)[key] = k
        except Refuse as exc:
            # a name the inliner gave (__ql_i3_lane) as the user wrote it, a
            # lowered tile rank (fission_tiles.py) as what the user called
            exc = Refuse(re.sub(r"\b__ql_[is]\d+_(\w+)", r"\1", str(exc)).replace(
                "calls 'ql_linear_thread'", "reads a tile's rank (the thread's linear index)"))
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
                        f"{len(done.replicated) - len(getattr(done, 'promoted', ()))} local(s) "
                        f"replicated per thread")
        if done.strided:
            res.strided = True
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", {done.strided} thread-strided loop(s) run threads innermost")
        if getattr(done, "strided_refused", None):
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", thread-strided loops left in their thread loops "
                            f"({done.strided_refused})")
        if nwarp:
            res.warps.add(e)
        if getattr(done, "inlined", 0):
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", {done.inlined} call(s) inlined")
        if getattr(done, "cub_ops", 0):
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", {done.cub_ops} CUB collective(s) lowered")
        if getattr(done, "tile_ops", 0):
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", {done.tile_ops} tile operation(s) lowered")
        if done.guards:
            res.warp_rows.add(e)
            res.tiers[e] = (res.tiers[e][0], res.tiers[e][1] +
                            f", {done.guards} warp-uniform branch(es) guarded per thread")
    res.code = "".join(code)
    return res


def _check_late(tu, CK, main, fn, k, body: str):
    """The fission code is compiled after the whole module: refuses a kernel
    whose names could mean something else there (a macro the module defines
    twice or #undefs, a function overloaded after the kernel)."""
    from .clang_front import _walk
    from .fission_inline import PREFIX
    defs: dict = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)", body, re.M):
        defs.setdefault(m.group(2), []).append(m.group(1))
    unstable = {n for n, ds in defs.items() if len(ds) > 1 or "undef" in ds}
    later: dict = {}
    seen: set = set()
    end = fn.extent.end.offset

    def scan(c):
        for ch in c.get_children():
            if not _in_main(ch, main):
                continue
            if ch.kind in (CK.NAMESPACE, CK.LINKAGE_SPEC):
                scan(ch)
            elif ch.kind in (CK.FUNCTION_DECL, CK.FUNCTION_TEMPLATE) and \
                    not ch.spelling.startswith(PREFIX):
                if ch.extent.start.offset > end:
                    later.setdefault(ch.spelling, set()).add(ch.get_usr())
                else:
                    seen.add(ch.get_usr())
    scan(tu.cursor)
    later = {n for n, usrs in later.items() if usrs - seen}   # (a definition of an
    # earlier declaration is the same function)
    if not unstable and not later:
        return
    kbody = k.body
    a, b = kbody.extent.start.offset, kbody.extent.end.offset
    for m in re.finditer(r"[A-Za-z_]\w*", k.src.text(a, b)):
        if m.group(0) in unstable:
            raise Refuse(f"macro '{m.group(0)}' is defined twice or #undef'd in the module "
                         f"(the fission code is compiled after all of it)")
    for c, _ in _walk(kbody):
        if c.kind in (CK.CALL_EXPR, CK.OVERLOADED_DECL_REF, CK.DECL_REF_EXPR) and \
                c.spelling in later:
            raise Refuse(f"'{c.spelling}' is declared again after the kernel (the fission "
                         f"code, compiled after the whole module, could call another "
                         f"overload)")


def _collect(tu, CK, main):
    """(name -> the module's function definitions, qualified name -> them)."""
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
    return defs, kernels


def _done(res) -> dict:
    if not hasattr(res, "_done"):
        res._done = {}
    return res._done

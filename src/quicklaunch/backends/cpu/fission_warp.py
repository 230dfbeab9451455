"""Warp functions in region fission: shuffles and votes as region boundaries.

A warp function reached by the whole block (at a block-uniform place, as a
barrier must be) splits the kernel like a barrier does, with its operands
as the boundary's "predicate": the region before it ends with a thread loop
storing each thread's operands (the value and the lane argument of a
shuffle, the predicate of a vote) in per-thread scratch; the statement that
uses the result opens the next region, reading its lane's result from that
scratch by CUDA's rules (``ql_fiber::shuffle_lane``, the function the
fibers' shuffles use, so both tiers read the same lane by construction).

What stays on fibers, because only the fibers can report it exactly: a mask
other than the full warp's (a literal ``0xffffffff``), a width that is not a
literal, a kernel with an early ``return`` (exited lanes), a warp function
under a condition that is neither block-uniform nor warp-uniform (warp-uniform
branches: fission_guards.py), and the warp functions not
listed here. A launch whose block is not a whole number of warps runs on
fibers too (``ql_export::fission_warps``, checked per launch): a full mask
there names lanes that do not exist, which the fibers report.

Also here: which calls use a cooperative-groups tile (`reaches_tile`), the
tiles fission_tiles.py lowers to these functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# name -> ql_fiber::op of ql_fibers.h (None: __syncwarp, a plain boundary)
WARP_OPS = {"__shfl_sync": "OP_SHFL", "__shfl_up_sync": "OP_SHFL_UP",
            "__shfl_down_sync": "OP_SHFL_DOWN", "__shfl_xor_sync": "OP_SHFL_XOR",
            "__ballot_sync": "OP_BALLOT", "__any_sync": "OP_ANY", "__all_sync": "OP_ALL",
            "__syncwarp": None}
VOTES = {"OP_BALLOT", "OP_ANY", "OP_ALL"}
FULL_MASKS = {"0xffffffff", "0xffffffffu", "0xffffffffU", "0xFFFFFFFF", "0xFFFFFFFFu",
              "0xFFFFFFFFU", "0xffffffffffffffff", "~0u", "~0U", "-1", "4294967295u",
              "4294967295U", "4294967295"}
HEADER = "ql_warp.h"
CG_HEADER = "cooperative_groups.h"
COLLECTIVES = ("reduce", "inclusive_scan", "exclusive_scan")   # of tiles


@dataclass
class WarpOp:
    """One accepted warp function call."""
    name: str
    op: str | None          # ql_fiber::op, None for __syncwarp
    value: object = None    # the shuffled value's cursor (shuffles)
    arg: object = None      # srcLane / delta / laneMask, or a vote's predicate
    width: str = "32"       # literal text
    ctype: str = ""         # the shuffled value's type (the call's result type)
    uniform_arg: str = ""   # a shuffle's block-uniform lane argument, as written


def is_warp_call(c) -> bool:
    """Whether `c` (a CALL_EXPR) calls one of the device's warp functions
    (declared in its ql_warp.h; a user function of the same name is not)."""
    if c.spelling not in WARP_OPS:
        return False
    ref = c.referenced
    f = ref.location.file if ref is not None else None
    return f is not None and f.name.endswith(HEADER)


_DEFINE = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+([A-Za-z_]\w*)(\(?)([^\n]*)$", re.M)


def object_macros(text: str) -> dict[str, str]:
    """The object-like macros the module's own text defines once and never
    undefines (name -> body without spaces): how a mask is usually spelled
    (`#define FULL_MASK 0xffffffff`). Others are not looked through."""
    seen: dict[str, list] = {}
    for m in _DEFINE.finditer(text):
        seen.setdefault(m.group(2), []).append(m)
    out = {}
    for name, ms in seen.items():
        if len(ms) == 1 and ms[0].group(1) == "define" and not ms[0].group(3):
            out[name] = re.sub(r"\s+|/[*].*?[*]/|//.*$", "", ms[0].group(4))
    return out


def _resolve(s: str, macros: dict | None) -> str:
    for _ in range(4):   # a macro naming a macro
        if macros and s in macros:
            s = macros[s]
    return s[1:-1] if s.startswith("(") and s.endswith(")") else s


def _arg_texts(call, macros: dict | None) -> list[str]:
    """The call's arguments as written (its tokens split at top-level
    commas; spaces dropped; an object-like macro looked through)."""
    toks = [t.spelling for t in call.get_tokens()]
    if "(" not in toks or toks[-1] != ")":
        return []
    out, cur, depth = [], [], 0
    for s in toks[toks.index("(") + 1:-1]:
        if s in "([{":
            depth += 1
        elif s in ")]}":
            depth -= 1
        if s == "," and depth == 0:
            out.append(cur)
            cur = []
        else:
            cur.append(s)
    if cur:
        out.append(cur)
    return [_resolve("".join(a), macros) for a in out]


def classify(call, refuse, macros: dict | None = None) -> WarpOp:
    """The accepted form of a warp call, or ``refuse(reason)`` (raises);
    `macros`: object_macros() of the module, for the mask's spelling."""
    name = call.spelling
    op = WARP_OPS[name]
    texts = _arg_texts(call, macros)    # as written: defaults absent, macros kept
    args = list(call.get_arguments())[:len(texts)]
    if op is None:
        if texts and texts[0] not in FULL_MASKS:
            refuse(f"'{name}' with a mask other than the full warp's")
        return WarpOp(name, None)
    if not texts or texts[0] not in FULL_MASKS:
        refuse(f"'{name}' with a mask other than a literal full warp (0xffffffff)")
    if op in VOTES:
        if len(args) != 2:
            refuse(f"'{name}' with an unexpected argument list")
        return WarpOp(name, op, arg=args[1])
    if len(args) not in (3, 4):
        refuse(f"'{name}' with an unexpected argument list")
    width = "32"
    if len(args) == 4:
        width = texts[3]
        if not width.isdigit():
            refuse(f"'{name}' with a width that is not a literal")
    ctype = call.type.spelling
    if any(w in ctype for w in ("type-parameter", "dependent", "(anonymous", "lambda",
                                "auto")) or not ctype:
        refuse(f"'{name}' of a type the pass cannot spell ({ctype or '?'})")
    return WarpOp(name, op, value=args[1], arg=args[2], width=width, ctype=ctype)


def scratch(w: WarpOp, bid: int) -> list[tuple[str, str]]:
    """(type, name) of the per-thread scratch arrays one warp call needs."""
    if w.op is None:
        return []
    if w.op in VOTES:
        return [("int", f"__ql_wa{bid}")]
    if w.uniform_arg:
        return [(w.ctype, f"__ql_wv{bid}")]
    return [(w.ctype, f"__ql_wv{bid}"), ("int", f"__ql_wa{bid}")]


def store(w: WarpOp, bid: int, value: str, arg: str) -> str:
    """The boundary's thread-loop body: this thread's operands."""
    if w.op in VOTES:
        return f"__ql_wa{bid}[__ql_t] = ((int)({arg}) != 0);"   # an int parameter, as CUDA's
    if w.uniform_arg:
        return f"__ql_wv{bid}[__ql_t] = ({value});"
    return f"__ql_wv{bid}[__ql_t] = ({value}); __ql_wa{bid}[__ql_t] = (int)({arg});"


def result(w: WarpOp, bid: int) -> str:
    """The expression that replaces the call in the statement using it."""
    if w.op in VOTES:
        cast = "(unsigned)" if w.op == "OP_BALLOT" else "(int)"
        return f"({cast}::ql_fiber::fission_vote(::ql_fiber::{w.op}, __ql_wa{bid}, __ql_t))"
    if w.uniform_arg:   # one lane argument for the block: no per-thread copy
        return (f"(::ql_fiber::fission_shuffle_u(::ql_fiber::{w.op}, __ql_wv{bid}, "
                f"(unsigned)(int)({w.uniform_arg}), __ql_t, {w.width}))")
    return (f"(::ql_fiber::fission_shuffle(::ql_fiber::{w.op}, __ql_wv{bid}, __ql_wa{bid}, "
            f"__ql_t, {w.width}))")


def in_cg(c) -> bool:
    """Whether call or reference `c` names something of cooperative_groups.h."""
    r = c.referenced
    f = r.location.file if r is not None else None
    return f is not None and f.name.endswith(CG_HEADER)


def reaches_tile(x) -> bool:
    """Whether cursor `x` uses a tile (for the inliner: a helper taking or
    using a tile is inlined, so its tile becomes the kernel's)."""
    k = x.kind.name
    if k in ("PARM_DECL", "VAR_DECL") and "thread_block_tile" in x.type.get_canonical().spelling:
        return True
    if k == "CALL_EXPR" and in_cg(x):
        r = x.referenced
        parent = r.semantic_parent.spelling if r.semantic_parent is not None else ""
        return parent == "thread_block_tile" or x.spelling in COLLECTIVES
    return False

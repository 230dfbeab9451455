"""Builds a CPU kernel module: the user's source, the CUDA shim and a
generated kernel table, compiled by the host C++ compiler, cached on disk.

On a cache miss the source is first preprocessed (scan.py) to find the
kernels the compiler will see; the module's kernel list and parameter names
are stored beside the shared object, so a cache hit neither preprocesses nor
parses.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import warnings
import weakref
from pathlib import Path

from ... import cache as cache_mod
from ...errors import CacheError, CompileError, CompileWarning
from ...cache_lock import miss_lock
from ...host_code import device_part
from ...signature import (KernelDecl, SignatureError, kernel_expressions, parse_kernels,
                          strip_comments)
from ... import compile_hints, cuda_version
from . import fission, loader, pch, scan, shifts, tiers, toolchain
from .instantiations import rewrite_explicit_instantiations

FORMAT = "cpu-module-14"

STACKLEVEL = 5        # device_part -> build -> device.compile -> module.compile -> user
DEFAULT_ARCH = 900     # __CUDA_ARCH__ when no -arch option is given
MIN_ARCH = 300         # the oldest architecture whose device pass the shim stands in for
_ARCH_OPTION = re.compile(r"^(?:-arch|--gpu-architecture)(?:=|$)")
_ARCH_VALUE = re.compile(r"^(?:sm|compute)_(\d+)[af]?$")


def split_arch(options: tuple[str, ...], source: str = "") -> tuple[int, tuple[str, ...]]:
    """(__CUDA_ARCH__, the options without the NVRTC-style architecture
    options). `-arch=sm_80`, `--gpu-architecture=sm_80`, `-arch compute_80`
    choose the device pass the CPU compiles as; they never reach g++."""
    arch, rest, i = DEFAULT_ARCH, [], 0
    options = tuple(options)
    while i < len(options):
        opt = options[i]
        if not _ARCH_OPTION.match(opt):
            rest.append(opt)
            i += 1
            continue
        if "=" in opt:
            value, shown = opt.split("=", 1)[1], opt
            i += 1
        else:
            value = options[i + 1] if i + 1 < len(options) else ""
            shown = f"{opt} {value}".strip()
            i += 2
        m = _ARCH_VALUE.match(value)
        if not m:
            raise CompileError(f"option {shown!r}: expected an architecture like sm_80 or "
                               f"compute_80", source=source, options=options)
        arch = int(m.group(1)) * 10
        if arch < MIN_ARCH:
            raise CompileError(f"option {shown!r}: the CPU device compiles as sm_{MIN_ARCH // 10}"
                               f" or newer", source=source, options=options)
    return arch, tuple(rest)
# Names the scan can find that the CPU device refuses, with a CompileError.
UNSUPPORTED = frozenset({"coalesced_threads"})
_lock = threading.Lock()
# cache key -> loaded library, while anything uses it: one dlopen per module
# at a time, and a module nothing references any more is unloaded.
_loaded: "weakref.WeakValueDictionary[str, loader.Library]" = weakref.WeakValueDictionary()
_cache = cache_mod.CompileCache()


class Built:
    """A loaded module: its library, kernel table rows and metadata."""

    def __init__(self, library, kernels: list, meta: dict, path: str):
        self.library = library       # loader.Library: what keeps the code loaded
        self.path = path
        self.kernels = kernels       # [loader.LoadedKernel]
        self.meta = meta             # {"params": {expr: [[name, ctype], ...]},
        #                               "lines": {expr: line}, "templates": [...],
        #                               "tiers": {expr: 1 or 2}}
        library.kernels, library.meta, library.path = kernels, meta, path

    @classmethod
    def of(cls, library) -> "Built":
        return cls(library, library.kernels, library.meta, library.path)


_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?P<type>[^;\[\]{}()]*?(?:\([^()]*\)[^;\[\]{}()]*?)*)"
    r"\s*\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;")
_ALIGN = re.compile(r"\b(__align__|alignas|__attribute__)\s*\((?:[^()]|\([^()]*\))*\)")


def _in_function(code: str, pos: int) -> bool:
    """Whether `pos` lies in a function body (the innermost open brace is
    not a namespace's or an extern "C" block's)."""
    depth = 0
    for i in range(pos - 1, -1, -1):
        c = code[i]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                before = code[max(0, i - 200):i].rstrip()
                return not re.search(r'(\bnamespace(\s+[\w:]+)?|\bextern\s*"C(\+\+)?")$',
                                     before)
            depth -= 1
    return False


def rewrite_extern_shared(source: str, filename: str, first_line: int = 1) -> str:
    """`extern __shared__ T name[];` points into this block's dynamic shared
    memory arena, so user code compiles unmodified: in a function it becomes
    a local `T *const name`, at namespace scope a macro (the #line after it
    keeps the rest of the line at its own number)."""
    code = strip_comments(source)  # same offsets; comments are left alone

    def repl(m: re.Match) -> str:
        ctype = " ".join(_ALIGN.sub(" ", m.group("type")).split()) or "char"
        name = m.group("name")
        if _in_function(code, m.start()):
            return f"{ctype} *const {name} = reinterpret_cast<{ctype} *>(__ql_dyn_shared);"
        line = source.count("\n", 0, m.start()) + first_line
        return (f"\n#define {name} (reinterpret_cast<{ctype} *>(__ql_dyn_shared))\n"
                f'#line {line} "{filename}"\n')

    out, last = [], 0
    for m in _EXTERN_SHARED.finditer(code):
        out.append(source[last:m.start()])
        out.append(repl(m))
        last = m.end()
    out.append(source[last:])
    return "".join(out)




def user_body(source: str, filename: str, first_line: int = 1) -> str:
    """The user's source as the translation unit holds it."""
    return rewrite_extern_shared(rewrite_explicit_instantiations(source), filename, first_line)


def translation_unit(source: str, exprs: list[str], filename: str, first_line: int = 1,
                     kernel_tiers: dict[str, int] | None = None,
                     fission_code: str = "", fission_rows: dict[str, str] | None = None,
                     fission_warps: frozenset = frozenset(),
                     fission_warp_rows: frozenset = frozenset()) -> str:
    """The C++ the host compiler sees: shim, the user's source with line
    numbers of its own, then one table row per kernel expression (with the
    tier it runs in; 1 when not given). Kernels in `fission_rows` run their
    generated per-block function (fission.py; `fission_code`, after the
    user's source, with #line directives back to the user's lines); those in
    `fission_warps` use warp functions and run blocks that are not whole warps
    on fibers."""
    kernel_tiers = kernel_tiers or {}
    fission_rows = fission_rows or {}
    entries, rows = [], []
    for i, e in enumerate(exprs):
        g = fission_rows.get(e)
        if g is None:
            rows.append(f'QL_KERNEL("{e}", {min(kernel_tiers.get(e, 1), 2)}, &{e})\n')
        else:
            entries.append(
                f"typedef ::ql_export::fission_warps<decltype(&{g}), &{g}, decltype(&{e}), "
                f"&{e}, {'true' if e in fission_warp_rows else 'false'}> "
                f"__ql_fission_entry_{i};\n" if e in fission_warps else
                f"typedef ::ql_export::fission<decltype(&{g}), &{g}> __ql_fission_entry_{i};\n")
            rows.append(f'QL_KERNEL_FISSION("{e}", __ql_fission_entry_{i}, &{e})\n')
    body = user_body(source, filename, first_line)
    generated = (f"{fission_code}\n#line 1 \"<quicklaunch kernel table>\"\n"
                 if fission_code else "")
    return (f'#include "cuda_shim.h"\n#line {first_line} "{filename}"\n'
            f'{body}\n'
            f'#line 1 "<quicklaunch kernel table>"\n#include "ql_cpu_export.h"\n'
            f"{generated}{''.join(entries)}"
            f"QL_MODULE_BEGIN\n{''.join(rows)}QL_MODULE_END({len(exprs)})\n")


def _params_of(decls: list[KernelDecl], spelled: dict[str, KernelDecl],
               expr: str) -> list[list[str]] | None:
    """[name, C type] per parameter: as spelled in the source when the raw
    text could be read ("REAL *"), else as the preprocessor left it."""
    base = expr.split("<")[0].strip()
    for d in decls:
        if d.name == base:
            raw = spelled.get(base)
            use = raw if raw is not None and len(raw.params) == len(d.params) else d
            return [[p.name, p.ctype] for p in use.params]
    return None


def _spelled(source: str) -> dict[str, KernelDecl]:
    """Kernels as written (macros unexpanded), for nicer C type text; the
    preprocessed scan decides which kernels exist, so a source this cannot
    read is no error."""
    try:
        return {d.name: d for d in parse_kernels(source)}
    except SignatureError:
        return {}


def build(source: str, options: tuple[str, ...], name_expressions: tuple[str, ...],
          debug: bool, origin: str = "", filename: str = "kernel.cu",
          first_line: int = 1) -> Built:
    """Compiles (or finds in the cache) and loads a module. `filename` and
    `first_line` are where the source's line 1 is reported to be (debug
    builds point them at the Python file holding the source string)."""
    # Host code (main, launch wrappers, host prototypes) is dropped, keeping
    # lines, with one CompileWarning, on a cache hit too (as on the GPUs).
    source = device_part(source, stacklevel=STACKLEVEL)
    for e in name_expressions:
        if '"' in e or "\\" in e or "\n" in e:
            raise CompileError(f"invalid name expression {e!r}", source=source,
                               options=options)
    arch, rest = split_arch(options, source)
    # what the host compiler is given (CUDART_VERSION & co.: cuda_version.py)
    cc = (f"-D__CUDA_ARCH__={arch}", *cuda_version.define_options(rest), *rest)
    compiler = toolchain.find_compiler()
    command = toolchain.build_command(compiler, Path("module.cpp"), Path("module.so"),
                                      cc, debug)
    key = cache_mod.cache_key(FORMAT, source, "\0".join(name_expressions), filename,
                              str(first_line),
                              "\0".join(command), compiler.identity,
                              toolchain.headers_digest_material(),
                              fission.identity() if not debug else "debug",
                              shifts.identity())
    with _lock:
        library = _loaded.get(key)
        built = Built.of(library) if library is not None else _load_cached(key)
        if built is None:
            with miss_lock(_cache, "cpu", key):   # one compile per node (cache_lock.py)
                built = _load_cached(key)   # a leader may have stored it meanwhile
                if built is None:
                    try:
                        built = _build(key, source, options, name_expressions, debug,
                                       origin, filename, first_line, cc)
                    except CompileError as exc:   # what it means (compile_hints.py)
                        better = compile_hints.explain(exc, source, "the CPU device")
                        if better is exc:
                            raise
                        raise better from None
        _loaded[key] = built.library
        return built


def _meta_matches(meta, kernels) -> bool:
    """Whether an entry's .json describes the .so loaded with it: the same
    kernels, each with as many parameters as the table has."""
    if not isinstance(meta, dict):
        return False
    params, lines, tiers_, templates = (meta.get(k) for k in
                                        ("params", "lines", "tiers", "templates"))
    if not (isinstance(params, dict) and isinstance(lines, dict) and isinstance(tiers_, dict)
            and isinstance(templates, list)):
        return False
    if set(params) != {lk.expr for lk in kernels} or len(params) != len(kernels):
        return False
    return all(isinstance(params[lk.expr], list) and len(params[lk.expr]) == len(lk.params)
               and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                       for p in params[lk.expr])
               for lk in kernels)


def _load_cached(key: str) -> Built | None:
    """The cached module, loaded through the descriptor the cache checked;
    None (a miss, rebuilt and rewritten by the caller) when it is absent,
    cannot be loaded, or its .json does not describe its .so."""
    raw = _cache.read("cpu", key, ".json")
    if raw is None:
        return None
    got = _cache.open_entry("cpu", key, ".so")
    if got is None:
        return None
    fd, data = got
    shown = str(_cache.path("cpu", key, ".so"))
    try:
        meta = json.loads(raw)
        library, kernels = loader.load_fd(fd, shown, data)
    except (OSError, ValueError):
        return None   # unloadable entry: a miss, rebuilt by the caller
    if not _meta_matches(meta, kernels):
        return None   # the library is unloaded when `library` goes
    return Built(library, kernels, meta, shown)


def _store(key: str, data: bytes, meta: dict):
    """Writes the entry; (fd, shown) of the stored .so to load, or None
    when the cache cannot be written (then a warning says what to fix)."""
    try:
        _cache.put("cpu", key, ".so", data)
        _cache.put("cpu", key, ".json", json.dumps(meta).encode())
        got = _cache.open_entry("cpu", key, ".so")
        if got is not None and got[1] == data:
            return got[0], str(_cache.path("cpu", key, ".so"))
        if got is not None:
            os.close(got[0])   # rewritten meanwhile by another process: load ours
        return None
    except CacheError:
        raise
    except OSError as exc:
        where = getattr(exc, "filename", None) or _cache.root
        warnings.warn(f"the quicklaunch compile cache cannot be written ({exc.strerror or exc}: "
                      f"{where}); this module was compiled without caching and will be "
                      f"compiled again by the next process. Fix: chmod u+w the directory, "
                      f"or set QUICKLAUNCH_CACHE_DIR to a writable private directory",
                      CompileWarning, stacklevel=STACKLEVEL + 1)
        return None


def _build(key, source, options, name_expressions, debug, origin, filename,
           first_line, cc) -> Built:
    """`options` are the user's (shown in errors), `cc` the host compiler's."""
    decls, features, text = scan.scan(source, cc, "kernel.cu", origin, shown=options)
    unsupported = sorted(set(features) & UNSUPPORTED)
    if unsupported:
        raise CompileError(
            f"the module uses {', '.join(unsupported)}, which the CPU device does not "
            f"support yet (use a tiled_partition or __activemask() and the warp functions)"
            f"{origin}",
            source=source, options=options)
    # The module has fibers when any of its code uses a tier-2 name; each
    # kernel runs as fibers only when what it reaches does (tiers.py).
    fibers = bool(set(features) - {"extern __shared__"})
    for d in decls:
        refs = [f"'{p.name}' ({p.ctype})" for p in d.params if p.ctype.rstrip().endswith("&")]
        if refs:
            raise CompileError(f"kernel '{d.name}': parameter {', '.join(refs)} is a reference; "
                               f"a kernel takes values and pointers (pass a pointer){origin}",
                               source=source, options=options)
    exprs = kernel_expressions(decls, name_expressions)
    spelled = _spelled(source)
    lines = {d.name: d.line for d in decls}
    meta = {"params": {e: _params_of(decls, spelled, e) for e in exprs},
            "lines": {e: lines.get(e.split("<")[0].strip(), 1) for e in exprs},
            "templates": sorted({d.name for d in decls if d.template is not None}),
            "tiers": {}}
    if fibers:
        meta["tiers"] = tiers.kernel_tiers(text, exprs)
    # No FP contraction where a kernel may run in either of two tiers: GCC's
    # choice of which a*b+c become FMAs depends on the code's shape, and the
    # fission and fiber versions of a kernel must give the same bits.
    defines = ("-DQL_TIER2=1", "-ffp-contract=off") if fibers else ()
    # (texture fetches stop a thread given a handle that is no texture: ql_texture.h)
    if re.search(r"\b(assert|__assert_fail|ql_assert_fail|__trap|tex1Dfetch|tex[123]D(?:Lod)?)\b",
                 strip_comments(text)):
        defines += ("-DQL_ABORTS=1",)  # tier 1 then sets up a way to stop a thread
    logs: list[str] = []
    # Shifts clamped as on the GPU (shifts.py), before fission reads the source;
    # `source` itself stays the user's, for errors.
    body = _clamped_shifts(source, cc)
    try:
        data = _compile_body(body, key, source, options, exprs, meta, debug, origin,
                             filename, first_line, cc, defines, logs)
    except CompileError as exc:
        if body == source or shifts.WRAP not in str(exc):
            raise
        # a gap in the shift rewrite, not the user's error: built as written
        data = _compile_body(source, key, source, options, exprs, meta, debug, origin,
                             filename, first_line, cc, defines, logs)
    meta["log"] = logs[-1] if logs else ""
    stored = _store(key, data, meta)
    if stored is None:   # uncached: load the bytes from memory
        stored = loader.memfd_of(data, f"quicklaunch-{key[:16]}.so"), f"<memfd {key[:16]}.so>"
    fd, shown = stored
    try:
        library, kernels = loader.load_fd(fd, shown, data)
    except (OSError, ValueError) as exc:
        raise CompileError(f"the compiled module could not be loaded: {exc}",
                           source=source, options=options) from None
    return Built(library, kernels, meta, shown)


def _clamped_shifts(source: str, cc) -> str:
    """The source with its shifts clamped (shifts.py); as written when the
    pass cannot run (it must never break a build)."""
    try:
        return shifts.rewrite(source, cc, toolchain.find_compiler().path, _cache).text
    except Exception:
        return source


def _compile_body(body, key, source, options, exprs, meta, debug, origin, filename,
                  first_line, cc, defines, logs) -> bytes:
    """Compiles the module with `body` as the user's code (fission planned
    for it): the shared object's bytes."""
    first = None
    for strided in (True, False):
        plan = _fission_plan(body, exprs, meta, filename, first_line, cc, debug, strided)
        tu = translation_unit(body, exprs, filename, first_line, meta["tiers"], plan.code,
                              plan.rows, frozenset(plan.warps), frozenset(plan.warp_rows))
        try:
            return _compile(tu, cc, debug, source, origin, filename, key, defines, first_line,
                            shown=options, logs=logs)
        except CompileError as exc:
            if not plan.rows:
                raise
            first = first or exc
            for e in plan.rows:   # planned again below, or on fibers
                meta["tiers"][e] = 2
            if not plan.strided:   # (else a gap in the strided loops' code: without them)
                break
    # The generated code did not compile (a gap in the pass): the same
    # module with every barrier kernel on fibers; its errors are the user's.
    tu = translation_unit(body, exprs, filename, first_line, meta["tiers"])
    data = _compile(tu, cc, debug, source, origin, filename, key, defines, first_line,
                    shown=options, logs=logs)
    line = next((ln for ln in str(first).splitlines() if "error" in ln), "")
    for e in plan.rows:
        meta["tier"][e] = ["fibers", f"the fission code did not compile: {line.strip()}"]
    return data


_LOOP_REASON = "no barrier, warp function or cooperative group reached: a loop over the " \
               "block's threads"


def _fission_plan(source, exprs, meta, filename, first_line, cc, debug, strided=True):
    """Runs the fission pass over the module's tier-2 kernels; records each
    kernel's tier and reason in meta["tier"] ({expr: [name, reason]})."""
    tiers_ = meta["tiers"]
    meta["tier"] = {e: ["loop", _LOOP_REASON] for e in exprs if tiers_.get(e, 1) == 1}
    wanted = [e for e in exprs if tiers_.get(e) == 2]
    plan = fission.Result()
    if not wanted:
        return plan
    if debug:
        why = ("debug build: every CUDA thread keeps its own stack and frame for gdb "
               "(fission would interleave the threads of a block)")
    elif not fission.enabled():
        why = f"{fission.ENV}=0"
    else:
        why = None
        try:
            plan = fission.plan(user_body(source, filename, first_line), exprs, tiers_,
                                filename, first_line, cc, toolchain.find_compiler().path,
                                _cache, strided=strided)
        except Exception as exc:   # the pass must never break a build
            plan = fission.Result()
            why = f"the fission pass failed: {type(exc).__name__}: {exc}"
    for e in wanted:
        name, reason = plan.tiers.get(e, ("fibers", why or "not analysed"))
        meta["tier"][e] = [name, reason]
        if name == "fission":
            tiers_[e] = 3
    return plan


_DIAGNOSTIC = re.compile(r"^(.+?):(\d+):(?:(\d+):)? (warning|error|note)\b")


def _user_diagnostics(log: str, filename: str) -> str:
    """The diagnostics of a successful compile that point into the user's
    source (``filename``), each with its context lines; those in quicklaunch's
    generated code and headers are left out."""
    kept, keep = [], False
    for line in log.splitlines():
        m = _DIAGNOSTIC.match(line)
        if m:
            keep = m.group(1) == filename
        elif not line.startswith(" "):
            keep = False   # "In function ...", "At global scope:" and the like
        if keep:
            kept.append(line)
    return "\n".join(kept)


def _compile(tu: str, options, debug, source, origin, filename, key, defines=(),
             first_line=1, shown=None, logs=None) -> bytes:
    compiler = toolchain.find_compiler()
    with tempfile.TemporaryDirectory(prefix="quicklaunch-") as tmp:
        # Fixed names inside a private directory keep the output identical
        # across processes compiling the same module.
        src, out = Path(tmp, f"{key[:16]}.cpp"), Path(tmp, f"{key[:16]}.so")
        src.write_text(tu)
        command = toolchain.build_command(compiler, src, out, (*defines, *options), debug)
        if logs is not None and "-w" not in options:   # warnings on, unless the user's -w
            command = [a for a in command if a != "-w"]   # (kept: module.compile_log)
        header = pch.prepare(_cache, compiler, command, Path(tmp))
        if header:   # ahead of the shim's own directory
            at = command.index(str(toolchain.INCLUDE_DIR)) - 1
            plain, command = command, command[:at] + header + command[at:]
        status, log = toolchain.run_compiler(command, Path(tmp))
        if header and status != 0 and ("PCH" in log or ".gch" in log):   # unreadable to GCC
            pch.forget(_cache, compiler, plain)
            command = plain
            status, log = toolchain.run_compiler(command, Path(tmp))
        if status != 0 or not out.exists():
            raise toolchain.compile_error("kernel source failed to compile for the CPU "
                                          "device", log, source,
                                          options if shown is None else shown, command, origin,
                                          filename, first_line)
        if logs is not None:   # the compiler's warnings: module.compile_log
            logs.append(_user_diagnostics(log, filename))
        return out.read_bytes()

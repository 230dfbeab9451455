"""The CPU device's part of a bundle (quicklaunch.bundles): its target
("cpu", built for this host's CPU with -march=native, or "cpu:<march>",
e.g. "cpu:x86-64-v2", for CPUs of that level), the entry (the compiled
module's shared object, which *is* native code, with the kernel table's
metadata and what it needs of the host: machine, OS, C library, kernel
table ABI, CPU features) and loading it with no compiler.
"""
from __future__ import annotations

import platform
import re
import weakref

__all__ = ["claims", "build_entry", "compiler_line", "rank", "describe", "hint", "load_entry"]

DEVICE = "cpu"
_TARGET = re.compile(r"^cpu(?::([A-Za-z0-9_.+-]+))?$")
# /proc/cpuinfo flags each x86-64 micro-architecture level needs (the psABI's
# levels; LZCNT is the "abm" flag).
_X86_LEVELS = {
    "x86-64": (),
    "x86-64-v2": ("cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"),
}
_X86_LEVELS["x86-64-v3"] = _X86_LEVELS["x86-64-v2"] + (
    "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")
_X86_LEVELS["x86-64-v4"] = _X86_LEVELS["x86-64-v3"] + (
    "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


def claims(target: str) -> bool:
    return bool(_TARGET.match(target))


def _machine() -> str:
    m = platform.machine().lower()
    return _MACHINES.get(m, m)


def _cpu_flags() -> list[str]:
    """This host's CPU feature flags as the kernel lists them (x86 "flags",
    arm "Features")."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return sorted(set(value.split()))
    except OSError:
        pass
    return []


def _host() -> dict:
    from . import loader
    libc = platform.libc_ver()
    return {"machine": _machine(), "system": platform.system(),
            "libc": f"{libc[0]} {libc[1]}".strip(), "table_abi": loader.ABI_VERSION}


def compiler_line() -> str:
    from . import toolchain
    c = toolchain.find_compiler()
    return f"{c.path}: {c.version}"


def build_entry(target: str, source: str, options: tuple, exprs: tuple) -> tuple[dict, bytes]:
    """Compiles ``source`` for the CPU (through the compile cache) and returns
    (entry fields, the shared object's bytes)."""
    from ... import kinds
    from . import compiler
    march = _TARGET.match(target).group(1)
    opts = tuple(options) + ((f"-march={march}",) if march else ())
    built = compiler.build(source, opts, exprs, False, f" (bundle target {target})")
    meta = {k: built.meta[k] for k in ("params", "lines", "templates", "tiers", "tier")
            if k in built.meta}
    entry = {"kind": "shared-object", "arch": march or "native", **_host(),
             "cpu_flags": _cpu_flags() if not march else [],
             "log": str(built.meta.get("log") or ""), "cpu_meta": meta,
             "compiler": compiler_line(),
             "kernels": [{"name": lk.expr, "symbol": lk.symbol or lk.expr,
                          "line": int(built.meta.get("lines", {}).get(lk.expr, 1)),
                          "params": [[n, c, s, a, kinds.NAMES[k]] for (n, c), (s, a, k)
                                     in zip(built.meta["params"][lk.expr], lk.params)],
                          "attributes": {"tier": (built.meta.get("tier", {}).get(lk.expr)
                                                  or ["loop", ""])[0],
                                         "tier_reason": (built.meta.get("tier", {})
                                                         .get(lk.expr) or ["", ""])[1]}}
                         for lk in built.kernels]}
    return entry, built.library.image()


def describe(backend) -> str:
    host = _host()
    return f"{backend.kind} ({host['machine']}, {host['system']}, {host['libc']})"


def hint(backend) -> str:
    return f"add target cpu, or a portable cpu:x86-64-v2, built on a {_machine()} host"


def rank(entry: dict, backend):
    """(score, None) when this host can run the entry, else (None, why)."""
    host = _host()
    for key in ("machine", "system", "table_abi"):
        if entry.get(key) != host[key]:
            return None, (f"built for {key} {entry.get(key)!r}, this host is "
                          f"{host[key]!r}")
    arch = entry.get("arch")
    have = set(_cpu_flags())
    if arch == "native":
        need = set(entry.get("cpu_flags") or ())
        why = "built with -march=native on a CPU that has"
    else:
        need = set(_X86_LEVELS.get(arch, ())) if host["machine"] == "x86_64" else set()
        why = f"built for -march={arch}, which needs"
    missing = sorted(need - have) if have else []
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more"
                                          if len(missing) > 8 else "")
        return None, (f"{why} {shown}, which this CPU lacks (build a portable entry, e.g. "
                      f"target cpu:x86-64-v2)")
    # native code for exactly this CPU first, then the highest level
    score = 100 if arch == "native" else len(need)
    return score, None


def _meta_matches(meta, kernels) -> bool:
    """Whether the entry's metadata describes the loaded kernel table: the same
    kernels, each with as many [name, C type] parameters as the table has."""
    if not isinstance(meta, dict) or not isinstance(meta.get("params"), dict):
        return False
    params = meta["params"]
    return set(params) == {lk.expr for lk in kernels} and all(
        isinstance(params[lk.expr], list) and len(params[lk.expr]) == len(lk.params)
        for lk in kernels)


_loaded: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def load_entry(backend, entry: dict, payload: bytes, shown: str):
    """(library, {kernel name: (handle, kind codes)}, image extra) of the
    entry's shared object, loaded from memory (one load per distinct object
    while anything uses it); ValueError when it does not load or does not
    match the manifest."""
    from . import loader   # not compiler.py: loading needs none of the compiler's machinery
    library = _loaded.get(entry["sha256"])
    if library is None:
        fd = loader.memfd_of(payload, f"quicklaunch-bundle-{entry['sha256'][:16]}.so")
        try:
            library, kernels = loader.load_fd(fd, shown, payload)
        except (OSError, ValueError) as exc:
            raise ValueError(f"the shared object cannot be loaded: {exc}") from None
        meta = entry.get("cpu_meta")
        if not _meta_matches(meta, kernels):
            raise ValueError("the shared object's kernel table does not match the manifest's "
                             "kernels")
        # what compiler.Built keeps on a library: globals and reloads read it
        library.kernels, library.meta, library.path = kernels, meta, shown
        _loaded[entry["sha256"]] = library
    rows = {lk.expr: lk for lk in library.kernels}
    handles = {}
    for k in entry["kernels"]:
        lk = rows.get(k["name"])
        got = [list(p) for p in lk.params] if lk is not None else None
        want = [[p[2], p[3], None] for p in k["params"]]
        if got is None or [g[:2] for g in got] != [w[:2] for w in want]:
            raise ValueError(f"kernel {k['name']}: the shared object's parameters {got} are "
                             f"not the manifest's")
        handles[k["name"]] = (lk.handle, [g[2] for g in got])
    return library, handles, {"path": library.path}

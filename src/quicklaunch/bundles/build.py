"""``ql.build`` and ``quicklaunch build``: one source compiled for a list of
targets into one bundle (manifest.py). Which device kind a target belongs
to, and how its entry is compiled, is that device's (backends/<kind>/
bundle.py: ``claims``, ``build_entry``); this module knows no device."""
from __future__ import annotations

import importlib
import os

from .manifest import ABI, FORMAT, BundleError, digest, write

__all__ = ["build", "device_module", "parse_targets"]

SOURCE_FILE = "source.cu"


def device_module(kind: str):
    """backends/<kind>/bundle.py of a registry row, or None when it has none."""
    from ..backends import entry
    row = entry(kind)
    if row is None:
        return None
    package = row[1].module.rpartition(".")[0]
    try:
        return importlib.import_module(f"{package}.bundle")
    except ModuleNotFoundError:
        return None


def _modules():
    from ..backends import REGISTRY
    return [(row.kind, m) for row in REGISTRY if (m := device_module(row.kind)) is not None]


def parse_targets(targets) -> list[tuple[str, str]]:
    """[(target, device kind)] from "sm_80,sm_90,compute_90,gfx90a,cpu" or a list."""
    if isinstance(targets, str):
        targets = targets.split(",")
    out, seen = [], set()
    mods = _modules()
    for t in targets:
        if not isinstance(t, str):
            raise TypeError(f"bundle targets are strings such as 'sm_90', got {t!r}")
        t = t.strip()
        if not t or t in seen:
            continue
        kind = next((k for k, m in mods if m.claims(t)), None)
        if kind is None:
            raise ValueError(f"unknown bundle target {t!r}: expected sm_XX (a cubin), "
                             f"compute_XX (PTX for the driver to JIT), gfxNNN (a HIP code "
                             f"object), cpu (this host's CPU) or cpu:<march> (e.g. "
                             f"cpu:x86-64-v2)")
        seen.add(t)
        out.append((t, kind))
    if not out:
        raise ValueError("ql.build needs at least one target, e.g. targets=['sm_90', 'cpu']")
    return out


def _version() -> str:
    """quicklaunch's version, for the manifest (from the installed metadata:
    importing the package from here would be an import cycle)."""
    from importlib import metadata
    try:
        return metadata.version("quicklaunch")
    except metadata.PackageNotFoundError:
        return "unknown"


def _file_name(target: str, kind: str, entry_kind: str) -> str:
    suffix = {"cubin": "cubin", "ptx": "ptx", "hsaco": "hsaco",
              "shared-object": "so"}.get(entry_kind, "bin")
    return f"{kind}/{target.replace(':', '-')}.{suffix}"


def build(source: str, targets, out=None, options=(), name_expressions=(),
          include_source: bool = True) -> str | bytes:
    """Compiles CUDA C++ ``source`` for every target in ``targets`` and writes
    one bundle: a zip file at ``out`` (a folder when ``out`` ends with "/" or
    is one), or returns the bundle's bytes when ``out`` is None.

    Targets: ``sm_XX`` (cubin), ``compute_XX`` (PTX, JIT-compiled by the
    driver on that architecture or newer), ``gfxNNN`` (HIP code object),
    ``cpu`` (the host's CPU, -march=native) or ``cpu:<march>`` (portable:
    ``cpu:x86-64-v2``). ``options`` and ``name_expressions`` are given to
    every target's compiler, as ``ql.compile`` takes them. With
    ``include_source`` the source travels in the bundle (kernel default
    arguments and messages use it); its hash is in the manifest either way.
    Compile errors are ``ql.CompileError`` naming the target."""
    from ..errors import CompileError
    from ..module import _check_options, _templates_of
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of CUDA C++, got {type(source).__name__}")
    options = _check_options(options)
    if isinstance(name_expressions, str):
        name_expressions = (name_expressions,)
    exprs = tuple(" ".join(e.split()) for e in name_expressions)
    files: dict[str, bytes] = {}
    entries, compilers = [], {}
    for target, kind in parse_targets(targets):
        mod = device_module(kind)
        try:
            entry, payload = mod.build_entry(target, source, options, exprs)
        except CompileError as exc:
            raise CompileError(f"bundle target {target}: {exc.message}", exc.log, exc.source,
                               exc.options, exc.command) from None
        if payload is None:
            raise BundleError(f"bundle target {target}: the compiler produced no binary")
        name = _file_name(target, kind, entry["kind"])
        files[name] = payload
        compilers.setdefault(kind, entry.get("compiler", ""))
        entries.append({**entry, "target": target, "device": kind, "file": name,
                        "size": len(payload), "sha256": digest(payload)})
    encoded = source.encode()
    manifest = {"format": FORMAT, "abi": ABI, "quicklaunch": _version(),
                "source_sha256": digest(encoded),
                "source": SOURCE_FILE if include_source else None,
                "options": list(options), "name_expressions": list(exprs),
                "templates": sorted(_templates_of(source)), "compilers": compilers,
                "entries": entries}
    if include_source:
        files[SOURCE_FILE] = encoded
    if out is None:
        import tempfile
        with tempfile.TemporaryDirectory(prefix="quicklaunch-bundle-") as tmp:
            path = write(os.path.join(tmp, "bundle.qlb"), manifest, files)
            with open(path, "rb") as f:
                return f.read()
    return write(out, manifest, files)

"""The CUDA device's part of a bundle (quicklaunch.bundles): targets
"sm_XX" (a cubin: SASS for that architecture) and "compute_XX" (PTX, which
the driver JIT-compiles for any GPU of that architecture or newer), built
with NVRTC; the choice at load: the exact SASS, else SASS of the same major
architecture and a lower minor (binary compatible), else the newest PTX the
GPU can run; loading through cuModuleLoadData."""
from __future__ import annotations

import re

__all__ = ["claims", "build_entry", "compiler_line", "rank", "describe", "hint", "load_entry"]

DEVICE = "cuda"
_TARGET = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def claims(target: str) -> bool:
    return bool(_TARGET.match(target))


def compiler_line() -> str:
    from . import nvrtc
    lib = nvrtc.load()
    return f"NVRTC {lib.version[0]}.{lib.version[1]} ({lib.path})"


def build_entry(target: str, source: str, options: tuple, exprs: tuple) -> tuple[dict, bytes]:
    from ...bundles.manifest import kernel_rows
    from . import program
    prog = program.compile(source, arch=target, options=options, name_expressions=exprs)
    if target.startswith("sm_"):
        kind, payload = "cubin", prog.cubin
    else:
        kind, payload = "ptx", prog.ptx.encode()
    isa = re.search(r"^\s*\.version\s+(\d+\.\d+)", prog.ptx, re.M)
    return ({"kind": kind, "arch": target, "ptx_isa": isa.group(1) if isa else None,
             "log": prog.log, "compiler": compiler_line(),
             "kernels": kernel_rows(prog.kernels)}, payload)


def describe(backend) -> str:
    return f"cuda:{backend.ordinal} ({backend.arch}, {getattr(backend, 'name', 'GPU')})"


def hint(backend) -> str:
    return (f"add {backend.arch}, or compute_XX no newer than "
            f"{backend.arch.replace('sm', 'compute')}")


def rank(entry: dict, backend):
    """(score, None) when this GPU runs the entry, else (None, why)."""
    m = _TARGET.match(entry.get("arch", ""))
    if m is None:
        return None, f"unknown CUDA architecture {entry.get('arch')!r}"
    major, minor = backend.capability
    have = major * 10 + minor
    num, suffix = int(m.group(2)), m.group(3)
    if entry["kind"] == "cubin":
        if num == have:
            return 300, None
        if suffix:
            return None, f"sm_{num}{suffix} SASS runs on sm_{num} only"
        if num // 10 == major and num % 10 <= minor:
            return 200 + num, None
        return None, f"SASS for sm_{num} does not run on {backend.arch}"
    if num <= have:
        return 100 + num, None
    return None, f"PTX for compute_{num} needs an sm_{num} GPU or newer"


def load_entry(backend, entry: dict, payload: bytes, shown: str):
    """(module, {kernel name: (function, None)}, image extra)."""
    from ...errors import CudaError
    what = f"bundle {shown}, entry {entry['target']}"
    try:
        library = backend.load_module(payload, what)
    except CudaError as exc:
        if entry["kind"] != "ptx":
            raise
        raise ValueError(f"the driver could not JIT-compile its PTX (ISA "
                         f"{entry.get('ptx_isa') or '?'}, from {entry.get('compiler', '?')}): "
                         f"{exc}; update the driver, or add an sm_{backend.capability[0]}"
                         f"{backend.capability[1]} target to the bundle") from None
    return library, {k["name"]: (backend.function(library, k["symbol"]), None)
                     for k in entry["kernels"]}, {}

"""The HIP device's part of a bundle (quicklaunch.bundles): targets
"gfxNNN" (an AMDGPU code object, built with hiprtc), chosen at load when it
is for the GPU's own architecture and wavefront size; loading through
hipModuleLoadData."""
from __future__ import annotations

import re

__all__ = ["claims", "build_entry", "compiler_line", "rank", "describe", "hint", "load_entry"]

DEVICE = "hip"
_TARGET = re.compile(r"^gfx[0-9a-f]+$")


def claims(target: str) -> bool:
    return bool(_TARGET.match(target))


def compiler_line() -> str:
    from . import hiprtc
    lib = hiprtc.load()
    return (f"hiprtc {lib.version[0]}.{lib.version[1]} ({lib.path}), comgr "
            f"{lib.comgr_version}")


def build_entry(target: str, source: str, options: tuple, exprs: tuple) -> tuple[dict, bytes]:
    from ...bundles.manifest import kernel_rows
    from . import program
    prog = program.compile(source, arch=target, options=options, name_expressions=exprs)
    return ({"kind": "hsaco", "arch": target, "wave_size": prog.wave_size, "log": prog.log,
             "compiler": compiler_line(), "kernels": kernel_rows(prog.kernels)},
            prog.code_object)


def describe(backend) -> str:
    return f"hip:{backend.ordinal} ({backend.arch}, wave{backend.limits.warp_size})"


def hint(backend) -> str:
    return f"add {backend.arch}"


def rank(entry: dict, backend):
    if entry.get("arch") != backend.arch:
        return None, f"a {entry.get('arch')} code object does not run on {backend.arch}"
    if entry.get("wave_size") != backend.limits.warp_size:
        return None, (f"compiled for wave{entry.get('wave_size')}, the GPU runs "
                      f"wave{backend.limits.warp_size}")
    return 100, None


def load_entry(backend, entry: dict, payload: bytes, shown: str):
    library = backend.load_module(payload, f"bundle {shown}, entry {entry['target']}")
    return library, {k["name"]: (backend.function(library, k["symbol"]), None)
                     for k in entry["kernels"]}, {}

"""ql.load's reader of HIP binaries: a code object (or a clang offload
bundle holding one for the device's architecture) and its metadata's
explicit arguments (offsets, sizes, pointer or value)."""
from __future__ import annotations

from ..gpu.binary import Row, rows_from_offsets
from . import elf, metadata

__all__ = ["DESCRIPTION", "KINDS", "read"]

KINDS = ("hsaco",)
DESCRIPTION = "a HIP code object"
_POINTERS = ("global_buffer", "dynamic_shared_pointer")


def read(data: bytes, arch: str) -> tuple[dict[str, list[Row]], bytes]:
    """symbol -> rows, and the code object to hand hipModuleLoadData;
    ValueError (ElfError, MetadataError) when unreadable."""
    code = elf.unbundle(data, arch)
    listed = metadata.kernels(code)
    return ({s: rows_from_offsets([(a.offset, a.size, a.value_kind in _POINTERS)
                                   for a in k.args]) for s, k in listed.items()}, code)

"""ql.load's reader of CUDA binaries: a PTX module's ``.entry`` parameter
lists (sizes, alignments, element types), a cubin's parameter table (sizes:
cubin.py), a fatbin's first PTX, else cubin, entry (decompressed when it is
stored compressed: fatbin.py, zstd.py)."""
from __future__ import annotations

from ..gpu.binary import Row, rows_from_offsets
from . import cubin

__all__ = ["DESCRIPTION", "KINDS", "read"]

KINDS = ("cubin", "ptx", "fatbin")
DESCRIPTION = "a cubin, PTX or fatbin"
_PTX_KIND = {"f32": "F32", "f64": "F64", "f16": "F16", "bf16": "BF16", "u8": "U8", "s8": "I8",
             "u16": "I16", "s16": "I16", "b16": "U16", "u32": "I32", "s32": "I32", "b32": "I32",
             "u64": "I64", "s64": "I64", "b64": "I64"}


def ptx_rows(ptx: str) -> dict[str, list[Row]]:
    """symbol -> rows: ``.ptr`` parameters are pointers, byte arrays raw bytes,
    the rest by their PTX type (32- and 64-bit integers as signed)."""
    from .ptx import entries
    out = {}
    for symbol, params in entries(ptx).items():
        rows = []
        for p in params:
            types = [t for t in _PTX_KIND if f".{t} " in p.text + " " or f".{t}[" in p.text]
            kind = "PTR" if ".ptr" in p.text else (
                _PTX_KIND[types[0]] if types and "[" not in p.text else "STRUCT")
            rows.append(Row(p.size, p.align, kind, p.text))
        out[symbol] = rows
    return out


def read(data: bytes, kind: str) -> tuple[dict[str, list[Row]], bytes]:
    """symbol -> rows, and the image to hand cuModuleLoadData; ValueError
    (CubinError, ReflectError, UnicodeDecodeError) when unreadable."""
    if kind == "ptx":
        return ptx_rows(data.split(b"\0", 1)[0].decode("utf-8")), data
    if kind == "cubin":
        return {s: rows_from_offsets(ps) for s, ps in cubin.kernels(data).items()}, data
    from . import fatbin
    for entry in sorted(fatbin.entries(data), key=lambda e: e.kind != "ptx"):
        payload = entry.payload()   # decompressed (LZ4, zstd) when it is stored compressed
        if payload:
            return read(payload, entry.kind)[0], data
    raise cubin.CubinError("the fatbin holds no PTX or cubin to read the kernels' "
                           "parameters from")

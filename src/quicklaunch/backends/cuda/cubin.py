"""Reading what a cubin (an NVIDIA ELF64 image, EM_CUDA) says about its
kernels: their symbols (STT_FUNC entries) and each parameter's offset and
size from the ``.nv.info.<kernel>`` section's EIATTR_KPARAM_INFO records
(format byte 4, attribute 0x17: u32 index, u16 ordinal, u16 offset, u32
flags with the size in bits 18..31; 0x45, KPARAM_INFO_V2: the last word is
the plain size), and the SASS architecture from ``e_flags``. A cubin holds
no parameter types: sizes only (ql.load's ``signature`` adds the types).
The fatbin container's entries, compressed ones included, are read by
fatbin.py.

Malformed input raises ``CubinError``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .binary_errors import FATBIN_MAGIC, CubinError

__all__ = ["EM_CUDA", "CubinError", "CubinParam", "arch", "fatbin_entries", "kernels"]

EM_CUDA = 190
STT_FUNC = 2


class CubinParam(NamedTuple):
    offset: int
    size: int


def _unpack(fmt: str, data: bytes, offset: int):
    try:
        return struct.unpack_from(fmt, data, offset)
    except struct.error:
        raise CubinError(f"truncated: the image ends at byte {len(data)}, before the "
                         f"{struct.calcsize(fmt)} bytes wanted at offset {offset}") from None


def _sections(data: bytes):
    if data[:4] != b"\x7fELF" or data[4:5] != b"\x02" or data[5:6] != b"\x01":
        raise CubinError("not a 64-bit little-endian ELF image")
    (machine,) = _unpack("<H", data, 18)
    if machine != EM_CUDA:
        raise CubinError(f"an ELF image for machine {machine}, not a cubin (EM_CUDA, 190)")
    (shoff,) = _unpack("<Q", data, 40)
    shentsize, shnum, shstrndx = _unpack("<HHH", data, 58)
    if shentsize < 64 or shstrndx >= max(shnum, 1):
        raise CubinError("damaged ELF header (section table)")
    secs = []
    for i in range(shnum):
        name, typ, _, _, off, size, link, _, _, entsize = _unpack("<IIQQQQIIQQ", data,
                                                                 shoff + i * shentsize)
        if typ != 8 and off + size > len(data):   # SHT_NOBITS holds no bytes
            raise CubinError(f"truncated: section {i} ends at byte {off + size}, the image "
                             f"at {len(data)}")
        secs.append((name, typ, off, size, link, entsize))
    strtab = secs[shstrndx]
    names = data[strtab[2]:strtab[2] + strtab[3]]

    def cstr(blob, at):
        end = blob.find(b"\0", at)
        return blob[at:end if end >= 0 else len(blob)].decode("utf-8", "replace")

    return [(cstr(names, s[0]), *s[1:]) for s in secs], cstr


def arch(data: bytes) -> str:
    """The SASS architecture ("sm_90") a cubin is for."""
    _sections(data)
    (flags,) = _unpack("<I", data, 48)
    sm = (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF
    return f"sm_{sm}"


def kernels(data: bytes) -> dict[str, tuple[CubinParam, ...]]:
    """symbol -> its parameters (offset, size), in order, for every kernel."""
    secs, cstr = _sections(data)
    funcs = []
    for _name, typ, off, size, link, entsize in secs:
        if typ != 2 or entsize < 24:   # SHT_SYMTAB
            continue
        strtab = secs[link] if link < len(secs) else None
        if strtab is None:
            raise CubinError("damaged symbol table (string table link)")
        blob = data[strtab[2]:strtab[2] + strtab[3]]
        for i in range(size // entsize):
            st_name, info, other, shndx, _, _ = _unpack("<IBBHQQ", data, off + i * entsize)
            if info & 0xF == STT_FUNC and shndx and other & 0x10:
                funcs.append(cstr(blob, st_name))
    infos = {name[len(".nv.info."):]: (off, size) for name, _, off, size, _, _ in secs
             if name.startswith(".nv.info.")}
    out = {}
    for fn in funcs:
        params: dict[int, CubinParam] = {}
        if fn in infos:
            off, size = infos[fn]
            pos, end = off, off + size
            while pos + 4 <= end:
                fmt, attr, length = _unpack("<BBH", data, pos)
                pos += 4
                if fmt == 4:    # EIFMT_SVAL: a length-prefixed value
                    if attr in (0x17, 0x45) and length >= 12:
                        _, ordinal, offset, word = _unpack("<IHHI", data, pos)
                        params[ordinal] = CubinParam(offset,
                                                     word if attr == 0x45 else word >> 18)
                    pos += length
                elif fmt in (1, 2, 3):   # NVAL, BVAL, HVAL: the value is in the header
                    pass
                else:
                    raise CubinError(f"kernel {fn}: unknown .nv.info record format {fmt}")
        if sorted(params) != list(range(len(params))):
            raise CubinError(f"kernel {fn}: parameter ordinals {sorted(params)} have gaps")
        out[fn] = tuple(params[i] for i in range(len(params)))
    return out


def fatbin_entries(data: bytes) -> list[tuple[str, str, bytes]]:
    """(kind "ptx"/"cubin", arch "sm_90", payload) of each entry of a fatbin,
    compressed entries (LZ4, zstd) decompressed: fatbin.py."""
    from . import fatbin
    return [(e.kind, e.arch, e.payload()) for e in fatbin.entries(data)]

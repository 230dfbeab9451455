"""A fatbin container's entries (what nvcc -fatbin and NVRTC's fatbins hold):
PTX and cubins, each stored as is or compressed, for ql.load's parameter
reading (the driver itself is handed the whole fatbin).

The container: a 16-byte header (magic 0xBA55ED50, u16 version, u16 header
size, u64 size of the entries), then entries, each a header and its payload
padded to 8 bytes. An entry header, as nvcc 11-13 write it (little-endian):

=======  ====  ===========================================================
offset   size  field
=======  ====  ===========================================================
0        u16   kind: 1 PTX, 2 cubin (ELF)
4        u32   header size (64 for cubins, 80 for PTX)
8        u64   payload size, padded
16       u32   stored size of a compressed payload (0 when stored as is)
28       u32   architecture (80 for sm_80 / compute_80)
40       u64   flags: 0x2000 LZ4-compressed, 0x8000 zstd-compressed
56       u64   size of the payload once decompressed (padded)
=======  ====  ===========================================================

LZ4 payloads are one LZ4 block (the block format of lz4's
lz4_Block_format.md: no frame); zstd payloads are one zstd frame
(RFC 8878), decoded by zstd.py. Both are decompressed here, so parameter
information comes from compressed PTX and cubins too. Damage is a
``CubinError`` naming the entry.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .binary_errors import FATBIN_MAGIC, CubinError

__all__ = ["Entry", "entries", "lz4_block"]

LZ4 = 0x2000
ZSTD = 0x8000


class Entry(NamedTuple):
    kind: str            # "ptx" or "cubin"
    arch: str            # "sm_90"
    compression: str     # "", "lz4" or "zstd"
    stored: bytes        # the bytes as stored in the container
    uncompressed: int    # the decompressed size the header gives (0 when not compressed)
    index: int

    def payload(self) -> bytes:
        """The entry's PTX or cubin bytes, decompressed and without padding."""
        what = f"fatbin entry {self.index} ({self.kind} for {self.arch}"
        if self.compression:
            try:
                if self.compression == "lz4":
                    data = lz4_block(self.stored, self.uncompressed)
                else:
                    from .zstd import ZstdError, decompress
                    try:
                        data = decompress(self.stored, self.uncompressed)
                    except ZstdError as exc:
                        raise ValueError(str(exc)) from None
            except ValueError as exc:
                raise CubinError(f"{what}, {self.compression}-compressed): cannot be "
                                 f"decompressed: {exc}") from None
            if self.uncompressed and len(data) > self.uncompressed:
                raise CubinError(f"{what}): decompressed to {len(data)} bytes, the header says "
                                 f"{self.uncompressed}")
        else:
            data = self.stored
        return _trimmed(self.kind, data)


def _trimmed(kind: str, data: bytes) -> bytes:
    """PTX up to its NUL; a cubin up to the end of its ELF image (the padding
    after it dropped)."""
    if kind == "ptx":
        return data.split(b"\0", 1)[0]
    if data[:4] != b"\x7fELF" or len(data) < 64:
        return data
    shoff, = struct.unpack_from("<Q", data, 40)
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
    end = max(shoff + shentsize * shnum, phoff + phentsize * phnum, 64)
    for i in range(shnum):
        at = shoff + i * shentsize
        if at + 64 > len(data):
            break
        typ, = struct.unpack_from("<I", data, at + 4)
        off, size = struct.unpack_from("<QQ", data, at + 24)
        if typ != 8:   # SHT_NOBITS holds no bytes
            end = max(end, off + size)
    return data[:end] if end <= len(data) else data


def entries(data: bytes) -> list[Entry]:
    """The entries of a fatbin, in order; CubinError when it is not one or is
    truncated."""
    def unpack(fmt, at):
        try:
            return struct.unpack_from(fmt, data, at)
        except struct.error:
            raise CubinError(f"truncated: the fatbin ends at byte {len(data)}, before the "
                             f"{struct.calcsize(fmt)} bytes wanted at offset {at}") from None
    magic, _version, header = unpack("<IHH", 0)
    if magic != FATBIN_MAGIC:
        raise CubinError("not a fatbin (no 0xBA55ED50 magic)")
    (total,) = unpack("<Q", 8)
    pos, end = header, header + total
    if end > len(data):
        raise CubinError(f"truncated: the fatbin says {end} bytes, the image has {len(data)}")
    out = []
    while pos < end:
        kind, _, ehead, padded = unpack("<HHIQ", pos)
        stored, _ = unpack("<II", pos + 16)
        (sm,) = unpack("<I", pos + 28)
        (flags,) = unpack("<Q", pos + 40)
        (unpacked,) = unpack("<Q", pos + 56) if ehead >= 64 else (0,)
        body = pos + ehead
        if ehead < 48 or body + padded > end or stored > padded:
            raise CubinError(f"damaged fatbin entry {len(out)} at offset {pos}")
        compression = "zstd" if flags & ZSTD else "lz4" if flags & LZ4 else ""
        size = stored if compression else padded
        out.append(Entry("ptx" if kind == 1 else "cubin", f"sm_{sm}", compression,
                         data[body:body + size], unpacked if compression else 0, len(out)))
        pos = body + padded
    return out


def lz4_block(src: bytes, limit: int = 0) -> bytes:
    """One LZ4 block (sequences of a token, literals and a back-reference),
    decompressed; ``limit`` (when not 0) bounds the output. ValueError when
    damaged."""
    out = bytearray()
    i, n = 0, len(src)
    while i < n:
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                if i >= n:
                    raise ValueError("a literal length runs past the end")
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        if i + lit > n:
            raise ValueError("literals run past the end of the block")
        out += src[i:i + lit]
        i += lit
        if i >= n:
            break   # the last sequence has literals only
        if i + 2 > n:
            raise ValueError("a match offset runs past the end")
        offset = src[i] | src[i + 1] << 8
        i += 2
        length = (token & 15) + 4
        if token & 15 == 15:
            while True:
                if i >= n:
                    raise ValueError("a match length runs past the end")
                b = src[i]
                i += 1
                length += b
                if b != 255:
                    break
        if offset == 0 or offset > len(out):
            raise ValueError(f"match offset {offset} points before the start of the output")
        if limit and len(out) + length > limit:
            raise ValueError(f"the output exceeds the {limit} bytes the header says")
        start = len(out) - offset
        if offset >= length:
            out += out[start:start + length]
        else:   # an overlapping copy repeats the last `offset` bytes
            while length > 0:
                chunk = out[start:start + min(offset, length)]
                out += chunk
                length -= len(chunk)
                start += len(chunk)
    return bytes(out)

"""A minimal MessagePack decoder: enough for the AMDGPU code-object
metadata note (maps, arrays, strings, integers, booleans, nil, floats,
binary). Written here so that reading a code object needs no dependency.

``unpack(data)`` decodes exactly one object and refuses trailing bytes;
malformed input raises ``ValueError``.
"""
from __future__ import annotations

import struct

__all__ = ["unpack"]

# fixed-width formats: first byte -> (struct format, size)
_NUMBERS = {0xCA: (">f", 4), 0xCB: (">d", 8), 0xCC: (">B", 1), 0xCD: (">H", 2),
            0xCE: (">I", 4), 0xCF: (">Q", 8), 0xD0: (">b", 1), 0xD1: (">h", 2),
            0xD2: (">i", 4), 0xD3: (">q", 8)}
_LENGTHS = {1: ">B", 2: ">H", 4: ">I"}
_MAX_DEPTH = 64


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ValueError(f"msgpack: truncated at byte {self.pos} (wanted {n} more)")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def length(self, width: int) -> int:
        return struct.unpack(_LENGTHS[width], self.take(width))[0]

    def value(self, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise ValueError("msgpack: nested too deeply")
        b = self.take(1)[0]
        if b <= 0x7F:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F, depth)
        if 0x90 <= b <= 0x9F:
            return self.array(b & 0x0F, depth)
        if 0xA0 <= b <= 0xBF:
            return self.text(b & 0x1F)
        if b in _NUMBERS:
            fmt, size = _NUMBERS[b]
            return struct.unpack(fmt, self.take(size))[0]
        if b == 0xC0:
            return None
        if b in (0xC2, 0xC3):
            return b == 0xC3
        if b in (0xD9, 0xDA, 0xDB):   # str 8/16/32
            return self.text(self.length(1 << (b - 0xD9)))
        if b in (0xC4, 0xC5, 0xC6):   # bin 8/16/32
            return bytes(self.take(self.length(1 << (b - 0xC4))))
        if b in (0xDC, 0xDD):         # array 16/32
            return self.array(self.length(2 if b == 0xDC else 4), depth)
        if b in (0xDE, 0xDF):         # map 16/32
            return self.map(self.length(2 if b == 0xDE else 4), depth)
        raise ValueError(f"msgpack: unsupported type byte {b:#04x} at byte {self.pos - 1}")

    def text(self, n: int) -> str:
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"msgpack: invalid UTF-8 in a string before byte {self.pos}") \
                from None

    def array(self, n: int, depth: int) -> list:
        return [self.value(depth + 1) for _ in range(n)]

    def map(self, n: int, depth: int) -> dict:
        out = {}
        for _ in range(n):
            key = self.value(depth + 1)
            if isinstance(key, (list, dict)):
                raise ValueError("msgpack: a map key that is a container")
            out[key] = self.value(depth + 1)
        return out


def unpack(data: bytes):
    """The one MessagePack object in ``data``."""
    r = _Reader(bytes(data))
    out = r.value()
    if r.pos != len(r.data):
        raise ValueError(f"msgpack: {len(r.data) - r.pos} trailing bytes after the object")
    return out

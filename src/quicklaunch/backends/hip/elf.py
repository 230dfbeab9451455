"""Reading an AMDGPU code object (a 64-bit little-endian ELF shared object):
its sections, symbols, notes and the bytes a symbol's initialised data
holds. Also unwraps a clang offload bundle, which some hiprtc versions
return instead of a bare code object.

Only what quicklaunch needs, written from the ELF-64 specification and the
LLVM AMDGPU usage notes; malformed input raises ``ElfError``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["CodeObject", "ElfError", "Symbol", "unbundle", "EM_AMDGPU",
           "NT_AMDGPU_METADATA"]

EM_AMDGPU = 224
NT_AMDGPU_METADATA = 32
SHT_SYMTAB, SHT_RELA, SHT_NOTE, SHT_NOBITS, SHT_DYNSYM = 2, 4, 7, 8, 11
STT_FUNC = 2
R_AMDGPU_ABS64, R_AMDGPU_RELATIVE64 = 3, 13
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_COMPRESSED_MAGIC = b"CCOB"


class ElfError(ValueError):
    """Not a code object quicklaunch can read."""


class Section(NamedTuple):
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


class Symbol(NamedTuple):
    name: str
    value: int      # virtual address
    size: int
    section: int    # index of the section it is defined in (0: undefined)
    kind: int       # STT_* (1 object, 2 function)


def _unpack(fmt: str, data: bytes, offset: int):
    try:
        return struct.unpack_from(fmt, data, offset)
    except struct.error:
        raise ElfError(f"truncated ELF: {struct.calcsize(fmt)} bytes wanted at offset "
                       f"{offset} of {len(data)}") from None


def _cstring(blob: bytes, offset: int) -> str:
    end = blob.find(b"\0", offset)
    return blob[offset:end if end >= 0 else len(blob)].decode("utf-8", "replace")


class CodeObject:
    """A parsed code object: ``sections``, ``symbols`` (name -> Symbol),
    ``flags`` (e_flags) and the notes."""

    def __init__(self, data: bytes):
        self.data = data = bytes(data)
        if data[:4] != b"\x7fELF":
            raise ElfError("not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ElfError("not a 64-bit little-endian ELF (not an AMDGPU code object)")
        (self.machine,) = _unpack("<H", data, 18)
        if self.machine != EM_AMDGPU:
            raise ElfError(f"ELF machine {self.machine}, not AMDGPU ({EM_AMDGPU})")
        (self.flags,) = _unpack("<I", data, 48)
        shoff, = _unpack("<Q", data, 40)
        shentsize, shnum, shstrndx = _unpack("<HHH", data, 58)
        if shentsize < 64 or shnum == 0:
            raise ElfError("the code object has no section headers")
        raw = []
        for i in range(shnum):
            name, stype, _flags, addr, offset, size, link, _info, _align, entsize = _unpack(
                "<IIQQQQIIQQ", data, shoff + i * shentsize)
            raw.append((name, stype, addr, offset, size, link, entsize))
        if shstrndx >= shnum:
            raise ElfError("bad section name table index")
        names = self._bytes(raw[shstrndx][3], raw[shstrndx][4])
        self.sections = [Section(_cstring(names, r[0]), *r[1:]) for r in raw]
        self.symbols = self._read_symbols()

    def _bytes(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise ElfError(f"section data at {offset}+{size} lies outside the file")
        return self.data[offset:offset + size]

    def _read_symbols(self) -> dict[str, Symbol]:
        out: dict[str, Symbol] = {}
        # .symtab first (complete); .dynsym adds nothing new when both exist
        for want in (SHT_SYMTAB, SHT_DYNSYM):
            for sec in self.sections:
                if sec.type != want or sec.entsize < 24 or sec.link >= len(self.sections):
                    continue
                strtab = self.sections[sec.link]
                strings = self._bytes(strtab.offset, strtab.size)
                table = self._bytes(sec.offset, sec.size)
                for i in range(1, sec.size // sec.entsize):
                    name, info, _other, shndx, value, size = _unpack(
                        "<IBBHQQ", table, i * sec.entsize)
                    text = _cstring(strings, name)
                    if text and shndx and text not in out:
                        out[text] = Symbol(text, value, size, shndx, info & 0xF)
        return out

    def notes(self):
        """(owner name, type, descriptor bytes) of every note."""
        for sec in self.sections:
            if sec.type != SHT_NOTE:
                continue
            blob, pos = self._bytes(sec.offset, sec.size), 0
            while pos + 12 <= len(blob):
                namesz, descsz, ntype = _unpack("<III", blob, pos)
                pos += 12
                name = blob[pos:pos + namesz].rstrip(b"\0").decode("ascii", "replace")
                pos += (namesz + 3) & ~3
                if pos + descsz > len(blob):
                    raise ElfError("a note runs past its section")
                yield name, ntype, blob[pos:pos + descsz]
                pos += (descsz + 3) & ~3

    def metadata_note(self) -> bytes:
        """The AMDGPU metadata note's descriptor (MessagePack)."""
        for name, ntype, desc in self.notes():
            if name == "AMDGPU" and ntype == NT_AMDGPU_METADATA:
                return desc
        raise ElfError("the code object has no AMDGPU metadata note (code object v2 or "
                       "older, which quicklaunch does not read)")

    def symbol_bytes(self, name: str) -> bytes | None:
        """The initialised bytes of data symbol ``name``; None when there is
        no such symbol."""
        sym = self.symbols.get(name)
        if sym is None:
            return None
        if sym.section >= len(self.sections):
            raise ElfError(f"symbol {name} is in section {sym.section}, which does not exist")
        sec = self.sections[sym.section]
        start = sym.value - sec.addr
        if start < 0 or start + sym.size > sec.size:
            raise ElfError(f"symbol {name} lies outside its section {sec.name}")
        if sec.type == SHT_NOBITS:
            return bytes(sym.size)
        return self._bytes(sec.offset + start, sym.size)


    def _relocation_at(self, address: int):
        """(type, symbol index, addend, symbol table section) of the RELA
        entry that patches ``address``, or None."""
        for sec in self.sections:
            if sec.type != SHT_RELA or sec.entsize < 24:
                continue
            table = self._bytes(sec.offset, sec.size)
            for i in range(sec.size // sec.entsize):
                offset, info, addend = _unpack("<QQq", table, i * sec.entsize)
                if offset == address:
                    return info & 0xFFFFFFFF, info >> 32, addend, sec.link
        return None

    def _symbol_by_index(self, symtab: int, index: int) -> str | None:
        if symtab >= len(self.sections):
            return None
        sec = self.sections[symtab]
        if sec.entsize < 24 or sec.link >= len(self.sections):
            return None
        name, = _unpack("<I", self._bytes(sec.offset, sec.size), index * sec.entsize)
        strtab = self.sections[sec.link]
        return _cstring(self._bytes(strtab.offset, strtab.size), name) or None

    def pointer_target(self, name: str) -> str | None:
        """The function a pointer variable ``name`` points to (by its
        relocation, or by the address it holds), or None."""
        sym = self.symbols.get(name)
        if sym is None or sym.size != 8:
            return None
        reloc = self._relocation_at(sym.value)
        if reloc is not None and reloc[0] == R_AMDGPU_ABS64 and reloc[1]:
            return self._symbol_by_index(reloc[3], reloc[1])
        if reloc is not None and reloc[0] == R_AMDGPU_RELATIVE64:
            target = reloc[2]
        else:
            target = int.from_bytes(self.symbol_bytes(name), "little")
        funcs = [s.name for s in self.symbols.values()
                 if s.kind == STT_FUNC and s.value == target]
        return funcs[0] if len(funcs) == 1 else None


def unbundle(data: bytes, arch: str) -> bytes:
    """The code object for ``arch`` ("gfx90a") out of a clang offload bundle;
    ``data`` itself when it is already a bare ELF."""
    data = bytes(data)
    if data[:4] == b"\x7fELF":
        return data
    if data[:4] == _COMPRESSED_MAGIC:
        raise ElfError("hiprtc returned a compressed offload bundle, which quicklaunch does "
                       "not unpack; do not pass --offload-compress")
    if not data.startswith(_BUNDLE_MAGIC):
        raise ElfError("neither an ELF code object nor a clang offload bundle")
    pos = len(_BUNDLE_MAGIC)
    (count,) = _unpack("<Q", data, pos)
    pos += 8
    found = []
    for _ in range(count):
        offset, size, idlen = _unpack("<QQQ", data, pos)
        pos += 24
        ident = data[pos:pos + idlen].decode("ascii", "replace")
        pos += idlen
        found.append(ident)
        # "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
        target = ident.split("--", 1)[-1] if ident.startswith("hip") else ""
        if target.split(":")[0] == arch.split(":")[0] and size:
            return data[offset:offset + size]
    raise ElfError(f"the offload bundle has no code object for {arch} (it holds: "
                   f"{', '.join(found) or 'nothing'})")

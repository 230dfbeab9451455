"""The code-object readers, without hiprtc: the MessagePack decoder against an
encoder written here from the MessagePack specification, the ELF reader on
hand-built files, the offload-bundle unwrapping, and the reflection /
metadata cross-check."""
import struct

import pytest

from quicklaunch.backends.hip import elf, metadata, msgpack

pytestmark = pytest.mark.no_hiprtc


def pack(obj) -> bytes:
    """A MessagePack encoder (the smallest encoding of each value)."""
    if obj is None:
        return b"\xc0"
    if obj is True or obj is False:
        return b"\xc3" if obj else b"\xc2"
    if isinstance(obj, int):
        if 0 <= obj <= 0x7F:
            return bytes([obj])
        if -32 <= obj < 0:
            return struct.pack("b", obj)
        for code, fmt, lo, hi in ((0xCC, ">B", 0, 2**8), (0xCD, ">H", 0, 2**16),
                                  (0xCE, ">I", 0, 2**32), (0xCF, ">Q", 0, 2**64),
                                  (0xD0, ">b", -2**7, 2**7), (0xD1, ">h", -2**15, 2**15),
                                  (0xD2, ">i", -2**31, 2**31), (0xD3, ">q", -2**63, 2**63)):
            if lo <= obj < hi:
                return bytes([code]) + struct.pack(fmt, obj)
        raise OverflowError(obj)
    if isinstance(obj, float):
        return b"\xcb" + struct.pack(">d", obj)
    if isinstance(obj, str):
        data = obj.encode()
        n = len(data)
        head = (bytes([0xA0 | n]) if n < 32 else b"\xd9" + bytes([n]) if n < 256
                else b"\xda" + struct.pack(">H", n) if n < 65536 else b"\xdb" + struct.pack(">I", n))
        return head + data
    if isinstance(obj, bytes):
        return b"\xc4" + bytes([len(obj)]) + obj
    if isinstance(obj, list):
        n = len(obj)
        head = bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n)
        return head + b"".join(pack(x) for x in obj)
    if isinstance(obj, dict):
        n = len(obj)
        head = bytes([0x80 | n]) if n < 16 else b"\xde" + struct.pack(">H", n)
        return head + b"".join(pack(k) + pack(v) for k, v in obj.items())
    raise TypeError(obj)


@pytest.mark.parametrize("value", [
    0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1, -1, -32, -33, -128,
    -129, -2**15, -2**31, -2**63, True, False, None, 0.5, -1e300, "", "a" * 31, "b" * 32,
    "c" * 300, "ü", b"\x00\x01", [], [1, [2, [3]]], list(range(20)), {}, {"a": 1, "b": [True]},
    {f"k{i}": i for i in range(20)},
    {"amdhsa.kernels": [{".name": "k", ".args": [{".size": 8, ".offset": 0,
                                                  ".value_kind": "global_buffer"}]}]},
])
def test_msgpack_round_trip(value):
    assert msgpack.unpack(pack(value)) == value


def test_msgpack_32_bit_lengths_and_single_float():
    assert msgpack.unpack(b"\xdb" + struct.pack(">I", 3) + b"abc") == "abc"
    assert msgpack.unpack(b"\xdd" + struct.pack(">I", 2) + b"\x01\x02") == [1, 2]
    assert msgpack.unpack(b"\xdf" + struct.pack(">I", 1) + b"\x01\x02") == {1: 2}
    assert msgpack.unpack(b"\xca" + struct.pack(">f", 1.5)) == 1.5


@pytest.mark.parametrize("data, message", [
    (b"", "truncated"), (b"\x92\x01", "truncated"), (b"\xa5abc", "truncated"),
    (b"\x01\x02", "trailing"), (b"\xc1", "unsupported type byte 0xc1"),
    (b"\xd4\x00\x00", "unsupported"), (b"\x81\x90\x01", "map key that is a container"),
    (b"\xa2\xff\xfe", "invalid UTF-8"), (b"\x91" * 100 + b"\x01", "nested too deeply"),
])
def test_msgpack_malformed(data, message):
    with pytest.raises(ValueError, match=message):
        msgpack.unpack(data)


# ------------------------------------------------------------- a hand-built ELF
def build_elf(note: bytes | None, symbols=(), data=b"", machine=elf.EM_AMDGPU, relocs=()):
    """A minimal AMDGPU-like ELF: [null, .note, .data, .symtab, .strtab, .rela.dyn,
    .shstrtab]. ``symbols``: (name, value, size, section index, type)."""
    shnames = b"\0.note\0.data\0.symtab\0.strtab\0.rela.dyn\0.shstrtab\0"
    off = {n: shnames.index(n.encode()) for n in
           (".note", ".data", ".symtab", ".strtab", ".rela.dyn", ".shstrtab")}
    notes = b""
    if note is not None:
        name = b"AMDGPU\0"
        notes = struct.pack("<III", len(name), len(note), elf.NT_AMDGPU_METADATA)
        notes += name + b"\0" * (-len(name) % 4) + note + b"\0" * (-len(note) % 4)
    strtab = b"\0"
    syms = b"\0" * 24
    for name, value, size, shndx, kind in symbols:
        syms += struct.pack("<IBBHQQ", len(strtab), 0x10 | kind, 0, shndx, value, size)
        strtab += name.encode() + b"\0"
    rela = b"".join(struct.pack("<QQq", o, t, a) for o, t, a in relocs)
    blobs = [notes, data, syms, strtab, rela, shnames]
    pos, offsets = 64, []
    for b in blobs:
        offsets.append(pos)
        pos += len(b) + (-len(b) % 8)
    shoff = pos
    header = bytearray(64)
    header[:8] = b"\x7fELF\x02\x01\x01\x40"
    struct.pack_into("<HHI", header, 16, 3, machine, 1)
    struct.pack_into("<Q", header, 40, shoff)
    struct.pack_into("<I", header, 48, 0x30)
    struct.pack_into("<HHHHHH", header, 52, 64, 56, 0, 64, 7, 6)
    body = b"".join(b + b"\0" * (-len(b) % 8) for b in blobs)
    data_addr = 0x1000
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    spec = [(".note", 7, 0, 0, 0), (".data", 1, data_addr, 0, 0), (".symtab", 2, 0, 4, 24),
            (".strtab", 3, 0, 0, 0), (".rela.dyn", 4, 0, 3, 24), (".shstrtab", 3, 0, 0, 0)]
    for i, (name, kind, addr, link, entsize) in enumerate(spec):
        sections.append(struct.pack("<IIQQQQIIQQ", off[name], kind, 0, addr, offsets[i],
                                    len(blobs[i]), link, 0, 8, entsize))
    return bytes(header) + body + b"".join(sections)


def test_elf_symbols_notes_and_data():
    note = pack({"amdhsa.version": [1, 2]})
    image = build_elf(note, [("table", 0x1004, 8, 2, 1), ("k", 0x2000, 4, 2, 2)],
                      data=b"\xaa\xaa\xaa\xaa\x01\x02\x03\x04\x05\x06\x07\x08")
    co = elf.CodeObject(image)
    assert [s.name for s in co.sections][1:3] == [".note", ".data"]
    assert co.symbol_bytes("table") == bytes(range(1, 9))
    assert co.symbol_bytes("nope") is None
    assert msgpack.unpack(co.metadata_note()) == {"amdhsa.version": [1, 2]}
    assert co.flags == 0x30


def test_elf_pointer_targets_by_relocation():
    data = struct.pack("<QQ", 0, 0x2000)
    image = build_elf(pack({}), [("ptr_rel", 0x1000, 8, 2, 1), ("ptr_plain", 0x1008, 8, 2, 1),
                                 ("kernel_a", 0x3000, 4, 2, 2), ("kernel_b", 0x2000, 4, 2, 2)],
                      data=data, relocs=[(0x1000, elf.R_AMDGPU_RELATIVE64, 0x3000)])
    co = elf.CodeObject(image)
    assert co.pointer_target("ptr_rel") == "kernel_a"
    assert co.pointer_target("ptr_plain") == "kernel_b"    # no relocation: the address held
    assert co.pointer_target("kernel_a") is None


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b"MZ" + b[2:], "not an ELF"),
    (lambda b: b[:4] + b"\x01" + b[5:], "64-bit little-endian"),
    (lambda b: b[:18] + struct.pack("<H", 62) + b[20:], "machine 62, not AMDGPU"),
    (lambda b: b[:100], "truncated|outside the file"),
])
def test_elf_malformed(mutate, message):
    with pytest.raises(elf.ElfError, match=message):
        elf.CodeObject(mutate(build_elf(pack({}))))


def test_elf_without_metadata_note():
    with pytest.raises(elf.ElfError, match="no AMDGPU metadata note"):
        elf.CodeObject(build_elf(None)).metadata_note()


def bundle(entries):
    out = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries))
    header_len = len(out) + sum(24 + len(i) for i, _ in entries)
    pos, table, blobs = header_len, b"", b""
    for ident, blob in entries:
        table += struct.pack("<QQQ", pos, len(blob), len(ident)) + ident
        blobs += blob
        pos += len(blob)
    return out + table + blobs


def test_offload_bundle():
    co = build_elf(pack({}))
    data = bundle([(b"host-x86_64-unknown-linux--", b""),
                   (b"hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", co)])
    assert elf.unbundle(data, "gfx90a") == co
    assert elf.unbundle(co, "gfx90a") == co
    with pytest.raises(elf.ElfError, match=r"no code object for gfx1100 .*gfx90a"):
        elf.unbundle(data, "gfx1100")
    with pytest.raises(elf.ElfError, match="compressed"):
        elf.unbundle(b"CCOB" + b"\0" * 40, "gfx90a")


# ------------------------------------------------------------- the cross-check
def meta_note(args, name="k"):
    return pack({"amdhsa.kernels": [{".name": name, ".args": args, ".kernarg_segment_size": 64,
                                     ".max_flat_workgroup_size": 256,
                                     ".group_segment_fixed_size": 16, ".wavefront_size": 32}]})


ARGS = [{".offset": 0, ".size": 4, ".value_kind": "by_value"},
        {".offset": 8, ".size": 8, ".value_kind": "global_buffer", ".address_space": "global"},
        {".offset": 16, ".size": 24, ".value_kind": "by_value"},
        {".offset": 40, ".size": 8, ".value_kind": "hidden_global_offset_x"}]


def test_metadata_reads_explicit_arguments():
    k = metadata.kernels(build_elf(meta_note(ARGS)))["k"]
    assert [(a.offset, a.size, a.value_kind) for a in k.args] == [
        (0, 4, "by_value"), (8, 8, "global_buffer"), (16, 24, "by_value")]
    assert (k.max_threads, k.static_shared, k.wavefront_size) == (256, 16, 32)
    metadata.check("k", [(4, 4, 5), (8, 8, 1), (24, 8, 16)], k)


@pytest.mark.parametrize("rows, message", [
    ([(4, 4, 5), (8, 8, 1)], "reflection found 2 parameters but the code object's metadata "
                             "lists 3"),
    ([(4, 4, 5), (8, 8, 1), (20, 4, 16)], "parameter 3 reflects as 20 bytes aligned to 4"),
    ([(4, 4, 5), (8, 4, 1), (24, 4, 16)], r"parameter 2 reflects as 8 bytes aligned to 4 "
                                          r"\(offset 4\), but the code object places it at "
                                          r"offset 8"),
    ([(4, 4, 5), (8, 8, 6), (24, 8, 16)], "reflects as a value but the code object passes it "
                                          "as global_buffer"),
    ([(4, 4, 1), (8, 8, 1), (24, 8, 16)], "reflects as a pointer"),
])
def test_metadata_mismatch(rows, message):
    k = metadata.kernels(build_elf(meta_note(ARGS)))["k"]
    with pytest.raises(metadata.MetadataError, match=message):
        metadata.check("k", rows, k)


@pytest.mark.parametrize("note, message", [
    (pack([1, 2]), "no amdhsa.kernels"),
    (pack({"amdhsa.kernels": [{".args": []}]}), "without a name"),
    (pack({"amdhsa.kernels": [{".name": "k", ".args": [{".size": 4}]}]}), "without a value "
                                                                          "kind"),
    (pack({"amdhsa.kernels": [{".name": "k", ".args": [
        {".size": "4", ".offset": 0, ".value_kind": "by_value"}]}]}), "not an integer"),
    (b"\xc1", "unreadable code object metadata"),
])
def test_metadata_malformed(note, message):
    with pytest.raises(metadata.MetadataError, match=message):
        metadata.kernels(build_elf(note))

"""Writes small NVIDIA-style cubins (ELF64, EM_CUDA) by hand, so the fake
driver's cubin parsing is tested without NVRTC. Layout as NVRTC emits it:
one .nv.info.<kernel> section per kernel holding EIATTR records
(format byte 4, attribute byte, u16 length, then the value); a parameter is
KPARAM_INFO (0x17: u32 index, u16 ordinal, u16 offset, u32 flags with the
size in bits 18..31) or, past 4 KiB of parameters, KPARAM_INFO_V2 (0x45:
the same but the last word is the plain size). Kernels are STT_FUNC symbols
with st_other 0x10 (entry); globals are STT_OBJECT symbols."""
import struct

EM_CUDA = 190


def kparam(ordinal, offset, size, v2=False):
    if v2:
        return struct.pack("<BBHIHHI", 4, 0x45, 12, 0, ordinal, offset, size)
    return struct.pack("<BBHIHHI", 4, 0x17, 12, 0, ordinal, offset, (size << 18) | 0x1F000)


def make_cubin(kernels, objects=(), sm=90, abi=8, machine=EM_CUDA, v2=False):
    """kernels: {name: [(size, offset), ...]}; objects: [(name, size, init bytes or None)].
    Returns the image's bytes."""
    names = [b"", b".shstrtab", b".strtab", b".symtab"]
    secs = []  # (name, type, data, link, entsize, size override)
    for k, params in kernels.items():
        info = b"".join(kparam(i, off, size, v2) for i, (size, off) in reversed(list(enumerate(params))))
        info += struct.pack("<BBH", 3, 0x50, 0)  # an HVAL record (EIATTR_SW_WAR-like) to skip
        secs.append((b".nv.info." + k.encode(), 0x70000000, info, 3, 0, None))
        secs.append((b".text." + k.encode(), 1, b"\0" * 128, 3, 0, None))
    gdata, gsyms, bss, bsyms = b"", [], 0, []
    for name, size, init in objects:
        if init is None:
            bsyms.append((name, bss, size))
            bss += size
        else:
            gsyms.append((name, len(gdata), size))
            gdata += init.ljust(size, b"\0")
    secs.append((b".nv.global.init", 1, gdata, 0, 0, None))
    secs.append((b".nv.global", 8, b"", 0, 0, bss))
    shstr = b"\0".join(names) + b"\0"
    offs = {}
    for s in secs:
        offs[s[0]] = len(shstr)
        shstr += s[0] + b"\0"
    sec_index = {s[0]: 4 + i for i, s in enumerate(secs)}
    strtab, symtab = b"\0", struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)

    def sym(name, info, other, shndx, value, size):
        nonlocal strtab, symtab
        symtab += struct.pack("<IBBHQQ", len(strtab), info, other, shndx, value, size)
        strtab += name.encode() + b"\0"

    for name, off, size in gsyms:
        sym(name, 1, 0, sec_index[b".nv.global.init"], off, size)
    for name, off, size in bsyms:
        sym(name, 1, 0, sec_index[b".nv.global"], off, size)
    sym(".nv.reservedSmem", 0x21, 0, 0, 0, 4)  # an undefined OBJECT: to be ignored
    for k in kernels:
        sym(k, 0x12, 0x10, sec_index[b".text." + k.encode()], 0, 128)
    all_secs = [(b".shstrtab", 3, shstr, 0, 0, None), (b".strtab", 3, strtab, 0, 0, None),
                (b".symtab", 2, symtab, 2, 24, None)] + secs
    body, headers = b"", [b"\0" * 64]
    name_off = {b".shstrtab": shstr.index(b".shstrtab"), b".strtab": shstr.index(b".strtab"),
                b".symtab": shstr.index(b".symtab"), **offs}
    for name, typ, data, link, entsize, size in all_secs:
        off = 64 + len(body)
        body += data + b"\0" * (-len(data) % 8)
        headers.append(struct.pack("<IIQQQQIIQQ", name_off[name], typ, 0, 0, off,
                                   len(data) if size is None else size, link, 0, 8, entsize))
    shoff = 64 + len(body)
    flags = (sm << 8) | 0x6000004 if abi >= 8 else (sm << 16) | sm
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x41, abi]) + b"\0" * 7
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, shoff, flags, 64, 56, 0, 64,
                               len(headers), 1)
    return ehdr + body + b"".join(headers)

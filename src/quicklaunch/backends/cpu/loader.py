"""Loads a compiled CPU kernel module and reads its kernel table.

The table (``__ql_module``, see include/ql_cpu_abi.h) was written by the
compiler: each kernel's run function and each parameter's size, alignment and
kind. The kernel's symbol (C++-mangled, or plain for ``extern "C"``) is read
from the module's ELF symbol table at the kernel function's address (modules
are built with hidden visibility, so the dynamic symbol table lacks it).
"""
from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

ABI_VERSION = 4


class _Param(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("align", ctypes.c_uint32), ("kind", ctypes.c_uint32)]


class _Kernel(ctypes.Structure):
    _fields_ = [("expr", ctypes.c_char_p), ("function", ctypes.c_void_p),
                ("run", ctypes.c_void_p), ("nparams", ctypes.c_uint32),
                ("tier", ctypes.c_uint32), ("params", ctypes.POINTER(_Param)),
                ("fault", ctypes.c_void_p)]


class _Module(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("nkernels", ctypes.c_uint32),
                ("kernels", ctypes.POINTER(_Kernel))]


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_libc = ctypes.CDLL(None)
_dladdr = _libc.dladdr
_dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
_dladdr.restype = ctypes.c_int


@dataclass(frozen=True)
class LoadedKernel:
    expr: str                                 # what the table row was built from
    symbol: str | None                        # the kernel's own symbol, when exported
    handle: int                               # address of its ql_cpu_kernel row
    params: tuple[tuple[int, int, int], ...]  # (size, align, kind) per parameter
    tier: int


def elf_symbols(path: str, kind: int) -> list[tuple[str, int, int]]:
    """(name, offset from the load base, size) of the defined symbols of one
    type (2: functions, 1: objects) in an ELF64 little-endian shared object's
    .symtab; empty for anything else."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    out = []
    for _name, sh_type, _fl, _addr, off, size, link, _info, _al, entsize in sections:
        if sh_type != 2 or not entsize:  # SHT_SYMTAB
            continue
        str_off = sections[link][4]
        for pos in range(off, off + size, entsize):
            st_name, st_info, _other, shndx, value, st_size = struct.unpack_from(
                "<IBBHQQ", data, pos)
            if st_info & 0xF == kind and shndx and st_name:
                end = data.index(b"\0", str_off + st_name)
                out.append((data[str_off + st_name:end].decode(), value, st_size))
    return out


def _function_symbols(path: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for name, value, _ in elf_symbols(path, 2):
        out.setdefault(value, name)
    return out


def global_variable(library: ctypes.CDLL, path: str, name: str) -> tuple[int, int] | None:
    """(address, size) of a module-scope variable: a plain name ("table"),
    or a namespace-qualified one ("ns::table", found by its mangled name)."""
    parts = name.split("::")
    wanted = {name}
    if len(parts) > 1:
        wanted.add("_ZN" + "".join(f"{len(p)}{p}" for p in parts) + "E")
    table = _Module.in_dll(library, "__ql_module")
    base = _load_base(ctypes.addressof(table)) or 0
    for sym, value, size in elf_symbols(path, 1):
        if sym in wanted:
            return base + value, size
    return None


def _load_base(address: int) -> int | None:
    info = _DlInfo()
    if address and _dladdr(address, ctypes.byref(info)):
        return info.dli_fbase
    return None


def load(path: str) -> tuple[ctypes.CDLL, list[LoadedKernel]]:
    """dlopens the module at ``path``; returns the library and its kernels.

    Raises OSError if it cannot be loaded, ValueError if its table is not of
    this ABI version (the caller treats both as a cache miss).
    """
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL | getattr(ctypes, "RTLD_NOW", 2))
    table = _Module.in_dll(lib, "__ql_module")
    if table.abi_version != ABI_VERSION:
        raise ValueError(f"kernel module ABI {table.abi_version}, expected {ABI_VERSION}")
    kernels = []
    symbols = _function_symbols(path) if table.nkernels else {}
    base = _load_base(ctypes.addressof(table)) or 0
    for i in range(table.nkernels):
        row = table.kernels[i]
        params = tuple((row.params[j].size, row.params[j].align, row.params[j].kind)
                       for j in range(row.nparams))
        kernels.append(LoadedKernel(row.expr.decode(), symbols.get((row.function or 0) - base),
                                    ctypes.addressof(row), params, row.tier))
    return lib, kernels

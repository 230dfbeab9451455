"""Loads a compiled CPU kernel module and reads its kernel table.

The table (``__ql_module``, see include/ql_cpu_abi.h) was written by the
compiler: each kernel's run function and each parameter's size, alignment and
kind. The kernel's symbol (C++-mangled, or plain for ``extern "C"``) is found
with ``dladdr`` on the kernel function's address.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

ABI_VERSION = 1


class _Param(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("align", ctypes.c_uint32), ("kind", ctypes.c_uint32)]


class _Kernel(ctypes.Structure):
    _fields_ = [("expr", ctypes.c_char_p), ("function", ctypes.c_void_p),
                ("run", ctypes.c_void_p), ("nparams", ctypes.c_uint32),
                ("tier", ctypes.c_uint32), ("params", ctypes.POINTER(_Param))]


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


def _symbol_of(address: int) -> str | None:
    info = _DlInfo()
    if address and _dladdr(address, ctypes.byref(info)) and info.dli_sname \
            and info.dli_saddr == address:
        return info.dli_sname.decode()
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
    for i in range(table.nkernels):
        row = table.kernels[i]
        params = tuple((row.params[j].size, row.params[j].align, row.params[j].kind)
                       for j in range(row.nparams))
        kernels.append(LoadedKernel(row.expr.decode(), _symbol_of(row.function or 0),
                                    ctypes.addressof(row), params, row.tier))
    return lib, kernels

"""Loads a compiled CPU kernel module and reads its kernel table.

The table (``__ql_module``, see include/ql_cpu_abi.h) was written by the
compiler: each kernel's run function and each parameter's size, alignment and
kind. The kernel's symbol (C++-mangled, or plain for ``extern "C"``) is read
from the module's ELF symbol table at the kernel function's address (modules
are built with hidden visibility, so the dynamic symbol table lacks it).

Loading goes through a descriptor the caller checked (cache.open_entry, or
a memfd of bytes compiled just now): the library is dlopened as
``/proc/<pid>/fd/<n>``, and the descriptor stays open while it is loaded,
so no path is looked up again, and each load has a name of its own (dlopen
would hand back an earlier library loaded under the same name). The
:class:`Library` is what keeps the code mapped: when the last reference to
it goes (its Module, the Module's Kernels, their launchers and graph nodes
hold it), it is dlclosed, or as soon as no CPU stream has queued work.
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
import weakref
from dataclasses import dataclass

import _ctypes

ABI_VERSION = 6


class _Param(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("align", ctypes.c_uint32), ("kind", ctypes.c_uint32)]


class _Kernel(ctypes.Structure):
    _fields_ = [("expr", ctypes.c_char_p), ("function", ctypes.c_void_p),
                ("run", ctypes.c_void_p), ("nparams", ctypes.c_uint32),
                ("tier", ctypes.c_uint32), ("params", ctypes.POINTER(_Param)),
                ("fault", ctypes.c_void_p), ("small", ctypes.c_void_p),
                ("direct", ctypes.c_void_p)]


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


def elf_symbols(path, kind: int) -> list[tuple[str, int, int]]:
    """(name, offset from the load base, size) of the defined symbols of one
    type (2: functions, 1: objects) in an ELF64 little-endian shared object's
    .symtab (``path``: a file, or its bytes); empty for anything else."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        data = bytes(path)
    else:
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


def _function_symbols(path) -> dict[int, str]:
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
    image = library.image() if isinstance(library, Library) else path
    for sym, value, size in elf_symbols(image, 1):
        if sym in wanted:
            return base + value, size
    return None


def _load_base(address: int) -> int | None:
    info = _DlInfo()
    if address and _dladdr(address, ctypes.byref(info)):
        return info.dli_fbase
    return None


class Library(ctypes.CDLL):
    """A loaded kernel module: dlclosed (and its descriptor closed) when the
    last reference to it goes. ``kernels``, ``meta`` and ``path`` are set by
    the compiler; ``name`` is the /proc/<pid>/fd path it was loaded as."""

    def __init__(self, fd: int, shown: str):
        with _load_lock:
            try:
                st = os.fstat(fd)
                file_id = (st.st_dev, st.st_ino)
                # The file already loaded (the same cache entry again): opened
                # by the name it was loaded as. Under a new name, dlopen would
                # find the loaded file by its device and inode and keep the new
                # name as an alias of it, which the name check cannot see: once
                # this descriptor closed and its number came back, the next
                # module opened by that name would be handed this one.
                loaded = _loaded_name(file_id)
                if loaded is None:
                    fd = _fresh_name(fd)
                own = f"/proc/{os.getpid()}/fd/{fd}"
                name = loaded or own
                super().__init__(name, mode=ctypes.RTLD_LOCAL | getattr(ctypes, "RTLD_NOW", 2))
            except BaseException:
                os.close(fd)   # the caller's descriptor, or _fresh_name's duplicate of it
                raise
            got = _link_map_name(self._handle)
            if got != name:   # an alias all the same: its number stays taken
                _pinned.append(fd)
                if _file_id_of(got) != file_id:
                    _ctypes.dlclose(self._handle)
                    raise OSError(f"dlopen of {shown} returned another library ({got})")
                fd = os.dup(fd)
                own = f"/proc/{os.getpid()}/fd/{fd}"
            elif loaded is None:
                _by_file[file_id] = name
        self.fd = fd
        self.shown = shown
        self.kernels: list = []
        self.meta: dict = {}
        self.path = shown
        fin = weakref.finalize(self, _unload, self._handle, fd, own)
        fin.atexit = False    # at exit the process unmaps everything anyway

    def image(self) -> bytes:
        """The shared object's bytes, read through its descriptor."""
        out, pos = [], 0
        while True:
            b = os.pread(self.fd, 1 << 20, pos)
            if not b:
                return b"".join(out)
            out.append(b)
            pos += len(b)


_pending: list[tuple[int, int, str]] = []   # (handle, fd, name) waiting for idle streams
_pending_lock = threading.Lock()
_unloads = 0                           # libraries dlclosed so far (for tests)
# Descriptors of modules that dlclose left mapped (a module whose thread-local
# objects have destructors, or with GNU-unique symbols, cannot be unloaded):
# kept open, so their /proc/<pid>/fd/<n> names are never given to another
# module (dlopen would hand back the old one by its name).
_pinned: list[int] = []
_load_lock = threading.Lock()
# (st_dev, st_ino) of each file a module was loaded from -> the name it was
# loaded as (a stale row is dropped when read: _loaded_name).
_by_file: dict[tuple[int, int], str] = {}
_libc_dlinfo = ctypes.CDLL(None).dlinfo
_libc_dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
_libc_dlinfo.restype = ctypes.c_int
_RTLD_DI_LINKMAP = 2


def _link_map_name(handle: int) -> str | None:
    """The name of the library a dlopen handle is (its link map's l_name,
    the second field of <link.h>'s public struct link_map)."""
    lm = ctypes.c_void_p()
    if _libc_dlinfo(handle, _RTLD_DI_LINKMAP, ctypes.byref(lm)) != 0 or not lm.value:
        return None
    raw = ctypes.c_char_p.from_address(lm.value + ctypes.sizeof(ctypes.c_void_p)).value
    return raw.decode() if raw is not None else None


def _file_id_of(name: str | None) -> tuple[int, int] | None:
    try:
        st = os.stat(name) if name else None
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if st else None


def _loaded_name(file_id: tuple[int, int]) -> str | None:
    """The name a still-mapped module from this file was loaded as, while
    that name still leads to the file; else None (the row is dropped)."""
    name = _by_file.get(file_id)
    if name is None:
        return None
    if _file_id_of(name) == file_id and _loaded_as(name):
        return name
    del _by_file[file_id]
    return None


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]


_PHDR_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t,
                                  ctypes.c_void_p)
_libc = ctypes.CDLL(None)
_libc.dl_iterate_phdr.argtypes = [_PHDR_CALLBACK, ctypes.c_void_p]


def _loaded_as(name: str) -> bool:
    """Whether a mapped library has exactly this name (the loader's own list,
    dl_iterate_phdr: by name only; dlopen(RTLD_NOLOAD) would also answer yes
    for the same file loaded under another name)."""
    want, found = name.encode(), []

    def each(info, size, data):
        if info.contents.name == want:
            found.append(True)
            return 1
        return 0
    _libc.dl_iterate_phdr(_PHDR_CALLBACK(each), None)
    return bool(found)


def _fresh_name(fd: int) -> int:
    """`fd`, or a duplicate of it, whose /proc path no mapped library has as
    its name (a guard: reap() already pins the names it cannot free)."""
    held = []
    while _loaded_as(f"/proc/{os.getpid()}/fd/{fd}"):
        held.append(fd)
        fd = os.dup(fd)
    for old in held:   # the names are taken: keep those numbers out of use
        _pinned.append(old)
    return fd


def _unload(handle: int, fd: int, name: str) -> None:
    with _pending_lock:
        _pending.append((handle, fd, name))
    reap()


def reap() -> int:
    """dlcloses the libraries that nothing references any more, unless a
    CPU stream has queued work (which may run their code; they are closed
    at a later load, collection or reap() instead). Returns how many were
    closed."""
    global _unloads
    if not _pending or _streams_busy():
        return 0
    with _pending_lock:
        todo = _pending[:]
        del _pending[:]
    for handle, fd, name in todo:
        try:
            _ctypes.dlclose(handle)
        except OSError:
            pass
        if _loaded_as(name):
            _pinned.append(fd)   # still mapped: its name must stay taken
            continue
        try:
            os.close(fd)
        except OSError:
            pass
    _unloads += len(todo)
    return len(todo)


def _streams_busy() -> bool:
    """Whether any CPU stream may have queued work (the runtime's count of
    queued launches, ql_cpu_queued_work; the runtime is loaded by then, as
    any launch loads it)."""
    from . import runtime
    return runtime.library().ql_cpu_queued_work() != 0


def load_fd(fd: int, shown: str, image: bytes | None = None) -> tuple[Library, list[LoadedKernel]]:
    """dlopens the module open at ``fd`` (which the Library then owns and
    closes when unloaded; ``shown`` names it in messages, ``image`` is its
    bytes when the caller has them); returns the library and its kernels.

    Raises OSError if it cannot be loaded, ValueError if its table is not of
    this ABI version (the caller treats both as a cache miss; fd is closed).
    """
    reap()
    lib = Library(fd, shown)   # which closes or keeps fd when it fails
    table = _Module.in_dll(lib, "__ql_module")
    if table.abi_version != ABI_VERSION:
        raise ValueError(f"kernel module ABI {table.abi_version}, expected {ABI_VERSION}")
    kernels = []
    symbols = _function_symbols(image if image is not None else lib.image()) \
        if table.nkernels else {}
    base = _load_base(ctypes.addressof(table)) or 0
    for i in range(table.nkernels):
        row = table.kernels[i]
        params = tuple((row.params[j].size, row.params[j].align, row.params[j].kind)
                       for j in range(row.nparams))
        kernels.append(LoadedKernel(row.expr.decode(), symbols.get((row.function or 0) - base),
                                    ctypes.addressof(row), params, row.tier))
    return lib, kernels


def memfd_of(data: bytes, name: str) -> int:
    """A sealed in-memory file holding ``data`` (for a module that could not
    be cached): loadable through /proc/<pid>/fd like a cache entry."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | getattr(os, "MFD_ALLOW_SEALING", 0))
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        import fcntl
        seals = getattr(fcntl, "F_SEAL_SEAL", 0) | getattr(fcntl, "F_SEAL_SHRINK", 0) | \
            getattr(fcntl, "F_SEAL_GROW", 0) | getattr(fcntl, "F_SEAL_WRITE", 0)
        if seals and hasattr(fcntl, "F_ADD_SEALS"):
            try:
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
            except OSError:
                pass
    except BaseException:
        os.close(fd)
        raise
    return fd


def load(path: str) -> tuple[Library, list[LoadedKernel]]:
    """dlopens the module at ``path`` (opened without following a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    return load_fd(fd, str(path))

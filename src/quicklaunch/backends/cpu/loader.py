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
        name = f"/proc/{os.getpid()}/fd/{fd}"
        super().__init__(name, mode=ctypes.RTLD_LOCAL | getattr(ctypes, "RTLD_NOW", 2))
        self.fd = fd
        self.shown = shown
        self.kernels: list = []
        self.meta: dict = {}
        self.path = shown
        fin = weakref.finalize(self, _unload, self._handle, fd)
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


_pending: list[tuple[int, int]] = []   # (dlopen handle, fd) waiting for idle streams
_pending_lock = threading.Lock()
_unloads = 0                           # libraries dlclosed so far (for tests)


def _unload(handle: int, fd: int) -> None:
    with _pending_lock:
        _pending.append((handle, fd))
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
    for handle, fd in todo:
        try:
            _ctypes.dlclose(handle)
        except OSError:
            pass
        try:
            os.close(fd)
        except OSError:
            pass
    _unloads += len(todo)
    return len(todo)


_counter: list = []   # [c_uint64 of the runtime's queued-work count, or None]


def _streams_busy() -> bool:
    """Whether any CPU stream may have queued work: the runtime's count of
    queued launches (read from its symbol table), or, where it cannot be
    found, whether any stream was ever made."""
    from . import device
    backend = device._backend[0] if device._backend else None
    if backend is None or "_ops" not in backend.__dict__:
        return False   # no stream, graph or event was ever made: nothing is queued
    if not _counter:
        _counter.append(_find_counter())
    c = _counter[0]
    return True if c is None else c.value != 0


def _find_counter():
    """The runtime's ``ql_async_pending`` (hidden, so found in its .symtab),
    read from the very file that is mapped (the path may have been replaced
    since it was loaded: a rebuild), or None."""
    try:
        from . import runtime
        lib = runtime.library()
        entry = ctypes.cast(lib.ql_cpu_launch, ctypes.c_void_p).value
        base = _load_base(entry)
        image = _mapped_image(base) if base else None
        for name, value, size in elf_symbols(image, 1) if image else ():
            if name == "ql_async_pending" and size == 8:
                return ctypes.c_uint64.from_address(base + value)
    except Exception:  # noqa: BLE001 - stripped or moved: stay conservative
        pass
    return None


def _mapped_image(base: int) -> bytes | None:
    """The bytes of the file mapped at ``base``, if the file at its path is
    still that file (same device and inode), else None."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and int(fields[0].split("-")[0], 16) == base:
                major, minor = (int(x, 16) for x in fields[3].split(":"))
                ino, path = int(fields[4]), fields[5].rstrip("\n")
                break
        else:
            return None
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if st.st_ino != ino or os.major(st.st_dev) != major or os.minor(st.st_dev) != minor:
            return None
        out = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(out)
            out.append(b)
    finally:
        os.close(fd)


def load_fd(fd: int, shown: str, image: bytes | None = None) -> tuple[Library, list[LoadedKernel]]:
    """dlopens the module open at ``fd`` (which the Library then owns and
    closes when unloaded; ``shown`` names it in messages, ``image`` is its
    bytes when the caller has them); returns the library and its kernels.

    Raises OSError if it cannot be loaded, ValueError if its table is not of
    this ABI version (the caller treats both as a cache miss; fd is closed).
    """
    reap()
    try:
        lib = Library(fd, shown)
    except BaseException:
        os.close(fd)
        raise
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

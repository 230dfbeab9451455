"""The CPU device's memory checker: ``ql.compile(..., memcheck=True)`` or
``QUICKLAUNCH_MEMCHECK=1``.

A memcheck build is a debug build (``-O0 -g``, the Python stub per kernel)
that GCC instruments with outline address-sanitizer calls (no ASan runtime:
toolchain.MEMCHECK_FLAGS). The module defines the callbacks itself
(include/ql_memcheck.h): every load and store through a pointer is checked,
before it happens, against the launch's argument buffers, its shared memory,
the thread's stack and the module's globals. Here: the stub's side. Before
each launch the stub gives the module each pointer argument's
``[address, address + nbytes)`` (``ql_memcheck_set``); once per module, the
offsets and sizes of its thread-local objects (static ``__shared__``
variables, from the symbol table); after a failed launch, the checker's
report becomes a ``LaunchError`` naming the parameter, the variable and the
kernel's source line (addr2line on the module's debug info).

Launches of one memcheck module are serialised (the buffer table is the
module's), and a launch on a ``ql.Stream`` waits for it. Region fission is
never used in memcheck builds (they are debug builds: every kernel with
barriers runs as fibers).
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
import threading

import numpy as np

from ...capture import active_capture
from ...errors import CompileError, LaunchError, LaunchValueError
from .toolchain import INCLUDE_DIR

ENV = "QUICKLAUNCH_MEMCHECK"
MODE = "memcheck"    # the `debug` value a memcheck build is compiled with


def requested(memcheck, device) -> bool:
    """Whether a compile is a memcheck build: ``memcheck`` if given, else
    $QUICKLAUNCH_MEMCHECK (0/1). Only the CPU device, built by g++, has one
    (the variable leaves a GPU's compiles alone; memcheck=True there is an
    error)."""
    kind = getattr(device, "kind", "cpu")
    if memcheck is None:
        value = os.environ.get(ENV, "").strip()
        if value not in ("", "0", "1"):
            raise CompileError(f"{ENV}={value!r}: expected 0 or 1")
        memcheck = value == "1" and kind == "cpu"
    memcheck = bool(memcheck)
    if not memcheck:
        return False
    if kind != "cpu":
        raise CompileError(f"memcheck=True is the CPU device's memory checker; on "
                           f"{getattr(device, 'name', kind)} use NVIDIA's compute-sanitizer "
                           f"(or ROCm's address sanitizer), or compile for device='cpu'")
    from . import toolchain
    compiler = toolchain.find_compiler()
    if "clang" in compiler.version.lower() or "g++" not in compiler.version \
            and "GCC" not in compiler.version:
        raise CompileError(f"memcheck builds need g++ (GCC's outline sanitizer calls); the "
                           f"CPU device's compiler is {compiler.path} ({compiler.version}): "
                           f"set CXX=g++")
    return True


# ------------------------------------------------------------- per module
class _State:
    """A loaded memcheck module's entry points and tables."""

    def __init__(self, library):
        self.lock = threading.Lock()
        self.library = library
        self.set = library.ql_memcheck_set
        self.set.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        self.set.restype = None
        self.global_name = library.ql_memcheck_global_name
        self.global_name.argtypes = [ctypes.c_uint32]
        self.global_name.restype = ctypes.c_char_p
        from .loader import elf_symbols
        image = library.image()
        # STT_TLS: (name, offset, size), less the redzones between __shared__ ones
        objs = sorted((o for o in elf_symbols(image, 6) if "__ql_mc_redzone_" not in o[0]),
                      key=lambda o: o[1])
        self.tls_names = [n for n, _, _ in objs]
        self.tls = (ctypes.c_uint64 * (2 * len(objs)))(
            *[v for _, off, size in objs for v in (off, max(size, 0))])
        tls_fn = library.ql_memcheck_tls
        tls_fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        tls_fn.restype = None
        tls_fn(ctypes.addressof(self.tls), len(objs))   # kept alive by self.tls
        self.buffer = (ctypes.c_uint64 * 768)()
        self.lines: dict[int, str] = {}


_states_lock = threading.Lock()


def _state(library) -> _State:
    st = getattr(library, "_ql_memcheck", None)
    if st is None:
        with _states_lock:
            st = getattr(library, "_ql_memcheck", None)
            if st is None:
                st = _State(library)
                library._ql_memcheck = st
    return st


def _extent(a) -> tuple[int, int, str] | None:
    """(address, nbytes, note) of an array argument; None for a null or
    non-pointer argument."""
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        from ..._launch import _array_address
        return _array_address(a), int(a.nbytes), ""
    ptr, nbytes = getattr(a, "ptr", None), getattr(a, "nbytes", None)
    if isinstance(ptr, (int, np.integer)) and isinstance(nbytes, (int, np.integer)):
        return int(ptr), int(nbytes), ""
    iface = getattr(a, "__array_interface__", None)
    if isinstance(iface, dict) and isinstance(iface.get("data"), tuple):
        try:
            arr = np.asarray(a)
            return int(iface["data"][0]), int(arr.nbytes), ""
        except Exception:   # noqa: BLE001 - an odd object: size unknown
            pass
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        if int(a) == 0:
            return None
        return int(a), 0, " (a raw address: its size is unknown to memcheck)"
    return None


def checked(kernel, run):
    """``run`` (a configured launch function) wrapped for a memcheck launch:
    the argument table set first, the checker's report rewritten after."""
    library = kernel.module._library
    st = _state(library)
    pointers = [(i, p) for i, p in enumerate(kernel.params) if p.kind.endswith("pointer")]
    launcher = getattr(run, "__self__", None)
    stream = getattr(launcher, "stream", None)
    sync = getattr(stream, "synchronize", None)

    def launch(*args):
        if active_capture() is not None:
            raise LaunchValueError(
                f"kernel '{kernel.name}' is a memcheck build: its launches check against "
                f"buffers set at each launch, which a graph replay would not set; record the "
                f"graph from a release or debug build (ql.compile without memcheck=True)")
        buf, n, notes = st.buffer, 0, {}
        for i, p in pointers:
            if i >= len(args) or n >= 256:
                continue
            ext = _extent(args[i])
            if ext is None:
                continue
            buf[3 * n], buf[3 * n + 1], buf[3 * n + 2] = ext[0], ext[1], i
            if ext[2]:
                notes[i] = ext[2]
            n += 1
        with st.lock:
            st.set(ctypes.addressof(buf), n)
            try:
                run(*args)
                if sync is not None:
                    sync()
            except LaunchError as exc:
                text = str(exc)
                if "[ql-memcheck " not in text:
                    raise
                new = type(exc).__new__(type(exc))
                new.__dict__.update(exc.__dict__)
                new.args = (_rewrite(kernel, st, text, args, notes),)
                raise new from None
            finally:
                st.set(0, 0)

    launch.__self__ = launcher
    launch.__name__ = getattr(run, "__name__", "launch")
    return launch


_TAIL = re.compile(r"\s*\[ql-memcheck pc=(0x[0-9a-f]+|0) up=(0x[0-9a-f]+|0) where=(\d) "
                   r"index=(\d+) "
                   r"lo=(0x[0-9a-f]+|0) size=(\d+) addr=(0x[0-9a-f]+|0) n=(\d+) "
                   r"write=(\d)\]")
_NEAR = re.compile(r": (no buffer of the launch|-?\d+ bytes (past the end|before the start) "
                   r"of [^()]*?) \(\[0x[0-9a-f]+, \+\d+ bytes\)\)")


def _rewrite(kernel, st: _State, text: str, args, notes) -> str:
    """The checker's report with names: the parameter, the variable, the
    source line of the access."""
    m = _TAIL.search(text)
    if not m:
        return text
    pc, up, where, index = int(m[1], 16), int(m[2], 16), int(m[3]), int(m[4])
    lo, size = int(m[5], 16), int(m[6])
    head = text[:m.start()]
    near = _NEAR.search(head)
    if near:
        dist = near.group(1)
        if where == 1 and index < len(kernel.params):
            p = kernel.params[index]
            what = (f"parameter {index + 1} '{p.name}' ({p.ctype}: {size} bytes at "
                    f"{lo:#x}{notes.get(index, '')})")
        elif where == 2:
            what = f"the launch's dynamic shared memory ({size} bytes at {lo:#x})"
        elif where == 3:
            name = _demangle(st.tls_names[index]) if index < len(st.tls_names) else "?"
            what = f"__shared__ variable '{name}' ({size} bytes at {lo:#x})"
        elif where == 4:
            raw = st.global_name(index)
            name = raw.decode(errors="replace") if raw else "?"
            what = f"global '{name}' ({size} bytes at {lo:#x})"
        elif where == 6:
            what = f"a {size}-byte block of device-side malloc at {lo:#x}"
        else:
            what = None
        if what is None:
            dist = "not inside any buffer of the launch (nor its shared memory, stack or " \
                   "the module's globals)"
        else:
            dist = re.sub(r" of [^()]*$", f" of {what}", dist)
        head = head[:near.start()] + ": " + dist + head[near.end():]
    where_text = _source_line(st, pc)
    if where_text.startswith(str(INCLUDE_DIR)):   # in the shim (an atomic): name its caller
        func = where_text.rsplit("(in ", 1)[-1].rstrip(")")
        caller = _source_line(st, up)
        if caller and not caller.startswith(str(INCLUDE_DIR)):
            where_text = f"{caller.split(' (in ')[0]} ({func} called in " \
                         f"{caller.rsplit('(in ', 1)[-1]}"
    if where_text:
        head = head.replace(" in block (", f" at {where_text}, in block (", 1)
    return head


def _demangle(name: str) -> str:
    if not name.startswith("_Z"):
        return name
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or name
    except (OSError, subprocess.SubprocessError):
        return name


def _source_line(st: _State, pc: int) -> str:
    """file:line (function) of the instruction that called the checker, from
    the module's debug info (addr2line); '' when it cannot be said."""
    if not pc:
        return ""
    if pc in st.lines:
        return st.lines[pc]
    path = f"/proc/{os.getpid()}/fd/{st.library.fd}"
    text = ""
    try:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", path, f"{pc - 1:#x}"],
                             capture_output=True, text=True, timeout=30)
        lines = out.stdout.splitlines()
        if len(lines) >= 2 and not lines[1].startswith("??"):
            loc = re.sub(r" \(discriminator \d+\)$", "", lines[1])
            func = lines[0].split("(")[0]
            text = f"{loc} (in {func})" if func and func != "??" else loc
    except (OSError, subprocess.SubprocessError):
        pass
    st.lines[pc] = text
    return text

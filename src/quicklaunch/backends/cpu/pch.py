"""The shim's precompiled header, for GCC builds of CPU kernel modules.

Every module's translation unit starts with ``#include "cuda_shim.h"``:
about 26,000 lines once preprocessed, 0.3 s of a small kernel's 0.75 s
compile. GCC parses it once per set of build flags into a precompiled
header, kept in the compile cache (kind "cpu-pch", key: the compiler's
identity, the flags, every shim header's contents), and a module's compile
finds it ahead of the header: ``cuda_shim.h.gch`` in a directory of the
compile's own, searched first (``-isystem``).

* GCC checks a precompiled header against the compile that finds it (the
  options it records, every macro the header uses) and reads the header
  itself when it does not match. A header that no longer fits costs time,
  never a different build.
* The header is built for a flag set the second time one of its modules
  is compiled (the first leaves a marker in the cache: a flag set used
  once, such as a test's one-off options, costs no build). That compile
  does not wait: it starts the build in a process beside it (its own
  process group) and compiles from the text. The next compile in the same
  process, or the process's exit, stores the finished header in the cache
  (atomically, with its integrity hash, as any entry), and every compile
  after that, in any process, uses it. At exit a build still running is
  waited for up to EXIT_WAIT seconds in all, then stopped; it leaves
  nothing behind.
* Compiles that include something before the shim (``-include``: memcheck
  builds, a user's option) cannot use one, and none is built for them;
  neither for clang, whose precompiled headers are found by another rule.
* ``QUICKLAUNCH_CPU_PCH=0`` turns it off.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from ... import cache as cache_mod
from ...cache import cache_key
from . import toolchain

ENV = "QUICKLAUNCH_CPU_PCH"
HEADER = "cuda_shim.h"
KIND = "cpu-pch"
SUFFIX = ".gch"
SEEN = ".seen"       # the marker of a flag set compiled once
EXIT_WAIT = 3.0

_lock = threading.Lock()
# key -> (the build, its directory, the cache it goes to)
_building: dict[str, tuple[subprocess.Popen, str, object]] = {}
_failed: set[str] = set()     # keys whose build failed in this process: not tried again
_checked: dict[str, tuple] = {}   # header path -> the file whose hash was checked


def _forked_child() -> None:
    """A forked child leaves its parent's builds to the parent."""
    _building.clear()


os.register_at_fork(after_in_child=_forked_child)


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "no", "off", "false")


def _flags(command: list[str]) -> list[str] | None:
    """The compile's flags as the header's build takes them (no output, no
    source, no link), or None where a precompiled header cannot serve it."""
    if "-include" in command or any(a.startswith("-include") for a in command):
        return None
    flags, skip = [], False
    for a in command[1:-1]:          # command[-1] is the source
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-shared":
            flags.append(a)
    return flags


def key_of(compiler: toolchain.Compiler, flags: list[str]) -> str:
    return cache_key("cpu-pch-1", compiler.identity, "\0".join(flags),
                               toolchain.headers_digest_material())


def usable(compiler: toolchain.Compiler, command: list[str]) -> str | None:
    """The cache key of the precompiled header `command` (a module's
    compile) can use, or None where it cannot use one."""
    if not enabled() or "clang" in compiler.version.lower():
        return None
    flags = _flags(command)
    return None if flags is None else key_of(compiler, flags)


def prepare(cache, compiler: toolchain.Compiler, command: list[str], tmp: Path) -> list[str]:
    """The arguments to insert before the shim's include directory in
    `command`: ``-isystem <tmp>/pch``, where the cache's header is linked,
    or [] (the header is missing, being built, or cannot serve this
    compile; a missing one's build is started here)."""
    key = usable(compiler, command)
    if key is None:
        return []
    _collect()
    try:
        path = _verified_path(cache, key)
    except (OSError, cache_mod.CacheError):
        return []
    if path is None:
        try:
            seen = cache.read(KIND, key, SEEN) is not None
            if not seen:
                cache.put(KIND, key, SEEN, b"")
        except (OSError, cache_mod.CacheError):
            return []
        if seen:
            _start(cache, key, compiler, command)
        return []
    where = tmp / "pch"
    where.mkdir()
    (where / (HEADER + ".gch")).symlink_to(path)
    # GCC opens the header beside its precompiled one wherever it does not
    # use that (a second #include of the shim, from cuda/std headers, or a
    # header that does not fit): this one reads the shim's own.
    (where / HEADER).write_text(f"#include_next <{HEADER}>\n")
    return ["-isystem", str(where)]


def _verified_path(cache, key: str) -> str | None:
    """The header's path in the cache, its integrity hash checked once per
    process and file (24 MB: 80 ms to hash), or None on a miss or a corrupt
    entry. The cache is the user's private directory (cache.py checks it),
    and GCC checks what it reads as a precompiled header anyway."""
    path = str(cache.path(KIND, key, SUFFIX))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if _checked.get(path) == ident:
        return path
    if cache.read(KIND, key, SUFFIX) is None:
        return None
    _checked[path] = ident
    return path


def forget(cache, compiler: toolchain.Compiler, command: list[str]) -> None:
    """Drops the header a compile used (a compile that failed on it: one
    GCC could not read)."""
    key = usable(compiler, command)
    if key is not None:
        _failed.add(key)
        try:
            path = cache.path(KIND, key, SUFFIX)
            for p in (path, Path(str(path) + cache_mod.SIDECAR)):
                p.unlink(missing_ok=True)
        except (OSError, cache_mod.CacheError):
            pass


def _start(cache, key: str, compiler: toolchain.Compiler, command: list[str]) -> None:
    with _lock:
        if key in _building or key in _failed:
            return
        where = tempfile.mkdtemp(prefix="quicklaunch-pch-")
        # The shim through a one-line header in another directory, so that it
        # is a system header in the precompiled one too (as when it is found
        # by -isystem): its diagnostics stay hidden from the user's.
        Path(where, "shim.h").write_text(f'#include <{HEADER}>\n')
        build = [command[0], *_flags(command), "-w", "-x", "c++-header",
                 str(Path(where, "shim.h")), "-o", str(Path(where, HEADER + ".gch"))]
        try:
            proc = subprocess.Popen(build, cwd=where, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError:
            _failed.add(key)
            shutil.rmtree(where, ignore_errors=True)
            return
        _building[key] = (proc, where, cache)


def _collect() -> None:
    """Stores every finished build's header in its cache."""
    with _lock:
        done = [(k, *b) for k, b in _building.items() if b[0].poll() is not None]
        for k, *_ in done:
            del _building[k]
    for key, proc, where, cache in done:
        try:
            out = Path(where, HEADER + ".gch")
            if proc.returncode == 0 and out.is_file():
                cache.put(KIND, key, SUFFIX, out.read_bytes())
            else:
                _failed.add(key)
        except (OSError, cache_mod.CacheError):
            _failed.add(key)
        finally:
            shutil.rmtree(where, ignore_errors=True)


def wait() -> None:
    """Waits for the builds started in this process and stores their
    headers (tests; a program need not call it)."""
    with _lock:
        procs = [b[0] for b in _building.values()]
    for p in procs:
        p.wait()
    _collect()


@atexit.register
def _stop() -> None:
    """At exit: the builds that finish within EXIT_WAIT seconds are stored,
    the others stopped."""
    deadline = time.monotonic() + EXIT_WAIT
    with _lock:
        procs = [b[0] for b in _building.values()]
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    _collect()
    with _lock:
        pending = list(_building.values())
        _building.clear()
    for proc, where, _ in pending:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except (subprocess.TimeoutExpired, OSError):
            pass
        shutil.rmtree(where, ignore_errors=True)

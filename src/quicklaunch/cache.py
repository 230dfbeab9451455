"""The on-disk compile cache: keys, atomic writes, integrity, safety.

Layout (``root`` is :func:`default_cache_dir` unless given)::

    root/CACHEDIR.TAG                   marks the tree as a cache for backup tools
    root/<kind>/<key[:2]>/<key><suffix>           the entry (e.g. a .so)
    root/<kind>/<key[:2]>/<key><suffix>.sha256    sidecar: "<FORMAT_VERSION> <size> <sha256>"

Safety (threat model: docs/cache.md): loading a shared object runs its
code, so no other local user may be able to choose what we load. The root
is resolved once (a symlink to it is followed then, and only then), every
ancestor of the resolved root is checked (owned by root or by us, and not
writable by others unless sticky, as /tmp is), and the root is kept open as
a directory descriptor. Everything below it is reached relative to that
descriptor without following links (``O_NOFOLLOW``, ``O_DIRECTORY``), and
the owner and mode of the root, the kind and fan-out directories and the
entry itself are checked with ``fstat`` on every read and write: a tree
renamed or a directory made writable after the first use is noticed at the
next load. Anything unsafe raises :class:`CacheError`. :meth:`open_entry`
hands back the checked descriptor, so a caller loads exactly the bytes that
were checked (the CPU loader dlopens ``/proc/<pid>/fd/<n>``).

Integrity: data and sidecar are each written to a temporary file in the
same directory, fsynced and ``os.replace``-d into place, data first. A read
accepts an entry only if the bytes it read hash to the sidecar's digest, so
racing writers can cause misses but never an accepted torn or mixed entry.
Corrupt entries are misses (and removed best-effort); they never raise.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
import threading
from contextlib import suppress
from pathlib import Path

from .errors import CacheError

__all__ = ["FORMAT_VERSION", "cache_key", "default_cache_dir", "CompileCache"]

FORMAT_VERSION = "quicklaunch-cache-1"
SIDECAR = ".sha256"
_TMP = ".tmp-"
_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# quicklaunch compile cache\n"
_KIND = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*").fullmatch
_KEY = re.compile(r"[0-9a-f]{2,128}").fullmatch
_SUFFIX = re.compile(r"[A-Za-z0-9_.-]*").fullmatch
_FAN = re.compile(r"[0-9a-f]{2}").fullmatch
_safe: set[str] = set()   # kept for old callers: nothing is memoized any more
_FIX = "or set QUICKLAUNCH_CACHE_DIR to a private directory you own"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC   # NONBLOCK: a FIFO
_LINKY = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


def cache_key(*parts: str | bytes) -> str:
    """sha256 hex over FORMAT_VERSION and each part, each length-prefixed."""
    h = hashlib.sha256()
    for part in (FORMAT_VERSION, *parts):
        if isinstance(part, str):
            part = part.encode("utf-8", "surrogatepass")
        elif not isinstance(part, (bytes, bytearray, memoryview)):
            raise TypeError(f"cache_key parts must be str or bytes, not {type(part).__name__}")
        b = bytes(part)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def default_cache_dir() -> Path:
    """$QUICKLAUNCH_CACHE_DIR, else $XDG_CACHE_HOME/quicklaunch, else ~/.cache/quicklaunch."""
    env = os.environ.get("QUICKLAUNCH_CACHE_DIR")
    if env:
        return Path(os.path.abspath(os.path.expanduser(env)))
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec says to ignore relative paths
        return Path(xdg) / "quicklaunch"
    return Path.home() / ".cache" / "quicklaunch"


def _check_args(kind: str, key: str, suffix: str) -> None:
    if not (_KIND(kind) and _KEY(key) and _SUFFIX(suffix)):
        raise ValueError(f"bad cache kind {kind!r}, key {key!r} or suffix {suffix!r}")


def _check_st(st: os.stat_result, what: str, shown: str, directory: bool = True) -> None:
    """Raise CacheError unless `st` is a directory (or regular file) that
    only we own and can write. `what` names it, `shown` is its path."""
    noun = "directory" if directory else "file"
    if not (stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)):
        raise CacheError(f"quicklaunch cache {noun} {what} is not a {'directory' if directory else 'regular file'}; "
                         f"remove it, {_FIX}")
    uid = os.getuid()
    if st.st_uid != uid:
        raise CacheError(f"quicklaunch cache {noun} {what} is owned by uid {st.st_uid}, "
                         f"not the current user (uid {uid}); loading compiled code from it "
                         f"would run code another user controls. Fix: chown it, {_FIX}")
    if st.st_mode & 0o022:
        raise CacheError(f"quicklaunch cache {noun} {what} is writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):04o}); loading compiled code from "
                         f"it would run code others can plant. Fix: chmod "
                         f"{700 if directory else 600} {shown}, {_FIX}")


def _check_ancestor(st: os.stat_result, path: str, root: str) -> None:
    """An ancestor of the root may be owned by root or by us, and writable
    by others only when sticky (as /tmp is): anyone else could rename the
    cache tree away and put one of their own in its place."""
    uid = os.getuid()
    if st.st_uid not in (0, uid):
        raise CacheError(f"quicklaunch cache directory {root} lies under {path}, which is owned "
                         f"by uid {st.st_uid}, not by root or the current user (uid {uid}); "
                         f"that user could replace the cache with code of theirs. {_FIX[0].upper()}{_FIX[1:]}")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise CacheError(f"quicklaunch cache directory {root} lies under {path}, which is "
                         f"writable by group or others and not sticky (mode "
                         f"{stat.S_IMODE(st.st_mode):04o}); they could replace the cache with "
                         f"code of theirs. Fix: chmod go-w {path} (or chmod +t), {_FIX}")


def _open_dir(parent: int, name: str, shown: str, create: bool) -> int | None:
    """The checked descriptor of directory `name` under `parent` (created
    0700 when missing and `create`), never through a link; None if absent."""
    made = False
    try:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(name, 0o700, dir_fd=parent)
                made = True
            except FileExistsError:
                pass                # another process made it; checked below
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as e:
        if e.errno in _LINKY:
            raise CacheError(f"quicklaunch cache directory {shown} is a symlink or not a "
                             f"directory; the cache follows no links below its root. Remove "
                             f"it, {_FIX}") from None
        raise
    try:
        if made:
            os.fchmod(fd, 0o700)    # in case the umask removed owner bits
        _check_st(os.fstat(fd), shown, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_atomic(dfd: int, name: str, data: bytes) -> None:
    tmp = f"{_TMP}{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o600,
                 dir_fd=dfd)
    try:
        try:
            os.fchmod(fd, 0o600)    # owner-only whatever the umask; all dlopen needs
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _read_fd(fd: int) -> bytes:
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _discard(dfd: int, name: str, ino: int) -> None:
    """Remove `name` if it is still the file we read (don't hit a fresh rewrite)."""
    with suppress(OSError):
        if os.stat(name, dir_fd=dfd, follow_symlinks=False).st_ino == ino:
            os.unlink(name, dir_fd=dfd)


class CompileCache:
    """Content-addressed store of compiled artifacts under one root directory."""

    def __init__(self, root: Path | None = None):
        self._given = None if root is None else Path(os.path.abspath(os.path.expanduser(root)))
        self._root: str | None = None   # the root as given, fixed at first use
        self._real: str | None = None   # ... resolved
        self._fd: int | None = None     # ... open
        self._pid = 0
        self._lock = threading.Lock()

    def __del__(self):
        with suppress(Exception):
            self._forget()

    @property
    def root(self) -> Path:
        """The root directory (the default one is fixed at first use)."""
        if self._root is not None:
            return Path(self._root)
        return self._given if self._given is not None else default_cache_dir()

    # ------------------------------------------------------------ the tree
    def _root_fd(self) -> int:
        """The root's descriptor, opened once (ancestors checked then) and
        its owner and mode checked again on every call."""
        with self._lock:
            if self._fd is None:
                self._open_root()
            fd = self._fd
        shown = self._root if self._real == self._root else \
            f"{self._root} (a symlink to {self._real})"
        _check_st(os.fstat(fd), shown, self._root)
        return fd

    def _open_root(self) -> None:
        given = str(self.root)
        if os.path.islink(given) and not os.path.exists(given):
            raise CacheError(f"quicklaunch cache directory {given} is a dangling symlink (to "
                             f"{os.readlink(given)}); remove it, {_FIX}")
        real = os.path.realpath(given)
        shown = given if real == given else f"{given} (a symlink to {real})"
        created = False
        fd = os.open("/", _DIR_FLAGS)
        here = "/"
        try:
            parts = [p for p in real.split("/") if p]
            for i, name in enumerate(parts):
                _check_ancestor(os.fstat(fd), here, given)
                last = i == len(parts) - 1
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    try:
                        os.mkdir(name, 0o700, dir_fd=fd)
                        created = last
                    except FileExistsError:
                        pass
                    except OSError as e:
                        raise CacheError(f"cannot create quicklaunch cache directory {given}: "
                                         f"{e}; set QUICKLAUNCH_CACHE_DIR to a writable private "
                                         f"directory") from None
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    if created:
                        os.fchmod(nfd, 0o700)
                except OSError as e:
                    if e.errno in _LINKY:
                        what = "not a directory" if last else "changed while being opened"
                        raise CacheError(f"quicklaunch cache directory {shown}: "
                                         f"{os.path.join(here, name)} is {what}; remove it, "
                                         f"{_FIX}") from None
                    raise CacheError(f"quicklaunch cache directory {shown} is unusable: {e}; "
                                     f"remove it, {_FIX}") from None
                os.close(fd)
                fd, here = nfd, os.path.join(here, name)
            _check_st(os.fstat(fd), shown, given)
        except BaseException:
            os.close(fd)
            raise
        self._root, self._real, self._fd, self._pid = given, real, fd, os.getpid()
        if created:
            with suppress(OSError):
                _write_atomic(fd, "CACHEDIR.TAG", _TAG)

    def _fan(self, kind: str, key: str, create: bool) -> int | None:
        """The checked descriptor of root/kind/key[:2] (caller closes it)."""
        root = self._root_fd()
        kshown = os.path.join(self._root, kind)
        kfd = _open_dir(root, kind, kshown, create)
        if kfd is None:
            return None
        try:
            return _open_dir(kfd, key[:2], os.path.join(kshown, key[:2]), create)
        finally:
            os.close(kfd)

    def _root_dir(self) -> str:
        self._root_fd()
        return self._root

    # ----------------------------------------------------------- entries
    def path(self, kind: str, key: str, suffix: str) -> Path:
        """Where the entry lives (root/kind/key[:2]/key+suffix); creates nothing."""
        _check_args(kind, key, suffix)
        return self.root / kind / key[:2] / (key + suffix)

    def open_entry(self, kind: str, key: str, suffix: str) -> tuple[int, bytes] | None:
        """(descriptor, bytes) of a verified entry, or None on a miss or a
        corrupt entry. The descriptor (read-only, close-on-exec, the caller
        closes it) is of the very file whose owner, mode and bytes were
        checked, every directory above it checked on the way, no link followed."""
        _check_args(kind, key, suffix)
        d = self._fan(kind, key, create=False)
        if d is None:
            return None
        try:
            return self._open_in(d, kind, key, suffix)
        finally:
            os.close(d)

    def _open_in(self, d: int, kind: str, key: str, suffix: str):
        name = key + suffix
        shown = os.path.join(self._root, kind, key[:2], name)
        fds = []
        try:   # a missing file may be a writer mid-put: a plain miss, keep the rest
            for n in (name + SIDECAR, name):
                try:
                    fds.append(os.open(n, _FILE_FLAGS, dir_fd=d))
                except OSError as e:
                    if e.errno in (errno.ELOOP, errno.EMLINK):
                        raise CacheError(f"quicklaunch cache file {os.path.join(os.path.dirname(shown), n)} "
                                         f"is a symlink; the cache follows no links. Remove "
                                         f"it, {_FIX}") from None
                    return None
                st = os.fstat(fds[-1])
                _check_st(st, os.path.join(os.path.dirname(shown), n),
                          os.path.join(os.path.dirname(shown), n), directory=False)
            meta_fd, data_fd = fds
            meta = os.read(meta_fd, 200)
            data = _read_fd(data_fd)
            fields = meta.split()
            if (len(fields) == 3 and fields[0] == FORMAT_VERSION.encode()
                    and fields[1] == str(len(data)).encode()
                    and fields[2] == hashlib.sha256(data).hexdigest().encode()):
                os.lseek(data_fd, 0, os.SEEK_SET)
                fds.pop()
                return data_fd, data
            _discard(d, name, os.fstat(data_fd).st_ino)
            _discard(d, name + SIDECAR, os.fstat(meta_fd).st_ino)
            return None
        except OSError:
            return None
        finally:
            for fd in fds:
                os.close(fd)

    def read(self, kind: str, key: str, suffix: str) -> bytes | None:
        """The verified bytes of an entry, or None on a miss or a corrupt entry."""
        got = self.open_entry(kind, key, suffix)
        if got is None:
            return None
        os.close(got[0])
        return got[1]

    def get(self, kind: str, key: str, suffix: str) -> Path | None:
        """The path of a verified entry, or None on a miss or a corrupt entry.
        (A path can be swapped after this returns; load through
        :meth:`open_entry` instead.)"""
        if self.read(kind, key, suffix) is None:
            return None
        return Path(self._root, kind, key[:2], key + suffix)

    def put(self, kind: str, key: str, suffix: str, data: bytes) -> Path:
        """Store `data` atomically (data, then its sidecar); return its path.
        Raises OSError (PermissionError for a read-only directory) when it
        cannot be written, CacheError when the tree is unsafe."""
        _check_args(kind, key, suffix)
        data = bytes(data)
        meta = f"{FORMAT_VERSION} {len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()
        try:
            return self._put(kind, key, suffix, data, meta)
        except FileNotFoundError:   # directories removed under us: reopen, retry
            self._forget()
            return self._put(kind, key, suffix, data, meta)

    def _put(self, kind: str, key: str, suffix: str, data: bytes, meta: bytes) -> Path:
        d = self._fan(kind, key, create=True)
        try:
            _write_atomic(d, key + suffix, data)
            _write_atomic(d, key + suffix + SIDECAR, meta)
        finally:
            os.close(d)
        return Path(self._root, kind, key[:2], key + suffix)

    def _entries(self):
        """Yield (kind_dir, fan_dir, DirEntry) for files laid out as we lay them out."""
        root = self._root_dir()
        for k in os.scandir(root):
            if not k.is_dir(follow_symlinks=False) or not _KIND(k.name):
                continue
            for f in os.scandir(k.path):
                if f.is_dir(follow_symlinks=False) and _FAN(f.name):
                    for e in os.scandir(f.path):
                        if e.is_file(follow_symlinks=False):
                            yield k.path, f.path, e

    def stats(self) -> tuple[int, int]:
        """(number of entries, total bytes of entries and sidecars)."""
        if self._root is None and not os.path.lexists(self.root):
            return 0, 0
        n = size = 0
        for _, _, e in self._entries():
            if e.name.startswith(_TMP):
                continue
            size += e.stat(follow_symlinks=False).st_size
            n += not e.name.endswith(SIDECAR)
        return n, size

    def clear(self) -> None:
        """Remove every entry (only files in our layout; the root itself stays)."""
        if self._root is None and not os.path.lexists(self.root):
            return
        dirs = set()
        for kdir, fdir, e in list(self._entries()):
            with suppress(OSError):
                os.unlink(e.path)
            dirs.update(((1, fdir), (0, kdir)))
        for _, d in sorted(dirs, reverse=True):   # fan-out dirs before kind dirs
            with suppress(OSError):
                os.rmdir(d)
        self._forget()

    def _forget(self) -> None:
        """Close the root (it is opened, and its ancestors checked, again)."""
        fd, self._fd, self._root, self._real = self._fd, None, None, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)

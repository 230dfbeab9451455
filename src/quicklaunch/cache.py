"""The on-disk compile cache: keys, atomic writes, integrity, safety.

Layout (``root`` is :func:`default_cache_dir` unless given)::

    root/CACHEDIR.TAG                   marks the tree as a cache for backup tools
    root/<kind>/<key[:2]>/<key><suffix>           the entry (e.g. a .so)
    root/<kind>/<key[:2]>/<key><suffix>.sha256    sidecar: "<FORMAT_VERSION> <size> <sha256>"

Safety: loading a shared object runs its code, so every directory we read
from must be a directory owned by the current user and not writable by group
or others (a symlink is judged by its target). Anything else raises
:class:`CacheError`. Each directory is checked once per process.

Integrity: data and sidecar are each written to a temporary file in the
same directory, fsynced and ``os.replace``-d into place, data first. A read
accepts an entry only if the bytes it read hash to the sidecar's digest, so
racing writers can cause misses but never an accepted torn or mixed entry.
Corrupt entries are misses (and removed best-effort); they never raise.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
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
_safe: set[str] = set()   # directories validated in this process


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


def _check_dir(path: str) -> None:
    """Raise CacheError unless `path` is a directory that only we can write."""
    fix = "or set QUICKLAUNCH_CACHE_DIR to a private directory you own"
    try:
        st = os.lstat(path)
        what = path
        if stat.S_ISLNK(st.st_mode):
            what = f"{path} (a symlink to {os.path.realpath(path)})"
            st = os.stat(path)
    except OSError as e:
        raise CacheError(f"quicklaunch cache directory {path} is unusable: {e}; "
                         f"remove it, {fix}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"quicklaunch cache directory {what} is not a directory; "
                         f"remove it, {fix}")
    uid = os.getuid()
    if st.st_uid != uid:
        raise CacheError(f"quicklaunch cache directory {what} is owned by uid {st.st_uid}, "
                         f"not the current user (uid {uid}); loading compiled code from it "
                         f"would run code another user controls. Fix: chown it, {fix}")
    if st.st_mode & 0o022:
        raise CacheError(f"quicklaunch cache directory {what} is writable by group or others "
                         f"(mode {stat.S_IMODE(st.st_mode):04o}); loading compiled code from "
                         f"it would run code others can plant. Fix: chmod 700 {path}, {fix}")


def _ensure_dir(path: str, create: bool) -> bool:
    """Validate (creating 0700 if `create`) a directory once; False if absent."""
    if path in _safe:
        return True
    if not os.path.lexists(path):
        if not create:
            return False
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)   # in case the umask removed owner bits
        except FileExistsError:
            pass                    # another process made it; validated below
        except OSError as e:
            raise CacheError(f"cannot create quicklaunch cache directory {path}: {e}; "
                             "set QUICKLAUNCH_CACHE_DIR to a writable private directory") from None
    _check_dir(path)
    _safe.add(path)
    return True


def _write_atomic(directory: str, final: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=_TMP, dir=directory)
    try:
        os.fchmod(fd, 0o600)    # owner-only whatever the umask; all dlopen needs
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _discard(path: str, ino: int) -> None:
    """Remove `path` if it is still the file we read (don't hit a fresh rewrite)."""
    with suppress(OSError):
        if os.stat(path).st_ino == ino:
            os.unlink(path)


class CompileCache:
    """Content-addressed store of compiled artifacts under one root directory."""

    def __init__(self, root: Path | None = None):
        self._given = None if root is None else Path(os.path.abspath(os.path.expanduser(root)))
        self._root: str | None = None   # validated root, set on first use

    @property
    def root(self) -> Path:
        """The root directory (the default one is fixed at first use)."""
        if self._root is not None:
            return Path(self._root)
        return self._given if self._given is not None else default_cache_dir()

    def _root_dir(self) -> str:
        if self._root is None:
            root = str(self.root)
            created = not os.path.lexists(root)
            _ensure_dir(root, create=True)
            if created:
                with suppress(OSError):
                    _write_atomic(root, os.path.join(root, "CACHEDIR.TAG"), _TAG)
            self._root = root
        return self._root

    def _dir(self, kind: str, key: str, create: bool) -> str | None:
        kdir = os.path.join(self._root_dir(), kind)
        fdir = os.path.join(kdir, key[:2])
        if fdir in _safe or (_ensure_dir(kdir, create) and _ensure_dir(fdir, create)):
            return fdir
        return None

    def path(self, kind: str, key: str, suffix: str) -> Path:
        """Where the entry lives (root/kind/key[:2]/key+suffix); creates nothing."""
        _check_args(kind, key, suffix)
        return self.root / kind / key[:2] / (key + suffix)

    def read(self, kind: str, key: str, suffix: str) -> bytes | None:
        """The verified bytes of an entry, or None on a miss or a corrupt entry."""
        _check_args(kind, key, suffix)
        d = self._dir(kind, key, create=False)
        if d is None:
            return None
        data_path = os.path.join(d, key + suffix)
        meta_path = data_path + SIDECAR
        try:   # a missing file may be a writer mid-put: a plain miss, keep the rest
            with open(meta_path, "rb") as f:
                meta, meta_ino = f.read(200), os.fstat(f.fileno()).st_ino
            with open(data_path, "rb") as f:
                data, data_ino = f.read(), os.fstat(f.fileno()).st_ino
        except OSError:
            return None
        fields = meta.split()
        if (len(fields) == 3 and fields[0] == FORMAT_VERSION.encode()
                and fields[1] == str(len(data)).encode()
                and fields[2] == hashlib.sha256(data).hexdigest().encode()):
            return data
        _discard(data_path, data_ino)
        _discard(meta_path, meta_ino)
        return None

    def get(self, kind: str, key: str, suffix: str) -> Path | None:
        """The path of a verified entry, or None on a miss or a corrupt entry."""
        if self.read(kind, key, suffix) is None:
            return None
        return Path(self._root_dir(), kind, key[:2], key + suffix)

    def put(self, kind: str, key: str, suffix: str, data: bytes) -> Path:
        """Store `data` atomically (data, then its sidecar); return its path."""
        _check_args(kind, key, suffix)
        data = bytes(data)
        meta = f"{FORMAT_VERSION} {len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()
        try:
            return self._put(kind, key, suffix, data, meta)
        except FileNotFoundError:   # directories removed under us: revalidate, retry
            self._forget()
            return self._put(kind, key, suffix, data, meta)

    def _put(self, kind: str, key: str, suffix: str, data: bytes, meta: bytes) -> Path:
        d = self._dir(kind, key, create=True)
        final = os.path.join(d, key + suffix)
        _write_atomic(d, final, data)
        _write_atomic(d, final + SIDECAR, meta)
        return Path(final)

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
        """Drop memoized validations of the root and below (they may be gone)."""
        root, self._root = str(self.root), None
        _safe.difference_update([p for p in _safe if p == root or p.startswith(root + os.sep)])

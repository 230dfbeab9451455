"""One compile per node: a file lock in the compile cache around a miss.

Many processes that compile the same source at once (the ranks of an MPI job
on one node, a test runner's workers) would each run the compiler. Around a
cache miss a backend takes ``miss_lock(cache, kind, key)``: the first process
to get it compiles and stores the entry; the others wait on the lock, then
look in the cache again and load what the leader stored. The lock is an
``flock`` on ``root/locks/<kind>-<key[:2]>.lock`` (at most 256 lock files a
kind, outside the entry layout, so ``stats``/``clear`` never see them); the
kernel drops it when its holder exits, so a leader that crashes frees the
others, which then compile themselves. A cache that cannot hold the lock
file (read-only, unsafe) costs the lock, never the compile.

``QUICKLAUNCH_COMPILE_LOCK_TIMEOUT`` (seconds, default 600) bounds the wait;
past it the waiter compiles on its own.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager, suppress

__all__ = ["miss_lock"]

_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def _timeout() -> float:
    try:
        return float(os.environ.get("QUICKLAUNCH_COMPILE_LOCK_TIMEOUT", "600"))
    except ValueError:
        return 600.0


def _open_lock(cache, kind: str, key: str) -> int | None:
    """The lock file's descriptor, in the cache root checked as the cache
    checks it; None when it cannot be had."""
    from .errors import CacheError
    try:
        root = cache._root_fd()   # the root's checks (owner, mode, ancestors)
        with suppress(FileExistsError):
            os.mkdir("locks", 0o700, dir_fd=root)
        d = os.open("locks", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                    dir_fd=root)
        try:
            st = os.fstat(d)
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return None
            return os.open(f"{kind}-{key[:2]}.lock", _FLAGS, 0o600, dir_fd=d)
        finally:
            os.close(d)
    except (OSError, CacheError):
        return None


@contextmanager
def miss_lock(cache, kind: str, key: str):
    """Holds the node's compile lock of ``key`` (yields True), or nothing
    (yields False) when no lock file can be had or the wait timed out. The
    caller looks in the cache again inside, then compiles on a miss."""
    fd = _open_lock(cache, kind, key)
    if fd is None:
        yield False
        return
    try:
        deadline = time.monotonic() + _timeout()
        pause, held = 0.002, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    break
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            except OSError:
                break
        yield held
    finally:
        os.close(fd)   # drops the lock

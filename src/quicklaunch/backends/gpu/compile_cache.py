"""A GPU compilation in the compile cache (quicklaunch/cache.py): its key,
over everything the result depends on, and its entry, a ``.json`` of
metadata (with the kernels as rows, kernel_table.py) plus binary blobs
(".cubin", ".co"). Each backend keeps its own namespace, format string and
metadata. A miss is compiled under ``miss_lock`` (cache_lock.py): one
compile per node when many ranks compile the same source at once."""
from __future__ import annotations

import json
import warnings

from ... import cache as cache_mod
from ...cache_lock import miss_lock
from ...errors import CompileWarning

__all__ = ["key", "store_entry", "load_entry", "miss_lock"]


def key(fmt: str, source: str, options, name_expressions, arch: str, compiler: str,
        headers: dict[str, str]) -> str:
    """The cache key of compiling ``source`` with ``options`` and
    ``name_expressions`` for ``arch``; ``compiler`` names the compiler and
    its version, ``headers`` are every header it is handed (name -> text)."""
    return cache_mod.cache_key(fmt, source, "\0".join(options), "\0".join(name_expressions),
                               arch, compiler, *(f"{n}\0{t}" for n, t in headers.items()))


def store_entry(cache, namespace: str, key: str, meta: dict, blobs=()) -> None:
    """Write the ``blobs`` ((suffix, bytes) pairs), then ``meta`` as the
    entry's ``.json``; an unwritable cache is ignored."""
    try:
        for suffix, data in blobs:
            cache.put(namespace, key, suffix, data)
        cache.put(namespace, key, ".json", json.dumps(meta).encode())
    except OSError as exc:   # an unwritable cache costs a recompile next time, nothing else
        if not _warned:
            _warned.append(True)
            warnings.warn(f"the quicklaunch compile cache cannot be written "
                          f"({exc.strerror or exc}: {getattr(exc, 'filename', None) or cache.root});"
                          f" GPU modules are compiled without caching. Fix: chmod u+w the "
                          f"directory, or set QUICKLAUNCH_CACHE_DIR to a writable private "
                          f"directory", CompileWarning, stacklevel=5)


_warned: list = []   # the unwritable-cache warning is given once per process


def load_entry(cache, namespace: str, key: str, fmt: str, arch: str, build):
    """``build(meta, read)`` for the cached entry of ``key`` (``read(suffix)``
    reads one of its blobs, None when missing), or None: no entry, another
    format or arch, or a damaged one (compiled again and rewritten)."""
    data = cache.read(namespace, key, ".json")
    if data is None:
        return None
    try:
        meta = json.loads(data)
        if not isinstance(meta, dict) or meta.get("format") != fmt or meta.get("arch") != arch:
            return None
        return build(meta, lambda suffix: cache.read(namespace, key, suffix))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None   # a damaged or inconsistent entry is a miss: compiled again, rewritten

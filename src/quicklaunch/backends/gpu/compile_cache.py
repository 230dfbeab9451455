"""A GPU compilation in the compile cache (quicklaunch/cache.py): its key,
over everything the result depends on, and its entry, a ``.json`` of
metadata (with the kernels as rows, kernel_table.py) plus binary blobs
(".cubin", ".co"). Each backend keeps its own namespace, format string and
metadata."""
from __future__ import annotations

import json

from ... import cache as cache_mod

__all__ = ["key", "store_entry", "load_entry"]


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
    except OSError:
        pass   # an unwritable cache costs a recompile next time, nothing else


def load_entry(cache, namespace: str, key: str, fmt: str, arch: str, build):
    """``build(meta, read)`` for the cached entry of ``key`` (``read(suffix)``
    reads one of its blobs, None when missing), or None: no entry, another
    format or arch, or a damaged one (compiled again and rewritten)."""
    data = cache.read(namespace, key, ".json")
    if data is None:
        return None
    try:
        meta = json.loads(data)
        if meta["format"] != fmt or meta["arch"] != arch:
            return None
        return build(meta, lambda suffix: cache.read(namespace, key, suffix))
    except (ValueError, KeyError, TypeError):
        return None   # a damaged entry is a miss: compiled again and rewritten

"""The compile cache under tampering (issue 14, item 4, and the cache parts
of item 7): the tree is reached through descriptors and checked on every
load, so a tree swapped under a running process, a directory made
writable after the first use, a symlinked entry or an inconsistent entry
never get a foreign or stale module loaded."""
import gc
import json
import os
import stat
import uuid
import warnings

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import cache as cache_mod
from quicklaunch.backends.cpu import compiler
from quicklaunch.errors import CacheError

SRC = 'extern "C" __global__ void put(int *x) { x[threadIdx.x] = %d; }  // %s'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache the CPU compiler uses for this test only."""
    (tmp_path / "parent").mkdir(mode=0o700)
    c = cache_mod.CompileCache(tmp_path / "parent" / "cache")
    monkeypatch.setattr(compiler, "_cache", c)
    return c


def src(value: int, tag: str | None = None) -> str:
    return SRC % (value, tag or uuid.uuid4().hex)


def result(mod) -> int:
    x = np.zeros(32, np.int32)
    mod.put[1, 32](x)
    return int(x[0])


def entry_of(mod):
    """(key, path of the .so) of a module loaded from the cache."""
    path = mod._library.path
    return os.path.basename(path)[:-3], path


def test_tree_swapped_through_the_parent_is_not_loaded(cache, cpu, tmp_path):
    s = src(1)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    planted = ql.compile(src(666), device=cpu)          # someone else's code
    evil_key, evil_so = entry_of(planted)
    evil = open(evil_so, "rb").read()
    del mod, planted
    gc.collect()
    # whoever owns the parent renames the cache away and puts their own in its place
    root = cache.root
    os.rename(root, tmp_path / "parent" / "moved")
    fake = cache_mod.CompileCache(root)
    fake.put("cpu", key, ".so", evil)
    fake.put("cpu", key, ".json", fake.read("cpu", key, ".json") or
             cache_mod.CompileCache(tmp_path / "parent" / "moved").read("cpu", key, ".json"))
    fake._forget()
    again = ql.compile(s, device=cpu)
    assert result(again) == 1                           # the tree we opened, not theirs
    assert str(tmp_path / "parent" / "moved") in os.readlink(f"/proc/self/fd/{again._library.fd}")


@pytest.mark.parametrize("which", ["root", "kind", "fan"])
def test_directory_made_writable_after_first_use_is_refused(cache, cpu, which):
    s = src(2)
    mod = ql.compile(s, device=cpu)
    assert result(mod) == 2
    _, so = entry_of(mod)
    del mod
    gc.collect()
    d = {"root": cache.root, "kind": cache.root / "cpu",
         "fan": os.path.dirname(so)}[which]
    os.chmod(d, 0o777)
    try:
        with pytest.raises(CacheError, match="writable by group or others"):
            ql.compile(s, device=cpu)
    finally:
        os.chmod(d, 0o700)
    assert result(ql.compile(s, device=cpu)) == 2


def test_ancestor_writable_by_others_is_refused(tmp_path):
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(CacheError) as ei:
        cache_mod.CompileCache(parent / "cache").read("cpu", "ab" * 32, ".so")
    assert "lies under" in str(ei.value) and str(parent) in str(ei.value)
    parent.chmod(0o1777)                                # sticky, as /tmp: fine
    c = cache_mod.CompileCache(parent / "cache")
    c.put("cpu", "ab" * 32, ".so", b"x")
    assert c.read("cpu", "ab" * 32, ".so") == b"x"


def test_symlinked_entry_is_refused(cache, cpu, tmp_path):
    s = src(3)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    del mod
    gc.collect()
    elsewhere = tmp_path / "elsewhere.so"
    os.rename(so, elsewhere)
    os.symlink(elsewhere, so)
    with pytest.raises(CacheError, match="symlink"):
        ql.compile(s, device=cpu)


def test_symlinked_fan_out_directory_is_refused(cache, cpu, tmp_path):
    s = src(4)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    del mod
    gc.collect()
    fan = os.path.dirname(so)
    os.rename(fan, tmp_path / "fan")
    os.symlink(tmp_path / "fan", fan)
    with pytest.raises(CacheError, match="symlink"):
        ql.compile(s, device=cpu)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a directory of another uid")
def test_fan_out_directory_of_another_user_is_refused(cache, cpu):
    s = src(5)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    del mod
    gc.collect()
    os.chown(os.path.dirname(so), 12345, 12345)
    with pytest.raises(CacheError, match="owned by uid 12345"):
        ql.compile(s, device=cpu)


def test_rebuilt_entry_at_the_same_path_loads_the_new_content(cache, cpu):
    s = src(6)
    old = ql.compile(s, device=cpu)
    key, so = entry_of(old)
    new = ql.compile(src(7), device=cpu)
    _, new_so = entry_of(new)
    # the entry is rewritten in place (another process rebuilt it) while `old` is loaded
    cache.put("cpu", key, ".so", open(new_so, "rb").read())
    compiler._loaded.pop(key, None)     # as if this process had found the old entry damaged
    again = ql.compile(s, device=cpu)
    assert again._library.path == so    # the same path ...
    assert again._library._name != old._library._name
    assert result(again) == 7           # ... its new content, not dlopen's stale handle
    assert result(old) == 6


def test_json_inconsistent_with_its_so_is_rebuilt(cache, cpu):
    s = src(8)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    del mod
    gc.collect()
    for bad in ({"params": {"other": []}, "lines": {}, "templates": [], "tiers": {}},
                {"params": {"put": [["x", "int *"], ["y", "int"]]}, "lines": {},
                 "templates": [], "tiers": {}},
                ["not", "a", "dict"], "{"):
        data = bad.encode() if isinstance(bad, str) else json.dumps(bad).encode()
        cache.put("cpu", key, ".json", data)   # a matching sidecar: only the content is wrong
        m = ql.compile(s, device=cpu)
        assert result(m) == 8
        assert json.loads(cache.read("cpu", key, ".json"))["params"] == {"put": [["x", "int *"]]}
        del m
        gc.collect()


def test_unwritable_cache_warns_and_compiles_without_caching(cache, cpu, monkeypatch):
    def refuse(dfd, name, data):
        raise PermissionError(13, "Permission denied", str(cache.root / "cpu"))
    monkeypatch.setattr(cache_mod, "_write_atomic", refuse)
    s = src(9)
    with pytest.warns(ql.CompileWarning, match="cannot be written.*QUICKLAUNCH_CACHE_DIR"):
        mod = ql.compile(s, device=cpu)
    assert result(mod) == 9
    assert "memfd" in mod._library.path


@pytest.mark.skipif(os.getuid() == 0, reason="root writes through a read-only directory")
def test_read_only_fan_out_directory_warns(cache, cpu):
    s = src(10)
    mod = ql.compile(s, device=cpu)
    key, so = entry_of(mod)
    del mod
    gc.collect()
    os.unlink(so)
    os.chmod(os.path.dirname(so), 0o500)
    try:
        with pytest.warns(ql.CompileWarning, match="cannot be written"):
            mod = ql.compile(s, device=cpu)
        assert result(mod) == 10
    finally:
        os.chmod(os.path.dirname(so), 0o700)

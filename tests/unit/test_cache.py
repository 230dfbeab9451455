"""Unit tests for the on-disk compile cache (no compiler needed)."""
import multiprocessing as mp
import os
import stat
from pathlib import Path

import pytest

from quicklaunch import cache as cache_mod
from quicklaunch.cache import FORMAT_VERSION, CompileCache, cache_key, default_cache_dir
from quicklaunch.errors import CacheError


@pytest.fixture(autouse=True)
def _fresh_memo():
    """Validation is memoized per process; tests need a clean slate."""
    cache_mod._safe.clear()
    yield
    cache_mod._safe.clear()


@pytest.fixture
def cache(tmp_path):
    return CompileCache(tmp_path / "qlcache")


KEY = cache_key("source", "options")


# ---- keys -------------------------------------------------------------------

def test_key_is_stable_hex():
    k = cache_key("src", b"opts", "cpu")
    assert k == cache_key("src", b"opts", "cpu")
    assert len(k) == 64 and int(k, 16) >= 0


def test_key_separates_parts():
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("abc") != cache_key("ab", "c")
    assert cache_key("") != cache_key()
    assert cache_key("", "") != cache_key("")
    assert cache_key("x") != cache_key("y")


def test_key_str_and_bytes_agree_on_utf8():
    assert cache_key("héllo") == cache_key("héllo".encode())


def test_key_depends_on_format_version(monkeypatch):
    k = cache_key("src")
    monkeypatch.setattr(cache_mod, "FORMAT_VERSION", FORMAT_VERSION + "x")
    assert cache_key("src") != k


def test_key_rejects_other_types():
    with pytest.raises(TypeError):
        cache_key("a", 3)


# ---- entries ----------------------------------------------------------------

def test_put_get_round_trip(cache):
    data = os.urandom(50_000)
    p = cache.put("cpu", KEY, ".so", data)
    assert p == cache.path("cpu", KEY, ".so")
    assert p == cache.root / "cpu" / KEY[:2] / (KEY + ".so")
    assert cache.get("cpu", KEY, ".so") == p
    assert p.read_bytes() == data
    assert cache.read("cpu", KEY, ".so") == data
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert (p.parent / (p.name + ".sha256")).exists()


def test_empty_payload(cache):
    cache.put("cpu", KEY, ".bin", b"")
    assert cache.read("cpu", KEY, ".bin") == b""


def test_miss(cache):
    assert cache.get("cpu", KEY, ".so") is None
    cache.put("cpu", KEY, ".so", b"x")
    assert cache.get("cpu", KEY, ".o") is None
    assert cache.get("cuda", KEY, ".so") is None
    assert cache.get("cpu", cache_key("other"), ".so") is None


def test_overwrite(cache):
    cache.put("cpu", KEY, ".so", b"one")
    cache.put("cpu", KEY, ".so", b"two")
    assert cache.read("cpu", KEY, ".so") == b"two"


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden"])
def test_bad_kind_rejected(cache, bad):
    with pytest.raises(ValueError):
        cache.put(bad, KEY, ".so", b"x")


@pytest.mark.parametrize("bad", ["..", "../../etc", "x", "ABCD", "a"])
def test_bad_key_rejected(cache, bad):
    with pytest.raises(ValueError):
        cache.get("cpu", bad, ".so")


def test_bad_suffix_rejected(cache):
    with pytest.raises(ValueError):
        cache.put("cpu", KEY, "/../../x", b"x")


@pytest.mark.parametrize("damage", ["truncate", "flip", "extend", "delete"])
def test_corrupt_data_is_miss_then_repaired(cache, damage):
    data = os.urandom(20_000)
    p = cache.put("cpu", KEY, ".so", data)
    if damage == "truncate":
        p.write_bytes(data[:100])
    elif damage == "flip":
        b = bytearray(data)
        b[12345] ^= 0x01
        p.write_bytes(bytes(b))
    elif damage == "extend":
        p.write_bytes(data + b"\0")
    else:
        p.unlink()
    assert cache.get("cpu", KEY, ".so") is None
    assert cache.read("cpu", KEY, ".so") is None
    cache.put("cpu", KEY, ".so", data)
    assert cache.get("cpu", KEY, ".so") == p
    assert p.read_bytes() == data


def test_corrupt_entry_removed(cache):
    p = cache.put("cpu", KEY, ".so", b"payload")
    p.write_bytes(b"paylo")
    assert cache.get("cpu", KEY, ".so") is None
    assert not p.exists()
    assert not Path(str(p) + ".sha256").exists()


@pytest.mark.parametrize("sidecar", [
    None, b"", b"garbage", b"\xff\xfe\x00" * 40,
    b"quicklaunch-cache-1 7 " + b"0" * 64,
    b"other-format 7 %s" % cache_key("x").encode(),
])
def test_bad_or_missing_sidecar_is_miss(cache, sidecar):
    p = cache.put("cpu", KEY, ".so", b"payload")
    side = Path(str(p) + ".sha256")
    if sidecar is None:
        side.unlink()
    else:
        side.write_bytes(sidecar)
    assert cache.get("cpu", KEY, ".so") is None
    cache.put("cpu", KEY, ".so", b"payload")
    assert cache.read("cpu", KEY, ".so") == b"payload"


def test_sidecar_from_older_format_is_miss(cache, monkeypatch):
    cache.put("cpu", KEY, ".so", b"payload")
    monkeypatch.setattr(cache_mod, "FORMAT_VERSION", "quicklaunch-cache-999")
    assert cache.get("cpu", KEY, ".so") is None


def test_no_temp_files_left(cache):
    for i in range(5):
        cache.put("cpu", KEY, ".so", b"x" * i)
    names = os.listdir(cache.path("cpu", KEY, ".so").parent)
    assert sorted(names) == [KEY + ".so", KEY + ".so.sha256"]


def test_stats_and_clear(cache):
    assert cache.stats() == (0, 0)
    cache.put("cpu", cache_key("a"), ".so", b"x" * 100)
    cache.put("cpu", cache_key("b"), ".so", b"y" * 200)
    cache.put("cuda", cache_key("c"), ".cubin", b"z" * 300)
    n, size = cache.stats()
    assert n == 3 and size > 600
    cache.clear()
    assert cache.stats() == (0, 0)
    assert cache.root.is_dir()
    assert cache.get("cpu", cache_key("a"), ".so") is None
    cache.put("cpu", cache_key("a"), ".so", b"again")     # dirs recreated
    assert cache.read("cpu", cache_key("a"), ".so") == b"again"
    assert cache.stats()[0] == 1


def test_clear_leaves_foreign_files(cache):
    cache.put("cpu", KEY, ".so", b"x")
    (cache.root / "notes.txt").write_text("mine")
    cache.clear()
    assert (cache.root / "notes.txt").read_text() == "mine"


def test_put_survives_removal_of_cache_by_another_process(cache):
    import shutil
    cache.put("cpu", KEY, ".so", b"x")
    shutil.rmtree(cache.root)
    cache.put("cpu", KEY, ".so", b"y")
    assert cache.read("cpu", KEY, ".so") == b"y"


# ---- location ---------------------------------------------------------------

def test_dir_created_private(tmp_path):
    root = tmp_path / "a" / "b" / "cache"
    c = CompileCache(root)
    c.put("cpu", KEY, ".so", b"x")
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "cpu").stat().st_mode) == 0o700
    assert (root / "CACHEDIR.TAG").read_bytes().startswith(b"Signature: ")


def test_dir_created_private_despite_umask(tmp_path):
    old = os.umask(0o777)
    try:
        p = CompileCache(tmp_path / "c").put("cpu", KEY, ".so", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_env_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("QUICKLAUNCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "quicklaunch"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "quicklaunch"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "quicklaunch"
    monkeypatch.setenv("QUICKLAUNCH_CACHE_DIR", str(tmp_path / "ql"))
    assert default_cache_dir() == tmp_path / "ql"
    monkeypatch.setenv("QUICKLAUNCH_CACHE_DIR", "")
    assert default_cache_dir() == tmp_path / "xdg" / "quicklaunch"


def test_default_root_is_lazy(tmp_path, monkeypatch):
    monkeypatch.setenv("QUICKLAUNCH_CACHE_DIR", str(tmp_path / "first"))
    c = CompileCache()
    assert not (tmp_path / "first").exists()
    monkeypatch.setenv("QUICKLAUNCH_CACHE_DIR", str(tmp_path / "env"))
    c.put("cpu", KEY, ".so", b"x")
    assert (tmp_path / "env").is_dir() and not (tmp_path / "first").exists()
    assert c.read("cpu", KEY, ".so") == b"x"


# ---- safety -----------------------------------------------------------------

@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o720, 0o702])
def test_group_or_other_writable_refused(tmp_path, mode):
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(mode)
    with pytest.raises(CacheError) as ei:
        CompileCache(root).get("cpu", KEY, ".so")
    msg = str(ei.value)
    assert str(root) in msg and "writable by group or others" in msg
    assert f"chmod 700 {root}" in msg and "QUICKLAUNCH_CACHE_DIR" in msg


def test_readable_by_others_is_fine(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    root.chmod(0o755)
    c = CompileCache(root)
    c.put("cpu", KEY, ".so", b"x")
    assert c.read("cpu", KEY, ".so") == b"x"


def test_other_owner_refused(tmp_path, monkeypatch):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(root).st_uid + 1234)
    with pytest.raises(CacheError) as ei:
        CompileCache(root).put("cpu", KEY, ".so", b"x")
    msg = str(ei.value)
    assert str(root) in msg and "owned by uid" in msg and "QUICKLAUNCH_CACHE_DIR" in msg


def test_symlink_to_unsafe_dir_refused(tmp_path):
    target = tmp_path / "open"
    target.mkdir()
    target.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(CacheError) as ei:
        CompileCache(link).get("cpu", KEY, ".so")
    assert str(link) in str(ei.value) and str(target) in str(ei.value)


def test_symlink_to_safe_dir_ok(tmp_path):
    target = tmp_path / "private"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    c = CompileCache(link)
    c.put("cpu", KEY, ".so", b"x")
    assert c.read("cpu", KEY, ".so") == b"x"


def test_dangling_symlink_refused(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(CacheError, match="link"):
        CompileCache(link).put("cpu", KEY, ".so", b"x")


def test_not_a_directory_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(CacheError, match="not a directory"):
        CompileCache(f).get("cpu", KEY, ".so")


def test_unsafe_subdirectory_refused(cache):
    cache.put("cpu", KEY, ".so", b"x")
    cache_mod._safe.clear()          # a new process
    sub = cache.path("cpu", KEY, ".so").parent
    sub.chmod(0o777)
    with pytest.raises(CacheError) as ei:
        cache.get("cpu", KEY, ".so")
    assert str(sub) in str(ei.value)


def test_kind_symlink_to_foreign_dir_refused(tmp_path, cache):
    cache.put("cpu", KEY, ".so", b"x")
    evil = tmp_path / "evil"
    evil.mkdir()
    evil.chmod(0o777)
    (cache.root / "cuda").symlink_to(evil)
    with pytest.raises(CacheError):
        cache.get("cuda", KEY, ".so")


def test_checked_on_every_read(cache):
    """Nothing is memoized: a directory made writable after the first use is
    refused at the next read (issue 14, item 4)."""
    cache.put("cpu", KEY, ".so", b"x")
    assert cache.read("cpu", KEY, ".so") == b"x"
    for d in (cache.path("cpu", KEY, ".so").parent, cache.root / "cpu", cache.root):
        d.chmod(0o777)
        with pytest.raises(CacheError, match="writable by group or others"):
            cache.read("cpu", KEY, ".so")
        d.chmod(0o700)
        assert cache.read("cpu", KEY, ".so") == b"x"


# ---- concurrency --------------------------------------------------------------

PAYLOADS = [bytes([i]) * (1000 + 7919 * i) for i in range(1, 6)]


def _writer(root, seed, n):
    c = CompileCache(Path(root))
    for i in range(n):
        c.put("cpu", KEY, ".so", PAYLOADS[(seed + i) % len(PAYLOADS)])


def _reader(root, stop, out):
    c = CompileCache(Path(root))
    hits = bad = 0
    while not stop.is_set():
        data = c.read("cpu", KEY, ".so")
        if data is not None:
            hits += 1
            bad += data not in PAYLOADS
        p = c.get("cpu", KEY, ".so")
        if p is not None:
            hits += 1
            bad += p.read_bytes() not in PAYLOADS   # writers only ever replace whole files
    out.put((hits, bad))


def test_concurrent_writers_never_torn(cache):
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    cache.put("cpu", KEY, ".so", PAYLOADS[0])
    root = str(cache.root)
    stop, out = ctx.Event(), ctx.Queue()
    reader = ctx.Process(target=_reader, args=(root, stop, out))
    writers = [ctx.Process(target=_writer, args=(root, s, 300)) for s in (0, 1)]
    reader.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join(60)
        assert w.exitcode == 0
    stop.set()
    hits, bad = out.get(timeout=60)
    reader.join(60)
    assert reader.exitcode == 0
    assert bad == 0 and hits > 0
    cache.put("cpu", KEY, ".so", PAYLOADS[2])
    assert cache.read("cpu", KEY, ".so") == PAYLOADS[2]

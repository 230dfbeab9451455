"""Modules are unloaded (issue 14, item 6): a module whose kernels,
launchers, graph nodes and buffers are gone is dlclosed, its mappings leave
/proc/self/maps, and thousands of loads keep mappings, descriptors and RSS
flat. Work queued on a stream keeps the code mapped until it has run."""
import ctypes
import gc
import os
import uuid

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import cache as cache_mod
from quicklaunch.backends.cpu import compiler, loader

SRC = 'extern "C" __global__ void put(int *x) { x[threadIdx.x] = %d; }  // %s'


def src(value: int) -> str:
    return SRC % (value, uuid.uuid4().hex)


def mapped(ino: int) -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if f" {ino} " in line)


def maps() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def collect():
    gc.collect()
    loader.reap()


def test_module_is_unloaded_after_del_and_gc(cpu):
    mod = ql.compile(src(1), device=cpu)
    x = np.zeros(32, np.int32)
    mod.put[1, 32](x)
    assert x[0] == 1
    ino = os.fstat(mod._library.fd).st_ino
    assert mapped(ino) > 0
    del mod
    collect()
    assert mapped(ino) == 0


@pytest.mark.parametrize("holder", ["kernel", "launcher", "buffer"])
def test_what_references_the_module_keeps_it_loaded(cpu, holder):
    s = ('__device__ int table[4] = {1, 2, 3, 4};\n'
         'extern "C" __global__ void put(int *x) { x[threadIdx.x] = table[1]; }  // '
         + uuid.uuid4().hex)
    mod = ql.compile(s, device=cpu)
    ino = os.fstat(mod._library.fd).st_ino
    x = np.zeros(32, np.int32)
    keep = {"kernel": lambda: mod.put, "launcher": lambda: mod.put[1, 32],
            "buffer": lambda: mod.get_global("table")}[holder]()
    del mod
    collect()
    assert mapped(ino) > 0
    if holder == "kernel":
        keep[1, 32](x)
    elif holder == "launcher":
        keep(x)
    else:
        assert keep.numpy()[1] == 2
    if holder != "buffer":
        assert x[0] == 2
    del keep
    collect()
    assert mapped(ino) == 0


def test_queued_stream_work_keeps_the_code_mapped(cpu):
    """A launch still queued on a stream keeps its module mapped after the
    last reference goes; the kernel waits on a gate the test opens only
    after looking, so the work is certainly unfinished when it looks (a
    spin of fixed length could finish during a slow gc.collect() on a
    loaded machine, and a reap inside it then rightly unmapped the module)."""
    s = ('extern "C" __global__ void gated(volatile int *gate, int *x) {\n'
         '  while (gate[0] == 0) {}\n'
         '  x[threadIdx.x] = 5; }  // ' + uuid.uuid4().hex)
    mod = ql.compile(s, device=cpu)
    ino = os.fstat(mod._library.fd).st_ino
    stream = ql.Stream(cpu)
    gate = np.zeros(1, np.int32)
    x = np.full(4, -1, np.int32)
    try:
        mod.gated[1, 1, 0, stream](gate, x)
        del mod
        gc.collect()
        loader.reap()
        assert not stream.query()
        assert mapped(ino) > 0     # not dlclosed under the stream's feet
    finally:
        gate[0] = 1
    stream.synchronize()
    assert x[0] == 5 and x[1] == -1
    loader.reap()
    assert mapped(ino) == 0
    stream.close()


# The 40 distinct sources of test_thousands_of_loads_stay_flat (new each
# session), compiled ahead on the second core (tests/prefetch.py): the test
# is about the loads after their first compile, not that compile. (No
# compiling here at the module's start: these tests count loads.)
_LOADS_SOURCES = [src(i) for i in range(40)]


def prefetch_job(item):
    if item.originalname == "test_thousands_of_loads_stay_flat":
        return list(_LOADS_SOURCES)
    if item.originalname == "test_a_module_dlclose_cannot_unmap_never_lends_its_name":
        return [j for i in range(6) for j in ((FIBER_TEMPLATE.format(i=i), "0"),
                                              src(1000 + i))]
    return None


def compile_ahead(job):
    """One prefetch job (in the worker process): a source's plain CPU build,
    or (source, QUICKLAUNCH_CPU_FISSION) for one built as the test builds it."""
    source, fission = job if isinstance(job, tuple) else (job, None)
    before = os.environ.get("QUICKLAUNCH_CPU_FISSION")
    if fission is not None:
        os.environ["QUICKLAUNCH_CPU_FISSION"] = fission
    try:
        ql.compile(source, device="cpu")
    finally:
        if before is None:
            os.environ.pop("QUICKLAUNCH_CPU_FISSION", None)
        else:
            os.environ["QUICKLAUNCH_CPU_FISSION"] = before


def test_thousands_of_loads_stay_flat(cpu):
    """40 distinct modules compiled once, then loaded again and again (each
    load a fresh dlopen of the cache entry, through ql.compile): after the
    first batch, mappings, descriptors and RSS stay where they were."""
    sources = _LOADS_SOURCES
    for s in sources:
        ql.compile(s, device=cpu)
    collect()

    def batch(n):
        x = np.zeros(32, np.int32)
        for i in range(n):
            mod = ql.compile(sources[i % len(sources)], device=cpu)
            mod.put[1, 32](x)
            assert x[0] == i % len(sources)
            del mod
            if i % 40 == 39:
                gc.collect()
        collect()

    batch(200)
    before = maps(), fds(), rss_kb(), loader._unloads
    batch(2000)
    after = maps(), fds(), rss_kb(), loader._unloads
    print(f"\nmaps {before[0]} -> {after[0]}, fds {before[1]} -> {after[1]}, "
          f"RSS {before[2]} -> {after[2]} kB, unloads {before[3]} -> {after[3]}")
    assert after[3] - before[3] >= 2000
    assert after[0] <= before[0] + 10
    assert after[1] <= before[1] + 2
    assert after[2] - before[2] < 8 * 1024


def test_thousands_of_distinct_modules_stay_flat(cpu, tmp_path, monkeypatch):
    """3000 distinct modules (distinct files, as an autotuning run makes):
    one compiled module copied under 3000 keys with a distinct trailing byte
    string each, loaded through the compiler's cache path and dropped."""
    mod = ql.compile(src(7), device=cpu)
    image = mod._library.image()
    meta = cache_mod.CompileCache().read("cpu", os.path.basename(mod._library.path)[:-3],
                                         ".json")
    del mod
    collect()
    cache = cache_mod.CompileCache(tmp_path / "c")
    monkeypatch.setattr(compiler, "_cache", cache)
    keys = []
    for i in range(3000):
        key = cache_mod.cache_key("distinct", str(i))
        data = image + f"variant {i}".encode()       # past the ELF's end: ignored by ld.so
        path = cache.path("cpu", key, ".so")
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for suffix, blob in ((".so", data), (".json", meta)):
            p = cache.path("cpu", key, suffix)
            p.write_bytes(blob)
            p.with_name(p.name + ".sha256").write_bytes(
                f"{cache_mod.FORMAT_VERSION} {len(blob)} "
                f"{__import__('hashlib').sha256(blob).hexdigest()}\n".encode())
        keys.append(key)

    def batch(ks):
        for i, key in enumerate(ks):
            built = compiler._load_cached(key)
            assert built is not None and built.kernels[0].expr == "put"
            del built
            if i % 100 == 99:
                collect()
        collect()

    batch(keys[:300])
    before = maps(), fds(), rss_kb()
    batch(keys[300:])
    after = maps(), fds(), rss_kb()
    print(f"\ndistinct: maps {before[0]} -> {after[0]}, fds {before[1]} -> {after[1]}, "
          f"RSS {before[2]} -> {after[2]} kB")
    assert after[0] <= before[0] + 10
    assert after[1] <= before[1] + 2
    assert after[2] - before[2] < 8 * 1024


# str.format()ed per module (so not one of the corpus's *SOURCE strings)
FIBER_TEMPLATE = r"""
__global__ void fiber_sum_{i}(const int *x, int *out) {{
    __shared__ int s[64];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {{ int t = 0; for (int j = 0; j < 64; ++j) t += s[j]; out[0] = t + {i}; }}
}}
"""


def test_a_module_dlclose_cannot_unmap_never_lends_its_name(cpu, monkeypatch):
    """A fiber module that has run stays mapped after dlclose (thread-local
    destructors); its descriptor number must not be reused for the next
    module's /proc name, or dlopen would hand back the old module."""
    monkeypatch.setenv("QUICKLAUNCH_CPU_FISSION", "0")   # fibers, not region fission
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(1, np.int32)
    for i in range(6):
        mod = ql.compile(FIBER_TEMPLATE.format(i=i), device=cpu)
        mod[f"fiber_sum_{i}"][1, 64](x, out)
        assert out[0] == x.sum() + i
        del mod
        collect()
        loader.reap()
        plain = ql.compile(src(1000 + i), device=cpu)   # loads right after: a fresh name
        assert plain.kernels == ["put"]
        y = np.zeros(32, np.int32)
        plain.put[1, 32](y)
        assert y[0] == 1000 + i
        del plain
        collect()


def test_reloading_a_module_that_stayed_mapped_takes_one_descriptor(cpu, monkeypatch):
    """The same cache entry loaded again while dlclose left its first load
    mapped: one more descriptor, not a loop of dup()s until EMFILE (the name
    check is by name; the same file under another name is no collision)."""
    monkeypatch.setenv("QUICKLAUNCH_CPU_FISSION", "0")
    source = FIBER_TEMPLATE.format(i=77)
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(1, np.int32)
    mod = ql.compile(source, device=cpu)
    mod["fiber_sum_77"][1, 64](x, out)
    del mod
    collect()
    before = fds()
    for _ in range(3):
        again = ql.compile(source, device=cpu)
        again["fiber_sum_77"][1, 64](x, out)
        assert out[0] == x.sum() + 77
        del again
        collect()
    assert fds() - before <= 3



def _next_descriptor_is(number: int) -> list[int]:
    """Fills every free descriptor number below `number` (returned, for the
    caller to close): the next open gets `number` when it is free."""
    held = []
    while True:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd >= number:
            os.close(fd)
            return held
        held.append(fd)


def _loaded_file(lib) -> tuple[int, int]:
    """(device, inode) of the file the library holding lib's kernel table
    was mapped from: what dlopen really returned."""
    table = loader._Module.in_dll(lib, "__ql_module")
    info = loader._DlInfo()
    assert loader._dladdr(ctypes.addressof(table), ctypes.byref(info))
    st = os.stat(info.dli_fname.decode())
    return st.st_dev, st.st_ino


def test_a_dropped_second_load_of_a_file_lends_its_number_to_no_other_module(cpu):
    """The same cache entry loaded twice (a second ql.compile of a source
    while the first module lives), the second load dropped: a module opened
    next under that load's descriptor number is itself, not the first module
    by an alias name (dlopen keeps one for a file it had loaded)."""
    first = ql.compile(src(4000), device=cpu)
    for i in range(3):
        again, kernels = loader.load(first._path)
        assert _loaded_file(again) == _loaded_file(first._library)
        number = again.fd
        del again, kernels
        collect()
        other = ql.compile(src(4100 + i), device=cpu)
        other_path = other._path
        del other
        collect()
        held = _next_descriptor_is(number)
        try:
            lib, kernels = loader.load(other_path)   # opened at `number`
        finally:
            for fd in held:
                os.close(fd)
        st = os.stat(other_path)
        assert _loaded_file(lib) == (st.st_dev, st.st_ino)
        assert [k.expr for k in kernels] == ["put"]
        del lib, kernels
        collect()
    x = np.zeros(32, np.int32)
    first.put[1, 32](x)
    assert x[0] == 4000

"""CUDA modules are unloaded (issue 14, item 6): against the fake driver,
whose live-module count is cuModuleLoadData minus cuModuleUnload, a module
whose kernels and launchers are gone is unloaded, one still referenced is
not, and a thousand compiles (cache hits after the first) leave none."""
import gc
import threading
import uuid


import quicklaunch as ql

SRC = 'extern "C" __global__ void put(int *x) { x[threadIdx.x] = %d; }  // %s'


def test_module_is_unloaded_after_del_and_gc(ql_fake):
    cu = ql_fake
    dev = ql.device("cuda")
    base = cu.fake_cuda_module_count()
    mod = ql.compile(SRC % (1, uuid.uuid4().hex), device=dev)
    assert cu.fake_cuda_module_count() == base + 1
    k = mod.put
    launcher = k[1, 32]
    del mod, k
    gc.collect()
    assert cu.fake_cuda_module_count() == base + 1   # the launcher keeps its kernel's module
    del launcher
    gc.collect()
    assert cu.fake_cuda_module_count() == base


def test_unloaded_from_a_thread_without_the_context(ql_fake):
    cu = ql_fake
    dev = ql.device("cuda")
    base = cu.fake_cuda_module_count()
    box = [ql.compile(SRC % (2, uuid.uuid4().hex), device=dev)]
    t = threading.Thread(target=lambda: (box.clear(), gc.collect()))
    t.start()
    t.join()
    assert cu.fake_cuda_module_count() == base


def test_thousand_compiles_leave_no_module_loaded(ql_fake):
    cu = ql_fake
    dev = ql.device("cuda")
    base = cu.fake_cuda_module_count()
    sources = [SRC % (i, uuid.uuid4().hex) for i in range(10)]
    for i in range(1000):
        mod = ql.compile(sources[i % len(sources)], device=dev)
        del mod
        if i % 50 == 49:
            gc.collect()
    gc.collect()
    assert cu.fake_cuda_module_count() == base

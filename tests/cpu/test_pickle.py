"""Pickling modules, kernels and configured launchers (quicklaunch.loading):
by source, options, name expressions and device, compiled again where they
are unpickled, a cache hit when the cache directory is shared; a real
multiprocessing spawn pool launches the kernel in its children."""
import multiprocessing
import pickle

import numpy as np
import pytest

import quicklaunch as ql

SRC = r"""
extern "C" __global__ void scale(float a, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
template <typename T> __global__ void add(T* x, T v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}
"""
OPTS = ("-DUNUSED_FLAG=3",)
EXPRS = ("add<float>", "add<int>")


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SRC, cpu, options=OPTS, name_expressions=EXPRS)


def _builds():
    """Counts the CPU compiler's real builds (cache misses) in this process."""
    from quicklaunch.backends.cpu import compiler
    if not hasattr(compiler, "_counted_builds"):
        real = compiler._build
        compiler._counted_builds = [0]

        def counted(*a, **k):
            compiler._counted_builds[0] += 1
            return real(*a, **k)
        compiler._build = counted
    return compiler._counted_builds


def _child(blob):
    """In a spawned child: unpickle (counting compiles), launch, return."""
    builds = _builds()
    before = builds[0]
    obj = pickle.loads(blob)
    kernel = obj if isinstance(obj, ql.Kernel) else obj.scale
    x = np.arange(8, dtype=np.float32)
    kernel[1, 32](np.float32(3), x, 8)
    return x.tolist(), builds[0] - before, kernel.module.options, sorted(kernel.module.kernels)


def _launch_in_child(launch, n):
    """Pool.map's function: gets a configured launcher (unpickled on the way)."""
    x = np.ones(n, np.float32)
    launch(np.float32(n), x, n)
    return float(x.sum())


def _add_in_child(kernel):
    x = np.zeros(4, np.float32)
    kernel[1, 4](x, np.float32(2.5), 4)
    return x.tolist()


def test_roundtrip_in_process(mod):
    m2 = pickle.loads(pickle.dumps(mod))
    assert m2.kernels == mod.kernels
    assert m2.device is mod.device
    assert m2.source == mod.source and m2._compile_args == mod._compile_args
    k = pickle.loads(pickle.dumps(mod.scale))
    assert isinstance(k, ql.Kernel) and k.name == "scale"
    x = np.ones(4, np.float32)
    k[1, 4](np.float32(2), x, 4)
    assert x.tolist() == [2, 2, 2, 2]
    # template kernels come back by their name expression
    a = pickle.loads(pickle.dumps(mod["add<int>"]))
    assert a.name == "add<int>"
    # one module object for all kernels of one pickled module
    assert pickle.loads(pickle.dumps(mod.scale)).module is k.module
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(mod.scale, protocol)).name == "scale"
        assert pickle.loads(pickle.dumps(mod.scale[1, 2], protocol)).__self__.block == (2, 1, 1)


def test_launcher_pickles_as_kernel_and_config(mod):
    launch = mod.scale[(2, 1), 16, 64]
    back = pickle.loads(pickle.dumps(launch))
    owner = back.__self__
    assert isinstance(owner, ql.Launcher)
    assert (owner.grid, owner.block, owner.shared_mem) == ((2, 1, 1), (16, 1, 1), 64)
    assert owner.kernel.name == "scale"
    x = np.ones(32, np.float32)
    back(np.float32(4), x, 32)
    assert x.tolist() == [4.0] * 32
    # the Launcher object itself too
    again = pickle.loads(pickle.dumps(owner))
    assert isinstance(again.__self__, ql.Launcher)
    # builtins other than launchers still pickle as before
    assert pickle.loads(pickle.dumps(len)) is len
    assert pickle.loads(pickle.dumps([1].append)).__name__ == "append"


def test_launcher_on_a_stream_is_refused(mod):
    s = ql.Stream(mod.device)
    with pytest.raises(pickle.PicklingError, match="stream"):
        pickle.dumps(mod.scale[1, 32, 0, s])


def test_spawn_child_hits_the_cache(mod):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        for obj in (mod, mod.scale):
            x, builds, options, kernels = pool.apply(_child, (pickle.dumps(obj),))
            assert x == [3.0 * i for i in range(8)]
            assert builds == 0, "the child compiled: the cache was missed"
            assert tuple(options) == tuple(mod.options)
            assert kernels == sorted(mod.kernels)


def test_spawn_pool_of_two_launches(mod):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        sums = pool.starmap(_launch_in_child, [(mod.scale[1, 64], n) for n in (8, 16, 33, 64)])
        assert sums == [float(n * n) for n in (8, 16, 33, 64)]
        assert pool.map(_add_in_child, [mod["add<float>"]] * 2) == [[2.5] * 4] * 2


def test_not_compiled_module_is_refused(cpu):
    m = ql.Module(cpu, "", ())
    with pytest.raises(pickle.PicklingError, match="ql.compile"):
        pickle.dumps(m)


def test_unpickled_modules_are_forgotten_when_gone(mod):
    import gc
    src = SRC + "// forgotten\n"
    m = ql.compile(src, mod.device)
    back = pickle.loads(pickle.dumps(m))
    mine = [s for s in ql.Module._unpickled if s[0] == "source" and s[2] == src]
    assert len(mine) == 1 and ql.Module._unpickled[mine[0]]() is back
    del back, m
    gc.collect()
    assert mine[0] not in ql.Module._unpickled


def test_debug_kernels_pickle(cpu):
    m = ql.compile('extern "C" __global__ void put(int* x) { x[threadIdx.x] = 5; }', cpu,
                   debug=True)
    k = pickle.loads(pickle.dumps(m.put))
    assert k.module.debug
    x = np.zeros(4, np.int32)
    k[1, 4](x)
    assert x.tolist() == [5] * 4

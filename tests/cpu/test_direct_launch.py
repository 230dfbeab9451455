"""Direct launches on the CPU device: a planned launcher of one small block
hands the Python argument objects to the kernel's module, whose `direct`
entry (ql_cpu_abi.h's ql_cpu_direct_fn, ql_direct.h's readers) checks and
reads each as its parameter's type and runs the block. It reads exactly
what the launcher's fast pass would pack, and the same values; anything else
it refuses having run nothing, and the launcher's own passes take the
launch, with their results and their errors. These tests call the entry
itself (through ctypes, with the layout the launcher would hand it) and
compare launchers with the general entry."""
import ctypes
import os
import sys
import threading

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import loader

from .conftest import poisoned
from .test_memcheck import _gcc

INTS = ("int", "unsigned int", "long long", "unsigned long long", "long")
SOURCE = r"""
template <typename T> __global__ void echo(T v, T *out) { out[threadIdx.x] = v; }
enum Mode : unsigned { kOff = 0, kOn = 7 };
__global__ void mode(Mode m, unsigned *out) { out[threadIdx.x] = (unsigned)m + threadIdx.x; }
extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void bytes_of(const void *src, unsigned char *dst, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = ((const unsigned char *)src)[i];
}
extern "C" __global__ void poke(int *p, int at) { if (threadIdx.x == at) p[1 << 28] = 1; }
extern "C" __global__ void add_one(int *x) { x[0] += 1; }
extern "C" __global__ void none() {}
// kinds the direct entry does not read
extern "C" __global__ void flag(bool b, int *out) { out[0] = b ? 3 : 4; }
extern "C" __global__ void narrow(short s, int *out) { out[0] = s; }
extern "C" __global__ void halves(__half h, float *out) { out[0] = __half2float(h); }
extern "C" __global__ void vec(float2 v, float *out) { out[0] = v.x + v.y; }
// a barrier: fibers or fission, never the small entry
extern "C" __global__ void rev(const int *x, int *y) {
    __shared__ int t[1024];
    t[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = t[blockDim.x - 1 - threadIdx.x];
}
"""
EXPRS = [f"echo<{t}>" for t in INTS + ("float", "double")] + ["mode"]
NUMPY = {"int": np.int32, "unsigned int": np.uint32, "long long": np.int64,
         "unsigned long long": np.uint64, "long": np.int64, "float": np.float32,
         "double": np.float64}


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu, name_expressions=EXPRS)


# ------------------------------------------------- the entry, called by hand

class PyArgs(ctypes.Structure):       # ql_pyargs.h
    _fields_ = [("array_type", ctypes.c_void_p), ("float_type", ctypes.c_void_p),
                ("long_type", ctypes.c_void_p), ("long_layout", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32), ("dtype_ok", ctypes.POINTER(ctypes.c_void_p))]


class Dims(ctypes.Structure):         # ql_cpu_abi.h's ql_cpu_dims
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3),
                ("shared_bytes", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("error", ctypes.c_void_p), ("grid_sync", ctypes.c_void_p)]


DIRECT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                          ctypes.POINTER(PyArgs), ctypes.POINTER(Dims))


def direct_entry(kernel) -> int:
    return loader._Kernel.from_address(kernel.handle).direct or 0


def call_direct(kernel, args, dtypes, threads=2) -> int:
    """The kernel's direct entry on `args` (the objects themselves), with
    `dtypes[i]` as parameter i's remembered dtype (None: none yet), as the
    launcher would call it: 1 when it ran, 0 when it refused."""
    entry = direct_entry(kernel)
    assert entry, f"{kernel.name} has no direct entry"
    objs = (ctypes.c_void_p * len(args))(*(id(a) for a in args))
    ok = (ctypes.c_void_p * max(len(dtypes), 1))(*(id(d) if d is not None else None
                                                   for d in dtypes))
    py = PyArgs(id(np.ndarray), id(float), id(int), 0 if sys.version_info < (3, 12) else 1,
                0, ok)
    dims = Dims((1, 1, 1), (threads, 1, 1), 0, 0, None, None)
    return DIRECT(entry)(objs, ctypes.byref(py), ctypes.byref(dims))


def test_which_kernels_have_a_direct_entry(mod, cpu):
    for name in ("axpy", "bytes_of", "poke", "add_one", "none", "mode", *EXPRS):
        assert direct_entry(mod.get_kernel(name)), name
    for name in ("flag", "narrow", "halves", "vec", "rev"):   # other kinds; a barrier
        assert not direct_entry(mod.get_kernel(name)), name
    asserts = ql.compile('extern "C" __global__ void check(const int *x) '
                         '{ assert(x[0] >= 0); }', device=cpu)
    debug = ql.compile(SOURCE, device=cpu, debug=True, name_expressions=EXPRS)
    assert not direct_entry(asserts.check)          # its run keeps the setjmp
    assert not direct_entry(debug.axpy)


@pytest.mark.skipif(not _gcc(), reason="memcheck builds need g++")
def test_memcheck_builds_have_none(cpu):
    memcheck = ql.compile(SOURCE, device=cpu, memcheck=True, name_expressions=EXPRS)
    assert not direct_entry(memcheck.axpy)          # its reads are checked ones
    assert not memcheck.axpy.configure(1, 1).__self__.direct


def test_launchers_take_it_only_for_one_small_planned_block(mod, cpu):
    assert mod.axpy.configure(1, 1).__self__.direct
    assert mod.axpy.configure(1, 31).__self__.direct
    assert mod.none[1, 5].__self__.direct
    for grid, block in ((1, 32), (2, 1), (1, (2, 2))):
        launcher = mod.axpy.configure(grid, block).__self__
        assert launcher.planned and not launcher.direct, (grid, block)
    assert not mod.flag.configure(1, 1).__self__.direct
    assert mod.flag.configure(1, 1).__self__.planned
    with ql.Stream(device=cpu) as s:
        assert not mod.axpy.configure(1, 1, stream=s).__self__.direct


# ------------------------------------------------------------- the readers

@pytest.mark.parametrize("ctype", INTS)
def test_int_readers_take_one_digit_ints_exactly(mod, ctype, rng):
    k = mod.get_kernel(f"echo<{ctype}>")
    dtype = NUMPY[ctype]
    signed = not ctype.startswith("unsigned")
    top = 2**30 - 1
    taken = [0, 1, top, *(int(v) for v in rng.integers(0, top, 4))]
    if signed:
        taken += [-1, -top, *(int(v) for v in rng.integers(-top, 0, 3))]
    for v in taken:
        out = poisoned(2, dtype)
        assert call_direct(k, [v, out], [None, out.dtype]) == 1, v
        np.testing.assert_array_equal(out, np.array([v, v], dtype), err_msg=repr(v))
    refused = [2**30, -2**30, 2**62, True, 2.0, np.int64(3), "1"]
    if not signed:
        refused += [-1, -top]
    for v in refused:
        out = poisoned(2, dtype)
        before = out.copy()
        assert call_direct(k, [v, out], [None, out.dtype]) == 0, v
        np.testing.assert_array_equal(out, before)   # nothing ran


def test_enum_reader(mod):
    out = poisoned(3, np.uint32)
    assert call_direct(mod.mode, [7, out], [None, out.dtype], threads=3) == 1
    np.testing.assert_array_equal(out, [7, 8, 9])


def test_float_readers_round_as_the_launcher_does(mod, rng):
    k32, k64 = mod.get_kernel("echo<float>"), mod.get_kernel("echo<double>")
    edges = [1.5, -0.0, 1e-46, -1e-40, 3.4028234663852886e38, float("inf"), float("-inf"),
             float("nan"), *(float(v) for v in rng.standard_normal(4) * 1e30)]
    for v in edges:
        for k, dtype in ((k32, np.float32), (k64, np.float64)):
            out = poisoned(2, dtype)
            assert call_direct(k, [v, out], [None, out.dtype]) == 1, (dtype, v)
            want = np.array([v, v], dtype)
            np.testing.assert_array_equal(out, want, err_msg=repr(v))
            assert np.signbit(out[0]) == np.signbit(want[0])
    for v in (3.5e38, -1e39, 1e308):        # finite, past FLT_MAX: the launcher raises
        out = poisoned(2, np.float32)
        assert call_direct(k32, [v, out], [None, out.dtype]) == 0
        assert np.isnan(out).all()
    out = poisoned(2, np.float64)
    assert call_direct(k64, [1e308, out], [None, out.dtype]) == 1 and out[0] == 1e308
    for v in (1, np.float64(2.0), np.float32(2.0), "1.0"):   # exact floats only
        out = poisoned(2, np.float64)
        assert call_direct(k64, [v, out], [None, out.dtype]) == 0
        assert np.isnan(out).all()


def test_array_readers_check_type_flags_and_dtype(mod, rng):
    n = 5
    x = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    f32 = np.dtype(np.float32)
    y = y0.copy()
    assert call_direct(mod.axpy, [2.0, x, y, n], [None, f32, f32, None], threads=n) == 1
    np.testing.assert_allclose(y, np.float32(2.0) * x + y0, rtol=1e-6)

    ro = x.copy()
    ro.flags.writeable = False
    y = y0.copy()
    assert call_direct(mod.axpy, [2.0, ro, y, n], [None, f32, f32, None], threads=n) == 1
    strided = np.repeat(y0, 2)[::2]
    sub = y0.copy().view(type("Sub", (np.ndarray,), {}))
    refusals = [
        ([2.0, x, ro.copy(), n], [None, f32, None, None]),   # no dtype remembered
        ([2.0, x, y0.astype(np.float64), n], [None, f32, f32, None]),  # another dtype
        ([2.0, x, ro, n], [None, f32, f32, None]),           # read-only for a float *
        ([2.0, x, strided, n], [None, f32, f32, None]),      # not contiguous
        ([2.0, x, sub, n], [None, f32, f32, None]),          # a subclass
        ([2.0, x, list(y0), n], [None, f32, f32, None]),
        ([2.0, x, bytearray(y0.tobytes()), n], [None, f32, f32, None]),
    ]
    for args, dtypes in refusals:
        snapshot = np.array(args[2], copy=True) if not isinstance(args[2], bytearray) \
            else bytes(args[2])
        assert call_direct(mod.axpy, args, dtypes, threads=n) == 0
        after = np.array(args[2], copy=True) if not isinstance(args[2], bytearray) \
            else bytes(args[2])
        np.testing.assert_array_equal(after, snapshot)


# ----------------------------------------------------------- the launchers

def test_direct_launches_equal_the_general_entry(mod, rng):
    for bx in (1, 2, 17, 31):
        n = bx - 1 if bx > 2 else bx   # a block wider than the data, too
        x = rng.standard_normal(bx).astype(np.float32)
        base = rng.standard_normal(bx).astype(np.float32)
        run = mod.axpy.configure(1, bx)
        assert run.__self__.direct
        a = float(rng.standard_normal())
        direct, general = base.copy(), base.copy()
        for _ in range(3):
            run(a, x, direct, n)
            mod.axpy.launch(1, bx, a, x, general, n)
        np.testing.assert_array_equal(direct, general)
    for ctype in INTS + ("float", "double"):
        k = mod.get_kernel(f"echo<{ctype}>")
        run = k.configure(1, 3)
        assert run.__self__.direct
        info = np.iinfo(NUMPY[ctype]) if ctype in INTS else None
        values = ([int(v) for v in rng.integers(info.min, info.max, 6, NUMPY[ctype],
                                                endpoint=True)]
                  + [0, 2**30 - 1, 2**30, int(info.max)]) if info else \
            [float(v) for v in rng.standard_normal(6) * 1e3] + [float("nan"), -0.0]
        for v in values:
            d, g = poisoned(3, NUMPY[ctype]), poisoned(3, NUMPY[ctype])
            run(v, d)
            k.launch(1, 3, v, g)
            np.testing.assert_array_equal(d, g, err_msg=f"{ctype} {v!r}")


def test_untyped_pointer_follows_each_new_dtype(mod, rng):
    run = mod.bytes_of.configure(1, 4)
    assert run.__self__.direct
    for dtype in (np.float32, np.int16, np.float32, np.uint8, np.float64, np.float64):
        src = rng.standard_normal(6).astype(dtype)
        dst = np.full(src.nbytes, 0xAB, np.uint8)
        run(src, dst, src.nbytes)
        assert dst.tobytes() == src.tobytes()


def test_arguments_it_refuses_take_the_launchers_own_passes(mod, rng):
    run = mod.axpy.configure(1, 7)
    assert run.__self__.direct
    x = rng.standard_normal(7).astype(np.float32)
    base = rng.standard_normal(7).astype(np.float32)
    for a, xs, n in [(np.float32(2.0), x, 7), (2.0, bytearray(x.tobytes()), 7),
                     (2.0, x, np.int32(7)), (2.0, x, True), (2.0, x[::1], 2**30 - 1)]:
        direct, general = base.copy(), base.copy()
        run(a, xs, direct, n)
        mod.axpy.launch(1, 7, a, xs, general, n)
        np.testing.assert_array_equal(direct, general)


@pytest.mark.skipif(bool(os.environ.get("QUICKLAUNCH_SANITIZERS")),
                    reason="torch's layout learner (frameworks/_torch_abi.py) reads 256 bytes "
                           "of a smaller TensorImpl, which ASan reports")
def test_torch_tensors_take_the_planned_path(mod, rng):
    torch = pytest.importorskip("torch")
    run = mod.axpy.configure(1, 7)
    x = rng.standard_normal(7).astype(np.float32)
    base = rng.standard_normal(7).astype(np.float32)
    tx = torch.from_numpy(x.copy())
    for xs in (tx, x, tx, tx, x, tx):      # the tensor's type is remembered, not the array's
        direct, general = base.copy(), base.copy()
        run(2.0, xs, direct, 7)
        mod.axpy.launch(1, 7, 2.0, xs, general, 7)
        np.testing.assert_array_equal(direct, general)
    ty = torch.from_numpy(base.copy())
    run(2.0, x, ty, 7)
    np.testing.assert_array_equal(ty.numpy(), general)


def test_a_type_it_never_reads_is_remembered_and_released(mod, rng):
    """After a refusal for an argument type the module never reads (here an
    ndarray subclass), the launcher sends that type straight to its planned
    path; other calls stay direct, every result is the general entry's, and
    the launcher's hold on the type ends with the launcher."""
    import gc
    import weakref

    class Sub(np.ndarray):
        pass

    run = mod.axpy.configure(1, 6)
    x = rng.standard_normal(6).astype(np.float32)
    base = rng.standard_normal(6).astype(np.float32)
    for xs in (x, x.view(Sub), x.view(Sub), x, bytearray(x.tobytes()), x, x.view(Sub)):
        direct, general = base.copy(), base.copy()
        run(1.25, xs, direct, 6)
        mod.axpy.launch(1, 6, 1.25, xs, general, 6)
        np.testing.assert_array_equal(direct, general)
    held = weakref.ref(Sub)
    del Sub, run, xs
    gc.collect()
    assert held() is None


def test_errors_are_the_launchers_and_nothing_runs(mod):
    run = mod.axpy.configure(1, 4)
    x = np.arange(4, dtype=np.float32)
    y = poisoned(4, np.float32)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    cases = [((2.0, x, y.astype(np.float64), 4), ql.LaunchTypeError, r"axpy.*parameter 3 'y'"),
             ((2.0, x, ro, 4), ql.LaunchValueError, r"axpy.*parameter 3 'y'.*read-only"),
             ((1e39, x, y, 4), ql.LaunchOverflowError, r"axpy.*parameter 1 'a'"),
             ((2.0, x, y, 2**40), ql.LaunchOverflowError, r"axpy.*parameter 4 'n'"),
             ((2.0, x, y, "4"), ql.LaunchTypeError, r"axpy.*parameter 4 'n'"),
             ((2.0, x, np.zeros(8, np.float32)[::2], 4), ql.LaunchValueError,
              r"axpy.*parameter 3 'y'")]
    for args, exc, text in cases:
        with pytest.raises(exc, match=text) as direct_err:
            run(*args)
        with pytest.raises(exc) as general_err:
            mod.axpy.launch(1, 4, *args)
        assert str(direct_err.value) == str(general_err.value)
    with pytest.raises(ql.LaunchTypeError, match="axpy.*by position"):
        run(2.0, x, y, n=4)
    with pytest.raises(ql.LaunchTypeError, match="axpy.*takes 4 arguments.*got 3"):
        run(2.0, x, y)
    assert np.isnan(y).all()
    u = mod.get_kernel("echo<unsigned int>").configure(1, 2)
    out = poisoned(2, np.uint32)
    with pytest.raises(ql.LaunchOverflowError, match=r"parameter 1 'v': -1 is out of range"):
        u(-1, out)
    np.testing.assert_array_equal(out, poisoned(2, np.uint32))


def test_fault_in_a_direct_launch_is_reported_and_it_carries_on(mod):
    run = mod.poke.configure(1, 16)
    assert run.__self__.direct
    p = np.zeros(4, np.int32)
    for at in (5, 0, 15):
        with pytest.raises(ql.LaunchError, match=r"'poke'.*write to address.*in block "
                                                 r"\(0, 0, 0\), thread \(\?, 0, 0\)"):
            run(p, at)   # (an optimised build does not track threadIdx.x)
    for q in (p, np.zeros(2, np.int32), np.zeros(9, np.int32)):   # still direct after
        run(q, 99)
        assert not q.any()


def test_direct_launches_on_new_threads(mod):
    """A thread's first launch takes the planned path (it sets up the
    thread's fault handling); its later ones are direct, and report faults
    there too."""
    run, add = mod.poke.configure(1, 8), mod.add_one.configure(1, 1)
    x, seen = np.zeros(1, np.int32), []

    def work():
        for _ in range(3):
            add(x)
            try:
                run(np.zeros(2, np.int32), 4)
            except ql.LaunchError as e:
                seen.append(str(e))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert x[0] == 9
    assert len(seen) == 9 and all("'poke'" in s and "in block (0, 0, 0)" in s for s in seen)


def test_direct_launch_keeps_order_after_queued_work(mod, cpu):
    k = ql.compile(r'''extern "C" __global__ void slow_then_store(const int *in, int *out,
                                                                  long long iters) {
        volatile float v = 0;
        for (long long k = 0; k < iters; ++k) v = v * 0.5f + 1.0f;
        out[0] = in[0] + 1;
    }''', device=cpu).slow_then_store
    x, y = np.array([6], np.int32), poisoned(1, np.int32)
    run = mod.add_one.configure(1, 1)
    assert run.__self__.direct
    with ql.Stream(device=cpu) as s:
        k[1, 1, 0, s](x, y, 5_000_000)
        run(y)
        s.synchronize()
    assert y[0] == 8


def test_traced_and_recorded_direct_launches(mod, cpu, rng):
    run = mod.axpy.configure(1, 4)
    x = rng.standard_normal(4).astype(np.float32)
    y = np.zeros(4, np.float32)
    with ql.trace() as t:
        run(1.0, x, y, 4)
    assert [e["name"] for e in t.events] == ["axpy"]
    with ql.graph(device=cpu) as g:
        run(1.0, x, y, 4)
    np.testing.assert_array_equal(y, x)     # recorded, not run
    g.replay()
    g.replay()
    np.testing.assert_allclose(y, 3 * x, rtol=1e-6)

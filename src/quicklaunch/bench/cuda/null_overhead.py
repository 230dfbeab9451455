"""CUDA launch overhead above the driver, on any machine: every launcher
against a null driver (null_driver.c).

    python -m quicklaunch.bench.cuda.null_overhead [--quick] [--out FILE]

Every Python CUDA launcher ends in the driver's ``cuLaunchKernel`` or
``cuLaunchKernelEx``. null_driver.c is a libcuda whose launch entries
validate their arguments as the driver does and return, so timing each
launcher against it, minus a C loop calling the same entry, is what that
launcher adds per call (everything it does in Python and C above the
driver), with or without a GPU.

``section(quick=...)`` builds the null driver into a private temporary
folder and runs the measurement in a child process whose environment alone
points at it (``QUICKLAUNCH_LIBCUDA``, ``LD_LIBRARY_PATH`` for cuda.bindings
and cuda.core, ``NUMBA_CUDA_DRIVER`` for numba-cuda); nothing else on the
machine can find it. The child (``measure``) sets each row up, checks its
launch once against what the driver received (function, grid, block,
dynamic shared bytes, stream, parameter bytes at the kernel's layout: the
driver's check switch, ``ql_null_capture_arm``), then times all the rows in
interleaved rounds and reports medians. A row whose check fails is an error
saying what differed; it is never timed. Schema: benchmarks/README.md,
"Null driver".

``benchmarks/gpu_check.sh`` runs the same rows (``--real``) on a GPU's real
driver, where the check switch is absent and the rows are timed unchecked.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TITLE = "CUDA launch overhead above the driver (null driver)"
SCHEMA = 1
SOURCE = Path(__file__).with_name("null_driver.c")
LIB_NAME = "libcuda.so.1"
SKIP_ENV = "QUICKLAUNCH_BENCH_NULL_DRIVER"     # "0": quicklaunch bench leaves the section out
OK, SKIPPED, ERROR, UNSUPPORTED = "ok", "skipped", "error", "unsupported"
ENTRY, ENTRY_EX = "cuLaunchKernel", "cuLaunchKernelEx"
C_LOOP = {ENTRY: "C loop, cuLaunchKernel", ENTRY_EX: "C loop, cuLaunchKernelEx"}

FULL = {"rounds": 21, "sample_s": 0.010, "max_iters": 100_000}
QUICK = {"rounds": 7, "sample_s": 0.004, "max_iters": 20_000}

# rows that cannot run on a null driver, and why
UNSUPPORTED_ROWS = {
    "CuPy RawKernel": (
        "cupy", "CuPy drives the GPU through the CUDA runtime (libcudart), which initialises "
        "from the driver's private export tables (cuGetExportTable); the null driver has "
        "none, so cudart finds no usable driver before any launch. Measured on a GPU by "
        "benchmarks/gpu_check.sh (python -m quicklaunch.bench.cuda)"),
    "torch y.add_(x)": (
        "torch", "torch's CUDA backend is built on libcudart (same reason as CuPy): "
        "torch.cuda.is_available() is False on a null driver"),
    "Triton": (
        "triton", "Triton's CUDA launcher takes the current device and stream from torch.cuda "
        "(libcudart, see the torch row) and compiles with ptxas for the device it reports"),
    "Warp wp.launch": (
        "warp", "not tried on the null driver: Warp's native runtime initialises far more of "
        "the driver (memory pools, context and peer-access queries) than the null driver "
        "implements; its real-driver row comes from benchmarks/gpu_check.sh"),
}


# ------------------------------------------------------------------ building
def find_cuda_h() -> Path | None:
    """The CUDA toolkit's include folder holding cuda.h, if there is one."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(str(p) for p in Path("/usr/local").glob("cuda-*"))
    for root in filter(None, roots):
        inc = Path(root) / "include"
        if (inc / "cuda.h").is_file():
            return inc
    return None


def build(out_dir=None, check_prototypes: bool | None = None) -> Path:
    """Compiles null_driver.c into ``out_dir``/libcuda.so.1 (a new private
    temporary folder by default) and returns its path. With cuda.h at hand
    (``check_prototypes`` None: when found) every entry is compiled against
    the real prototypes. RuntimeError with the compiler's output on failure."""
    from ..harness.baseline import find_cc
    cc = find_cc()
    if cc is None:
        raise RuntimeError("no C compiler ($CC, cc, gcc or clang) for the null CUDA driver")
    out = Path(out_dir or tempfile.mkdtemp(prefix="quicklaunch-null-cuda-"))
    out.mkdir(parents=True, exist_ok=True)
    lib = out / LIB_NAME
    inc = find_cuda_h() if check_prototypes is not False else None
    if check_prototypes and inc is None:
        raise RuntimeError("cuda.h was asked for and is not installed")
    extra = ["-DQL_NULL_WITH_CUDA_H", f"-I{inc}"] if inc else []
    cmd = [cc, "-x", "c", "-std=gnu11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra",
           "-Wl,-soname," + LIB_NAME, *extra, "-o", str(lib), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the null CUDA driver failed: {' '.join(cmd)}\n"
                           f"{proc.stderr}")
    return lib


def child_env(lib: Path, base: dict | None = None) -> dict:
    """The environment of a child process that is to find the null driver
    (and only there): quicklaunch's, the dynamic loader's and numba-cuda's
    ways to name libcuda."""
    env = dict(os.environ if base is None else base)
    env["QUICKLAUNCH_LIBCUDA"] = str(lib)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [str(lib.parent)] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    env["NUMBA_CUDA_DRIVER"] = str(lib)
    env["QUICKLAUNCH_DEVICE"] = "cuda"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"     # grid 1 is the point here
    return env


# ------------------------------------------------------------------ the check
class Capture(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("func", ctypes.c_void_p),
                ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("nbytes", ctypes.c_uint), ("entry", ctypes.c_int),
                ("bytes", ctypes.c_ubyte * 4096)]


ENTRIES = {1: ENTRY, 2: ENTRY_EX, 3: "cuGraphAddKernelNode"}


def pack(params) -> tuple[list[int], bytes]:
    """(sizes, bytes) of a parameter list [(size, value bytes)], laid out at
    natural alignment as the kernel ABI (and the driver's capture) does."""
    sizes, out = [], bytearray()
    for size, data in params:
        align = min(size, 8)
        while align & (align - 1):
            align &= align - 1
        out += b"\0" * (-len(out) % align)
        out += data
        sizes.append(size)
    return sizes, bytes(out)


def c_layout(kinds, values) -> list:
    """[(size, bytes)] for the benchmark kernels' parameters: ``kinds`` from
    harness.kernels.bench_kernels (a NumPy scalar type name, or None for a
    pointer), ``values`` the scalars and the device addresses."""
    import numpy as np
    out = []
    for kind, v in zip(kinds, values):
        if kind is None:
            out.append((8, int(v).to_bytes(8, "little")))
        else:
            b = np.array(v, dtype=getattr(np, kind)).tobytes()
            out.append((len(b), b))
    return out


@dataclass
class Expect:
    """What the driver must receive from a row's launch."""
    kernel: str                         # the function's name contains this
    params: list                        # [(size, bytes)]
    stream: int | None = 0              # None: not compared (a graph node has none)
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    shared: int = 0
    entry: str | None = None            # the driver entry it must arrive through


class Driver:
    """The null driver's check switch, from the instance the launchers use."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.ql_null_capture_arm.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.c_uint]
        self.lib.ql_null_capture_get.argtypes = [ctypes.POINTER(Capture)]
        if self.lib.ql_null_capture_size() != ctypes.sizeof(Capture):
            raise RuntimeError("the null driver's capture layout differs from Capture")

    def entry(self, name: str) -> int:
        return ctypes.cast(getattr(self.lib, name), ctypes.c_void_p).value

    def check(self, expect: Expect, once) -> str:
        """Runs ``once()`` with the capture armed; "" when the driver got
        exactly ``expect``, else what differed."""
        sizes, want = pack(expect.params)
        arr = (ctypes.c_uint * max(len(sizes), 1))(*sizes)
        if self.lib.ql_null_capture_arm(arr, len(sizes)):
            return "the check could not be armed (parameter layout too large)"
        try:
            once()
        finally:
            self.lib.ql_null_capture_disarm()   # a launch that never came must not arm the next
        cap = Capture()
        if not self.lib.ql_null_capture_get(ctypes.byref(cap)):
            return ("the driver received no launch (the row launched nothing, or through "
                    "another driver instance)")
        got = bytes(cap.bytes[:cap.nbytes])
        name = cap.name.decode(errors="replace")
        diffs = []
        if expect.kernel not in name:
            diffs.append(f"kernel {name!r}, expected {expect.kernel!r}")
        for what, g, w in (("grid", tuple(cap.grid), expect.grid),
                           ("block", tuple(cap.block), expect.block)):
            if g != tuple(w):
                diffs.append(f"{what} {g}, expected {tuple(w)}")
        if cap.shared != expect.shared:
            diffs.append(f"shared bytes {cap.shared}, expected {expect.shared}")
        if expect.stream is not None and (cap.stream or 0) != expect.stream:
            diffs.append(f"stream {cap.stream or 0:#x}, expected {expect.stream:#x}")
        if expect.entry and ENTRIES.get(cap.entry) != expect.entry:
            diffs.append(f"arrived through {ENTRIES.get(cap.entry)}, expected {expect.entry}")
        if got != want:
            where = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                         min(len(got), len(want)))
            diffs.append(f"parameter bytes differ at byte {where} (got {got.hex()}, "
                         f"expected {want.hex()})")
        return "; ".join(diffs)


# ------------------------------------------------------------------ rows
@dataclass
class Case:
    """One cell: ``timer(iters) -> ns per launch``, ``once()`` one launch,
    and what the driver must receive from it."""
    timer: object
    once: object
    expect: Expect | None       # None: a reference row, nothing launched to check


@dataclass
class NullRow:
    name: str
    source: str
    entry: str | None           # the C loop it is compared with; None: a reference row
    note: str
    cases: dict = field(default_factory=dict)       # n -> Case | Exception
    status: str = OK
    reason: str = ""
    samples: dict = field(default_factory=dict)     # n -> [ns]
    iters: dict = field(default_factory=dict)


class Skip(Exception):
    """The row cannot run here, for the stated reason."""


def _timer(statement: str, env: dict):
    from ..harness.timing import plain, spelled_loop
    return plain(spelled_loop(statement, env))


def _once(statement: str, env: dict):
    from ..harness.timing import spelled_loop
    loop = spelled_loop(statement, env)
    return lambda: loop(1)


def quicklaunch_rows(drv: Driver) -> list:
    """quicklaunch's paths and the C loops on both launch entries."""
    import quicklaunch as ql

    from .. import _floor
    from ..harness.baseline import CBaseline, c_params, library
    from ..harness.kernels import SOURCE as KSRC
    from ..harness.kernels import bench_kernels, host_args
    from ..harness.timing import argenv, arglist
    from ..launch import GRAPH_LAUNCHES
    dev = ql.device("cuda")
    mod = ql.compile(KSRC, device=dev)
    dbg = ql.compile(KSRC, device=dev, debug=True)
    try:
        stb = ql.compile(KSRC, device=dev, stub=True)
    except ql.CompileError as exc:   # no host C++ compiler: the row says so
        stb = exc
    c = CBaseline(dev)
    clib = library()
    _, _, kinds = bench_kernels()
    rows = {name: NullRow(name, src, entry, note) for name, src, entry, note in (
        ("quicklaunch indexed", "quicklaunch", ENTRY, "k[1, 1](a, x, y, n)"),
        ("quicklaunch configured", "quicklaunch", ENTRY,
         "run = k.configure(1, 1) once; run(a, x, y, n)"),
        ("quicklaunch direct", "quicklaunch", ENTRY, "k.launch(1, 1, a, x, y, n)"),
        ("quicklaunch graph replay", "quicklaunch", ENTRY,
         f"{GRAPH_LAUNCHES} configured launches recorded once, g.replay(); ns per kernel "
         "(one cuGraphLaunch per replay: on the null driver nearly free)"),
        ("quicklaunch C stub", "quicklaunch", ENTRY,
         "a stub=True build's configured launch: the kernel's C host stub (nvcc's), then "
         "cuLaunchKernel"),
        ("quicklaunch debug stub", "quicklaunch", ENTRY,
         "a debug=True build's configured launch: checks in Python, then the C path"),
        (C_LOOP[ENTRY], "reference", None,
         "C loop calling cuLaunchKernel with a prebuilt parameter block"),
        (C_LOOP[ENTRY_EX], "reference", None,
         "C loop calling cuLaunchKernelEx with a CUlaunchConfig and parameters built once"),
        ("C-ext floor", "reference", None, "a METH_FASTCALL function doing nothing"),
        ("python loop", "reference", None, "the empty for-loop step every Python row pays"),
    )}
    for n in (4, 16):
        k = mod.get_kernel(f"empty{n}")
        args = host_args(n, dev)
        run = k.configure(1, 1)
        env = {"k": k, "run": run, "stub": dbg.get_kernel(f"empty{n}").configure(1, 1),
               "floor": _floor.nothing, **argenv(args)}
        a = arglist(n)
        values = [x.ptr if hasattr(x, "ptr") else x for x in args]
        exp = Expect(f"empty{n}", c_layout(kinds[n], values), entry=ENTRY)
        for row, stmt in (("quicklaunch indexed", f"k[1, 1]({a})"),
                          ("quicklaunch configured", f"run({a})"),
                          ("quicklaunch direct", f"k.launch(1, 1, {a})"),
                          ("quicklaunch debug stub", f"stub({a})")):
            rows[row].cases[n] = Case(_timer(stmt, env), _once(stmt, env), exp)
        if isinstance(stb, Exception):
            rows["quicklaunch C stub"].cases[n] = stb
        else:
            env["cstub"] = stb.get_kernel(f"empty{n}").configure(1, 1)
            rows["quicklaunch C stub"].cases[n] = Case(
                _timer(f"cstub({a})", env), _once(f"cstub({a})", env), exp)
        try:
            with ql.graph(device=dev) as g:
                for _ in range(GRAPH_LAUNCHES):
                    run(*args)

            def record_one(run=run, args=args):
                with ql.graph(device=dev):
                    run(*args)
            from ..harness.timing import per_launch
            rows["quicklaunch graph replay"].cases[n] = Case(
                per_launch(_timer("g.replay()", {"g": g}), GRAPH_LAUNCHES), record_one,
                Expect(f"empty{n}", exp.params, stream=None, entry="cuGraphAddKernelNode"))
        except Exception as exc:  # noqa: BLE001 - the row or section says why
            rows["quicklaunch graph replay"].cases[n] = exc
        block, holders = c_params(k, args)

        def c_time(it, block=block, holders=holders, k=k):
            return c.launch_ns(k, block, it)
        rows[C_LOOP[ENTRY]].cases[n] = Case(
            c_time, lambda block=block, k=k: c.launch_once(k, block), exp)
        cfg = LaunchConfig(1, 1, 1, 1, 1, 1, 0, None, None, 0)
        ex = _entry_address(drv, dev, ENTRY_EX)

        def ex_time(it, block=block, holders=holders, k=k, cfg=cfg, ex=ex):
            v = clib.ql_bench_launch_ex_ns(ex, ctypes.addressof(cfg), k.handle, block, it)
            if v < 0:
                raise RuntimeError(f"cuLaunchKernelEx returned status {-v:.0f}")
            return v
        rows[C_LOOP[ENTRY_EX]].cases[n] = Case(
            ex_time, lambda t=ex_time: t(1),
            Expect(f"empty{n}", exp.params, entry=ENTRY_EX))
        rows["C-ext floor"].cases[n] = Case(_timer(f"floor({a})", env), None, None)
        rows["python loop"].cases[n] = Case(_timer("pass", env), None, None)
    return list(rows.values())


def _entry_address(drv: Driver | None, dev, name: str) -> int:
    """A driver entry's address: from the null driver, or (the real driver,
    ``drv`` None) from the library quicklaunch's backend launches through."""
    if drv is not None:
        return drv.entry(name)
    lib = ctypes.CDLL(str(dev.backend.entry_library))
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


def _need(module: str, package: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Skip(f"{package} is not installed ({type(exc).__name__}: {exc}); "
                   f"pip install 'quicklaunch[bench]'") from None


def _ptx() -> bytes:
    import quicklaunch as ql

    from ..harness.kernels import SOURCE as KSRC
    # sm_75 PTX: the oldest target NVRTC 13 has, JIT-compiled by any newer GPU's driver
    return ql.cuda.compile(KSRC, arch="sm_75").ptx.encode() + b"\0"


def bindings_rows(drv: Driver) -> list:
    rows = [NullRow("cuda.bindings cuLaunchKernel, prebuilt void**", "cuda.bindings", ENTRY,
                    "cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, 0), params the "
                    "address of a void *[] built once"),
            NullRow("cuda.bindings cuLaunchKernel, args tuple", "cuda.bindings", ENTRY,
                    "cuLaunchKernel(..., ((a, x, y, n), (c_float, None, None, c_int)), 0): "
                    "the values and their ctypes types per call")]
    try:
        cu = _need("cuda.bindings.driver", "cuda-bindings")
        from ..harness.kernels import bench_kernels
        from ..harness.timing import argenv
        _, host, kinds = bench_kernels()
        err, = cu.cuInit(0)
        _ok(err, "cuInit")
        err, dev = cu.cuDeviceGet(0)
        _ok(err, "cuDeviceGet")
        err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
        _ok(err, "cuDevicePrimaryCtxRetain")
        _ok(cu.cuCtxSetCurrent(ctx)[0], "cuCtxSetCurrent")
        err, mod = cu.cuModuleLoadData(_ptx())
        _ok(err, "cuModuleLoadData")
    except Exception as exc:  # noqa: BLE001 - the row or section says why
        for r in rows:
            r.cases = {4: exc, 16: exc}
        return rows
    import numpy as np
    ctypes_of = {"float32": ctypes.c_float, "float64": ctypes.c_double,
                 "int32": ctypes.c_int, "uint32": ctypes.c_uint, "int64": ctypes.c_longlong,
                 "uint64": ctypes.c_ulonglong}
    for n in (4, 16):
        err, f = cu.cuModuleGetFunction(mod, f"empty{n}".encode())
        _ok(err, "cuModuleGetFunction")
        made, vals = {}, []
        for v in host[n]:
            if isinstance(v, np.ndarray):
                if id(v) not in made:
                    err, made[id(v)] = cu.cuMemAlloc(max(v.nbytes, 1))
                    _ok(err, "cuMemAlloc")
                vals.append(made[id(v)])
            else:
                vals.append(v)
        addrs = [int(v) if k is None else v for v, k in zip(vals, kinds[n])]
        holders = [ctypes.c_uint64(a) if k is None else ctypes_of[k](a)
                   for a, k in zip(addrs, kinds[n])]
        block = (ctypes.c_void_p * n)(*[ctypes.addressof(h) for h in holders])
        types = tuple(None if k is None else ctypes_of[k] for k in kinds[n])
        _KEEP.append((block, holders))      # spelled loops keep only the names they use
        env = {"cu": cu, "f": f, "stream": 0, "params": ctypes.addressof(block),
               "types": types, **argenv(vals)}
        a = ", ".join(f"a{i}" for i in range(n))
        exp = Expect(f"empty{n}", c_layout(kinds[n], addrs), entry=ENTRY)
        for row, stmt in ((rows[0], "cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, "
                                    "params, 0)"),
                          (rows[1], f"cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, "
                                    f"(({a},), types), 0)")):
            row.cases[n] = Case(_timer(stmt, env), _once(stmt, env), exp)
    return rows


_KEEP: list = []     # parameter blocks the rows point into, alive for the process


def _ok(err, what):
    if int(err) != 0:
        raise RuntimeError(f"{what} returned {err}")


def core_rows(drv: Driver) -> list:
    rows = [NullRow("cuda.core launch(), config built once", "cuda.core", ENTRY_EX,
                    "launch(stream, config, kernel, a, x, y, n); NumPy scalars, cuda.core "
                    "Buffers, config = LaunchConfig(grid=1, block=1) once"),
            NullRow("cuda.core launch(), config per call", "cuda.core", ENTRY_EX,
                    "launch(stream, LaunchConfig(grid=1, block=1), kernel, ...)")]
    try:
        _need("cuda.bindings", "cuda-bindings")
        cc = _need("cuda.core", "cuda-core")
        if not hasattr(cc, "launch"):
            cc = _need("cuda.core.experimental", "cuda-core")
        from ..harness.kernels import bench_kernels, typed_args
        from ..harness.timing import argenv, arglist
        _, _, kinds = bench_kernels()
        dev = cc.Device(0)
        dev.set_current()
        obj = cc.ObjectCode.from_ptx(_ptx())
        stream = dev.create_stream()
        for n in (4, 16):
            kern = obj.get_kernel(f"empty{n}")
            args = typed_args(n, lambda a: dev.allocate(max(a.nbytes, 1), stream=stream))
            values = [int(a.handle) if k is None else a for a, k in zip(args, kinds[n])]
            env = {"launch": cc.launch, "LaunchConfig": cc.LaunchConfig, "stream": stream,
                   "config": cc.LaunchConfig(grid=1, block=1), "kern": kern, **argenv(args)}
            exp = Expect(f"empty{n}", c_layout(kinds[n], values), stream=int(stream.handle),
                         entry=ENTRY_EX)
            for row, stmt in ((rows[0], f"launch(stream, config, kern, {arglist(n)})"),
                              (rows[1], f"launch(stream, LaunchConfig(grid=1, block=1), "
                                        f"kern, {arglist(n)})")):
                row.cases[n] = Case(_timer(stmt, env), _once(stmt, env), exp)
    except Exception as exc:  # noqa: BLE001 - the row or section says why
        for r in rows:
            r.cases = {4: exc, 16: exc}
    return rows


def numba_rows(drv: Driver) -> list:
    row = NullRow("numba-cuda k[1, 1](...)", "numba-cuda", ENTRY,
                  "@cuda.jit kernel, k[1, 1](a, x, y, n): NumPy scalars, device arrays from "
                  "cuda.to_device; numba passes each array as 5 + 2 x ndim fields")
    try:
        cuda = _need("numba.cuda", "numba-cuda")
        import numpy as np

        from ..harness.kernels import python_kernels, typed_args
        from ..harness.timing import argenv, arglist
        kernels = python_kernels(cuda.jit)
        for n in (4, 16):
            args = typed_args(n, cuda.to_device)
            k = kernels[n]
            params = []
            for a in args:
                if hasattr(a, "device_ctypes_pointer"):
                    ptr = a.device_ctypes_pointer.value or 0
                    fields = [0, 0, a.size, a.dtype.itemsize, ptr, *a.shape, *a.strides]
                    params += [(8, int(v).to_bytes(8, "little", signed=True)) for v in fields]
                else:
                    b = np.asarray(a).tobytes()
                    params.append((len(b), b))
            env = {"k": k, **argenv(args)}
            stmt = f"k[1, 1]({arglist(n)})"
            row.cases[n] = Case(_timer(stmt, env), _once(stmt, env),
                                Expect(f"empty{n}", params, entry=ENTRY))
    except Exception as exc:  # noqa: BLE001 - the row or section says why
        row.cases = {4: exc, 16: exc}
    return [row]


SOURCES = (quicklaunch_rows, bindings_rows, core_rows, numba_rows)


# ------------------------------------------------------------------ measuring
def _why(exc: BaseException) -> tuple[str, str]:
    text = " ".join(str(exc).split())[:400]
    if isinstance(exc, Skip):
        return SKIPPED, text
    return ERROR, f"{type(exc).__name__}: {text}"


def _batched(timer, sync, batch: int):
    """A real GPU's version of ``timer``: launches in batches of ``batch``,
    ``sync()`` (untimed) after each, so the queue never fills and device time
    never enters the figure (as the CUDA benchmark's rows do)."""
    def run(iters: int) -> float:
        sync()
        total, left = 0.0, iters
        while left > 0:
            n = min(batch, left)
            total += timer(n) * n
            sync()
            left -= n
        return total / iters
    return run


def real_sync():
    """cuCtxSynchronize of the machine's driver (the rows share its primary context)."""
    import quicklaunch as ql
    return ql.device("cuda").synchronize


def measure(drv: Driver | None, sources=SOURCES, *, rounds: int, sample_s: float,
            max_iters: int, check: bool = True, progress=None, sync=None,
            batch: int = 256) -> dict:
    """Sets up every source's rows, checks each launch once (``check``; the
    real driver has no check switch), then times the rows in ``rounds``
    interleaved rounds; returns the section's "rows" (see benchmarks/README.md).
    ``sync``: on a real GPU, the synchronisation between batches of ``batch``
    launches (untimed)."""
    rows: list[NullRow] = []
    for src in sources:
        try:
            rows += src(drv)
        except Exception as exc:  # noqa: BLE001 - the row or section says why
            r = NullRow(getattr(src, "__name__", str(src)), "?", None, "")
            r.status, r.reason = _why(exc)
            rows.append(r)
    live = []
    for r in rows:
        for n, case in list(r.cases.items()):
            if isinstance(case, BaseException):
                r.status, r.reason = _why(case)
                r.cases = {}
                break
        for n, case in r.cases.items():
            if check and case.expect is not None:
                try:
                    diff = drv.check(case.expect, case.once)
                except Exception as exc:  # noqa: BLE001 - the row or section says why
                    diff = f"the launch raised {type(exc).__name__}: {exc}"
                if diff:
                    r.status, r.reason = ERROR, f"launch check failed ({n} params): {diff}"
                    r.cases = {}
                    break
        if r.cases:
            live.append(r)
    if sync is not None:
        for r in live:
            for case in r.cases.values():
                case.timer = _batched(case.timer, sync, batch)
    # calibrate: iterations per sample so a sample takes about sample_s
    for r in live:
        for n, case in list(r.cases.items()):
            try:
                case.timer(10)
                est = max(case.timer(200), 1.0)
                r.iters[n] = int(min(max(sample_s * 1e9 / est, 50), max_iters))
                r.samples[n] = []
            except Exception as exc:  # noqa: BLE001 - the row or section says why
                r.status, r.reason = _why(exc)
                r.cases = {}
                break
    live = [r for r in live if r.cases]
    for rnd in range(rounds):
        for r in live:
            for n, case in r.cases.items():
                r.samples[n].append(case.timer(r.iters[n]))
        if progress:
            progress(rnd + 1, rounds, f"round {rnd + 1} of {rounds}")
    out = {}
    for r in rows:
        med = {str(n): (statistics.median(v) if v else None)
               for n, v in ((n, r.samples.get(n)) for n in (4, 16))}
        out[r.name] = {**med, "status": r.status if (r.samples or r.status != OK) else ERROR,
                       "reason": r.reason if (r.samples or r.status != OK) else "not measured",
                       "source": r.source, "entry": r.entry, "note": r.note,
                       "iters": {str(n): i for n, i in r.iters.items()},
                       "checked": bool(check and r.samples and r.entry)}
    for r in out.values():              # minus the C loop on the same entry
        base = out.get(C_LOOP.get(r["entry"]) or "", {})
        r["minus_c"] = {n: (round(r[n] - base[n], 1) if r.get(n) is not None and
                            base.get(n) is not None else None) for n in ("4", "16")}
    for name, (source, why) in UNSUPPORTED_ROWS.items():
        if not check:                    # the real driver: these run in the CUDA benchmark
            why = ("not in this table on a real driver: python -m quicklaunch.bench.cuda "
                   "(benchmarks/cuda_launch.py) measures it")
        out[name] = {"4": None, "16": None, "status": UNSUPPORTED if check else SKIPPED,
                     "reason": why,
                     "source": source, "entry": None, "note": "", "iters": {},
                     "checked": False, "minus_c": {"4": None, "16": None}}
    return out


def section(quick: bool = False, timeout: float = 150.0, settings: dict | None = None,
            sources_ref: str | None = None, python: str | None = None) -> dict:
    """The bench section: builds the null driver privately, measures in a
    child process, returns {"title", "status", "reason", "rows", ...}.
    ``sources_ref`` ("module:attribute") replaces SOURCES (tests)."""
    mode = {**(QUICK if quick else FULL), **(settings or {})}
    head = {"title": TITLE, "schema": SCHEMA, "unit": "ns per launch", "params": [4, 16],
            **mode}
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="quicklaunch-null-cuda-")
    try:
        try:
            lib = build(tmp)
        except Exception as exc:  # noqa: BLE001 - the row or section says why
            return {**head, "status": ERROR, "reason": str(exc)[:2000], "rows": {}}
        out = Path(tmp) / "result.json"
        cmd = [python or sys.executable, "-X", "faulthandler", "-m",
               "quicklaunch.bench.cuda.null_overhead", "--child",
               "--out", str(out), "--rounds", str(mode["rounds"]),
               "--sample-s", str(mode["sample_s"]), "--max-iters", str(mode["max_iters"])]
        if sources_ref:
            cmd += ["--sources", sources_ref]
        try:
            proc = subprocess.run(cmd, env=child_env(lib), capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {**head, "status": ERROR, "rows": {},
                    "reason": f"the measuring child process ran past {timeout:.0f} s"}
        if proc.returncode != 0 or not out.is_file():
            text = proc.stderr or proc.stdout or ""
            if "Fatal Python error" in text:      # faulthandler: the Python stack, not the modules
                text = text[text.index("Fatal Python error"):].split("\nExtension modules")[0]
            tail = text[-1500:]
            return {**head, "status": ERROR, "rows": {},
                    "reason": f"the measuring child process exited with {proc.returncode}: "
                              f"{tail}"}
        got = json.loads(out.read_text())
        return {**head, "status": OK, "reason": "", **got,
                "seconds": round(time.monotonic() - t0, 1)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load(ref: str):
    import importlib
    mod, _, attr = ref.partition(":")
    return getattr(importlib.import_module(mod), attr)


def child(args) -> int:
    """In the child: measure with the null driver the environment names (or,
    with --real, the machine's driver, unchecked)."""
    sources = _load(args.sources) if args.sources else SOURCES
    drv = None if args.real else Driver(os.environ["QUICKLAUNCH_LIBCUDA"])
    rows = measure(drv, sources, rounds=args.rounds, sample_s=args.sample_s,
                   max_iters=args.max_iters, check=not args.real,
                   sync=real_sync() if args.real else None)
    versions = {}
    from importlib import metadata
    for dist in ("quicklaunch", "cuda-bindings", "cuda-core", "numba-cuda", "numba", "numpy"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    result = {"driver": "real" if args.real else "null", "rows": rows, "versions": versions}
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


# ------------------------------------------------------------------ the table
def _f(v) -> str:
    if v is None:
        return "—"
    return f"{v / 1e3:,.1f} us" if v >= 1e4 else f"{v:.1f}"


def table(sec: dict) -> str:
    """The section as text (quicklaunch bench prints it)."""
    if sec.get("status") != OK:
        return f"{sec.get('title', TITLE)}: {sec.get('status')}: {sec.get('reason')}"
    rows = sec.get("rows") or {}
    width = max([len(n) for n in rows] + [24]) + 2
    out = [f"{sec.get('title', TITLE)}: ns per launch of an empty kernel, grid 1, block 1; "
           f"median of {sec.get('rounds')} interleaved rounds; '- C' is the row minus the C "
           f"loop on the same driver entry",
           f"{'launcher':<{width}}{'4 params':>11}{'16 params':>11}{'- C (4)':>10}"
           f"{'- C (16)':>10}  entry / status"]
    for name, r in rows.items():
        mc = r.get("minus_c") or {}
        tail = r.get("entry") or ""
        if r.get("status") != OK:
            tail = f"{r.get('status')}: {' '.join(str(r.get('reason')).split())[:110]}"
        m4 = "" if mc.get("4") is None else f"{mc['4']:+.1f}"
        m16 = "" if mc.get("16") is None else f"{mc['16']:+.1f}"
        out.append(f"{name:<{width}}{_f(r.get('4')):>11}{_f(r.get('16')):>11}{m4:>10}"
                   f"{m16:>10}  {tail}".rstrip())
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.cuda.null_overhead",
                                description=TITLE)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="write the section as JSON here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--real", action="store_true",
                   help="measure on this machine's real CUDA driver (a GPU), unchecked")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--sample-s", type=float, default=None)
    p.add_argument("--max-iters", type=int, default=None)
    p.add_argument("--sources", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    mode = {**(QUICK if args.quick else FULL)}
    for key in ("rounds", "sample_s", "max_iters"):
        if getattr(args, key) is not None:
            mode[key] = getattr(args, key)
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")   # grid 1 is the point
    if args.child:
        args.rounds, args.sample_s, args.max_iters = (mode["rounds"], mode["sample_s"],
                                                      mode["max_iters"])
        return child(args)
    if args.real:
        sec = {"title": "CUDA launch overhead above the driver (real driver)", "schema": SCHEMA,
               "unit": "ns per launch", "params": [4, 16], **mode, "status": OK,
               "reason": "", "driver": "real",
               "rows": measure(None, SOURCES, rounds=mode["rounds"],
                               sample_s=mode["sample_s"], max_iters=mode["max_iters"],
                               check=False, sync=real_sync(), batch=256), "batch": 256}
    else:
        sec = section(settings=mode)
    print(table(sec))
    if args.out:
        Path(args.out).write_text(json.dumps(sec, indent=1))
    return 0 if sec.get("status") == OK else 1


if __name__ == "__main__":
    sys.exit(main())

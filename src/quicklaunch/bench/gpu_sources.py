"""The rows of the CUDA launch benchmark: quicklaunch, the C baseline and the
peers, each a Source (see gpu.py) whose setup imports its library, compiles
the empty kernels and returns timers.

Every library launches the same two empty kernels as the CPU launch
benchmark (quicklaunch.bench.launch.SOURCE: 4 and 16 parameters), on grid 1,
block 1 (Triton and Warp pick their own block size), through its documented,
everyday path, with its own arrays for the pointer parameters and the scalar
types its documentation asks for. Each peer's setup runs only when its
package imports; anything missing or failing becomes the row's reason.

No ``from __future__ import annotations`` here: Warp reads the kernels'
parameter annotations as objects.
"""
import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .gpu import (
    INFLIGHT,
    LAUNCH,
    NotApplicable,
    RowSpec,
    Skip,
    Source,
    argenv,
    arglist,
    batched,
    in_flight,
    plain,
    spelled_loop,
)

CUDA_BASELINE_SOURCE = Path(__file__).with_name("cuda_baseline.c")

# A kernel that computes, to check that launches through quicklaunch and
# through the C baseline really run with the intended arguments.
CHECK_SOURCE = r"""
extern "C" __global__ void axpy4(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

# C parameter types of the benchmark kernels -> NumPy scalar type names
_SCALARS = {"float": "float32", "double": "float64", "int": "int32", "signed": "int32",
            "signed int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
            "long long": "int64", "long long int": "int64", "signed long long": "int64",
            "unsigned long long": "uint64", "unsigned long long int": "uint64",
            "long": "int64", "unsigned long": "uint64", "short": "int16",
            "unsigned short": "uint16", "char": "int8", "signed char": "int8",
            "unsigned char": "uint8", "bool": "bool_"}

# quicklaunch Param.kind -> ctypes type for the C baseline's parameter block
_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "bool": ctypes.c_bool}


def bench_kernels():
    """(SOURCE, {n: host args}, {n: [numpy scalar type name, or None for a
    pointer]}) for the 4- and 16-parameter kernels of the CPU benchmark."""
    from ..signature import parse_kernels
    from .launch import SOURCE, _args
    kinds = {}
    for decl in parse_kernels(SOURCE):
        n = len(decl.params)
        kinds[n] = [None if p.ctype.rstrip().endswith("*")
                    else _SCALARS[" ".join(p.ctype.replace("const", "").split())]
                    for p in decl.params]
    return SOURCE, {n: _args(n) for n in kinds}, kinds


def typed_args(n, make_array, scalar_style="numpy"):
    """The n-parameter kernel's arguments for a library: each NumPy array of
    the host arguments replaced by ``make_array(ndarray)`` (the same array
    object twice gives the same device array twice), each scalar as a NumPy
    scalar of the parameter's C type, or left a Python number when
    ``scalar_style`` is "python"."""
    import numpy as np
    _, host, kinds = bench_kernels()
    made, out = {}, []
    for value, kind in zip(host[n], kinds[n]):
        if isinstance(value, np.ndarray):
            if id(value) not in made:
                made[id(value)] = make_array(value)
            out.append(made[id(value)])
        elif scalar_style == "python" or kind is None:
            out.append(value)
        else:
            out.append(getattr(np, kind)(value))
    return out


def need(module, package):
    """Imports ``module`` or raises Skip naming the package to install."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Skip(f"{package} is not installed ({type(exc).__name__}: {exc})") from None


def _ordinal(device):
    _, _, n = str(device).partition(":")
    return int(n) if n.isdigit() else 0


# ------------------------------------------------------------ reference rows

def _setup_reference(ctx):
    """The empty Python loop step and the C-extension floor: what any Python
    launcher pays before doing anything (no GPU involved)."""
    from . import _floor
    _, host, _ = bench_kernels()
    out = {"ref.floor": {}, "ref.loop": {}}
    for n in ctx.params:
        env = {"floor": _floor.nothing, **argenv(host[n])}
        out["ref.floor"][n] = plain(spelled_loop(f"floor({arglist(n)})", env))
        out["ref.loop"][n] = plain(spelled_loop("pass", {}))
    return out


# ------------------------------------------------------------ quicklaunch and C

def _setup_quicklaunch(ctx):
    import numpy as np

    import quicklaunch as ql
    source = bench_kernels()[0]
    dev = ql.device(ctx.device)
    if dev.kind != "cuda":
        raise Skip(f"quicklaunch device {dev.name} is not a CUDA GPU")
    mod = ql.compile(source, device=dev)
    sync = dev.synchronize
    if ctx.check:
        _check_quicklaunch(ql, np, dev)
        ctx.info["quicklaunch_result_check"] = "passed"
    out, kernels = {}, {}
    for n in ctx.params:
        k = mod.get_kernel(f"empty{n}")
        args = typed_args(n, lambda a: ql.empty(a.shape, a.dtype, device=dev), "python")
        run = k.configure(1, 1)
        env = {"k": k, "run": run, "sync": sync, **argenv(args)}
        a = arglist(n)
        out.setdefault("ql.indexed", {})[n] = batched(spelled_loop(f"k[1, 1]({a})", env), sync,
                                                      ctx.batch)
        out.setdefault("ql.configured", {})[n] = batched(spelled_loop(f"run({a})", env), sync,
                                                         ctx.batch)
        out.setdefault("ql.direct", {})[n] = batched(spelled_loop(f"k.launch(1, 1, {a})", env),
                                                     sync, ctx.batch)
        out.setdefault("ql.inflight", {})[n] = in_flight(spelled_loop(f"run({a})", env), sync)
        out.setdefault("ql.roundtrip", {})[n] = plain(spelled_loop(f"run({a}); sync()", env))
        out.setdefault("ql.sync", {})[n] = plain(spelled_loop("sync()", env))
        kernels[n] = (k, args)
    try:
        out.update(_c_timers(ctx, ql, np, dev, kernels, sync))
    except Exception as exc:   # the C rows fail alone; quicklaunch's still run
        for spec in QUICKLAUNCH.rows:
            if spec.id.startswith("c."):
                out[spec.id] = exc
    return out


def _check_quicklaunch(ql, np, dev):
    k = ql.compile(CHECK_SOURCE, device=dev).get_kernel("axpy4")
    x = ql.asarray(np.arange(64, dtype=np.float32), device=dev)
    y = ql.asarray(np.ones(64, np.float32), device=dev)
    k[2, 32](2.0, x, y, 64)
    dev.synchronize()
    want = 2 * np.arange(64, dtype=np.float32) + 1
    got = y.numpy()
    if not np.array_equal(got, want):
        raise RuntimeError(f"check kernel computed wrong values through quicklaunch: "
                           f"{got[:6]} ..., expected {want[:6]} ...")


def find_cc():
    for cc in (os.environ.get("CC"), "gcc", "cc"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def build_cuda_baseline(out_dir=None, extra_flags=()):
    """Compiles cuda_baseline.c into a shared library and returns its path.
    RuntimeError with the compiler's output when that fails."""
    cc = find_cc()
    if cc is None:
        raise RuntimeError("no C compiler (gcc, cc, or $CC) for the C baseline")
    out = Path(out_dir or tempfile.mkdtemp(prefix="quicklaunch-cuda-baseline-"))
    lib = out / "cuda_baseline.so"
    cmd = [cc, "-O2", "-shared", "-fPIC", *extra_flags, "-o", str(lib),
           str(CUDA_BASELINE_SOURCE), "-ldl"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the C baseline failed: {' '.join(cmd)}\n{proc.stderr}")
    return lib


class CudaBaseline:
    """cuda_baseline.c loaded with ctypes; figures come back as ns per launch,
    and a driver status as a RuntimeError."""

    def __init__(self, lib_path, libcuda, api_version):
        self.lib = lib = ctypes.CDLL(str(lib_path))
        vp, ul, ln = ctypes.c_void_p, ctypes.c_uint, ctypes.c_long
        pp = ctypes.POINTER(ctypes.c_void_p)
        sig = {"qlcb_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
               "qlcb_error": (ctypes.c_char_p, []),
               "qlcb_launch_entry": (vp, []),
               "qlcb_launch_once": (ctypes.c_int, [vp, pp, ul, ul]),
               "qlcb_synchronize": (ctypes.c_int, []),
               "qlcb_launch_ns": (ctypes.c_double, [vp, pp, ul, ul, ln, ln]),
               "qlcb_inflight_ns": (ctypes.c_double, [vp, pp, ul, ul, ln]),
               "qlcb_roundtrip_ns": (ctypes.c_double, [vp, pp, ul, ul, ln]),
               "qlcb_sync_ns": (ctypes.c_double, [ln])}
        for name, (res, args) in sig.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        if lib.qlcb_open(str(libcuda).encode(), int(api_version)) != 0:
            raise RuntimeError(lib.qlcb_error().decode(errors="replace"))
        self.entry = lib.qlcb_launch_entry()

    @staticmethod
    def _ns(value, what):
        if value < 0:
            raise RuntimeError(f"{what}: the driver returned CUresult {-value:.0f}")
        return value

    def launch_ns(self, func, params, iters, batch):
        return self._ns(self.lib.qlcb_launch_ns(func, params, 1, 1, iters, batch), "cuLaunchKernel")

    def inflight_ns(self, func, params, n):
        return self._ns(self.lib.qlcb_inflight_ns(func, params, 1, 1, n), "cuLaunchKernel")

    def roundtrip_ns(self, func, params, iters):
        return self._ns(self.lib.qlcb_roundtrip_ns(func, params, 1, 1, iters), "launch + sync")

    def sync_ns(self, iters):
        return self._ns(self.lib.qlcb_sync_ns(iters), "cuCtxSynchronize")


def device_address(obj):
    ptr = getattr(obj, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    return obj.__cuda_array_interface__["data"][0]


def c_params(kernel, args):
    """A void *params[] block for cuLaunchKernel holding ``args`` as the
    kernel's parameters, and the ctypes objects that keep the values alive."""
    holders = []
    for p, a in zip(kernel.params, args):
        if p.kind.endswith("pointer"):
            holders.append(ctypes.c_uint64(device_address(a)))
        elif p.kind in _CTYPES:
            holders.append(_CTYPES[p.kind](a))
        else:
            raise TypeError(f"the C baseline cannot pass parameter {p.name} of kind {p.kind}")
    block = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.addressof(h) for h in holders])
    return block, holders


def _driver_facts():
    """(libcuda path, API version, quicklaunch's cuLaunchKernel address or None)."""
    try:
        from ..backends.cuda import driver as drv
        d = drv.driver()
        return drv.library_path(), drv.API_VERSION, getattr(d, "launch_address", None)
    except Exception:
        return os.environ.get("QUICKLAUNCH_LIBCUDA") or "libcuda.so.1", 12000, None


def _c_timers(ctx, ql, np, dev, kernels, sync):
    libcuda, api, ql_entry = _driver_facts()
    c = CudaBaseline(build_cuda_baseline(), libcuda, api)
    ctx.info["c_baseline_calls_quicklaunch_entry"] = (None if ql_entry is None
                                                      else c.entry == ql_entry)
    if ctx.check:
        k = ql.compile(CHECK_SOURCE, device=dev).get_kernel("axpy4")
        x = ql.asarray(np.arange(32, dtype=np.float32), device=dev)
        y = ql.asarray(np.ones(32, np.float32), device=dev)
        block, holders = c_params(k, (2.0, x, y, 32))
        sync()
        status = c.lib.qlcb_launch_once(k._handle, block, 1, 32)
        if status:
            raise RuntimeError(f"cuLaunchKernel from C returned CUresult {status}")
        sync()
        want = 2 * np.arange(32, dtype=np.float32) + 1
        if not np.array_equal(y.numpy(), want):
            raise RuntimeError("check kernel computed wrong values when launched from C: "
                               f"{y.numpy()[:6]} ..., expected {want[:6]} ...")
        ctx.info["c_baseline_result_check"] = "passed"
    out = {"c.launch": {}, "c.inflight": {}, "c.roundtrip": {}, "c.sync": {}}
    for n, (k, args) in kernels.items():
        block, holders = c_params(k, args)
        keep = (block, holders, c)        # alive as long as the timers

        # sync() first: quicklaunch makes its context current on this thread if
        # another library left a different one current; C relies on that.
        def launch(it, k=k, keep=keep):
            sync()
            return c.launch_ns(k._handle, keep[0], it, ctx.batch)

        def inflight(it, k=k, keep=keep):
            sync()
            return c.inflight_ns(k._handle, keep[0], it)

        def roundtrip(it, k=k, keep=keep):
            sync()
            return c.roundtrip_ns(k._handle, keep[0], it)

        def sync_alone(it):
            sync()
            return c.sync_ns(it)

        out["c.launch"][n], out["c.inflight"][n] = launch, inflight
        out["c.roundtrip"][n], out["c.sync"][n] = roundtrip, sync_alone
    return out


# ------------------------------------------------------------ peers

def _setup_cuda_core(ctx):
    need("cuda.bindings", "cuda-bindings (cuda-python)")
    cc = need("cuda.core", "cuda-core")
    if not hasattr(cc, "launch"):          # releases before the API left "experimental"
        cc = need("cuda.core.experimental", "cuda-core")
    source, _, _ = bench_kernels()
    dev = cc.Device(_ordinal(ctx.device))
    dev.set_current()
    arch = "sm_" + "".join(str(v) for v in dev.compute_capability)
    module = cc.Program(source, code_type="c++",
                        options=cc.ProgramOptions(arch=arch)).compile("cubin")
    stream, config, launch = dev.default_stream, cc.LaunchConfig(grid=1, block=1), cc.launch
    out = {"cuda_core.launch": {}}
    for n in ctx.params:
        kern = module.get_kernel(f"empty{n}")
        args = typed_args(n, lambda a: dev.allocate(max(a.nbytes, 1)))
        env = {"launch": launch, "stream": stream, "config": config, "kern": kern,
               **argenv(args)}
        loop = spelled_loop(f"launch(stream, config, kern, {arglist(n)})", env)
        out["cuda_core.launch"][n] = batched(loop, dev.sync, ctx.batch)
    return out


def _setup_cupy(ctx):
    cp = need("cupy", "CuPy (cupy-cuda12x / cupy-cuda13x)")
    if cp.cuda.runtime.getDeviceCount() < 1:
        raise Skip("CuPy sees no CUDA device")
    source, _, _ = bench_kernels()
    device = cp.cuda.Device(_ordinal(ctx.device))
    device.use()
    out = {"cupy.rawkernel": {}}
    for n in ctx.params:
        kern = cp.RawKernel(source, f"empty{n}")
        args = typed_args(n, lambda a: cp.empty(a.shape, a.dtype))
        loop = spelled_loop(f"kern((1,), (1,), ({arglist(n)},))", {"kern": kern, **argenv(args)})
        out["cupy.rawkernel"][n] = batched(loop, device.synchronize, ctx.batch)
    return out


def _setup_torch(ctx):
    torch = need("torch", "torch")
    if not torch.cuda.is_available():
        raise Skip(f"torch.cuda.is_available() is False (torch {torch.__version__}, "
                   f"built for CUDA {torch.version.cuda})")
    dev = torch.device("cuda", _ordinal(ctx.device))
    x = torch.ones(1, device=dev)
    y = torch.zeros(1, device=dev)
    loop = spelled_loop("y.add_(x)", {"x": x, "y": y})
    out = {"torch.add": {}}
    for n in ctx.params:
        out["torch.add"][n] = (batched(loop, torch.cuda.synchronize, ctx.batch) if n == 4 else
                               NotApplicable(f"torch has no {n}-argument elementwise op"))
    return out


def _setup_numba(ctx):
    numba = need("numba", "numba-cuda")
    cuda = need("numba.cuda", "numba-cuda")
    try:
        numba.config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    except AttributeError:
        pass
    if not cuda.is_available():
        raise Skip("numba.cuda.is_available() is False (no GPU or no usable driver/NVVM "
                   "for Numba)")
    cuda.select_device(_ordinal(ctx.device))

    @cuda.jit
    def empty4(a, x, y, n):
        pass

    @cuda.jit
    def empty16(a, x, y, n, b, u, v, m, c, p, q, k, s, r, t, w):
        pass

    kernels = {4: empty4, 16: empty16}
    out = {"numba.indexed": {}, "numba.configured": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: cuda.device_array(a.shape, a.dtype), "python")
        env = {"kern": kern, "cfg": kern[1, 1], **argenv(args)}
        out["numba.indexed"][n] = batched(spelled_loop(f"kern[1, 1]({arglist(n)})", env),
                                          cuda.synchronize, ctx.batch)
        out["numba.configured"][n] = batched(spelled_loop(f"cfg({arglist(n)})", env),
                                             cuda.synchronize, ctx.batch)
    return out


def _setup_triton(ctx):
    torch = need("torch", "torch (Triton's launches take torch tensors)")
    triton = need("triton", "triton")
    if not torch.cuda.is_available():
        raise Skip("torch.cuda.is_available() is False, and Triton launches through torch's "
                   "CUDA device")
    dev = torch.device("cuda", _ordinal(ctx.device))
    torch.cuda.set_device(dev)

    @triton.jit
    def empty4(a, x, y, n):
        pass

    @triton.jit
    def empty16(a, x, y, n, b, u, v, m, c, p, q, k, s, r, t, w):
        pass

    kernels = {4: empty4, 16: empty16}
    dtypes = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32}
    out = {"triton.launch": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: torch.empty(a.shape, dtype=dtypes[str(a.dtype)],
                                                   device=dev), "python")
        loop = spelled_loop(f"kern[(1,)]({arglist(n)})", {"kern": kern, **argenv(args)})
        out["triton.launch"][n] = batched(loop, torch.cuda.synchronize, ctx.batch)
    return out


def _setup_warp(ctx):
    wp = need("warp", "warp-lang")
    try:
        wp.config.quiet = True
    except AttributeError:
        pass
    wp.init()
    if not wp.is_cuda_available():
        raise Skip("warp.is_cuda_available() is False")
    device = wp.get_device(f"cuda:{_ordinal(ctx.device)}")

    def empty4(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
               n: int):
        pass

    def empty16(a: float, x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                n: int, b: float, u: wp.array(dtype=wp.float32), v: wp.array(dtype=wp.float32),
                m: int, c: wp.float64, p: wp.array(dtype=wp.float64),
                q: wp.array(dtype=wp.float64), k: wp.int64, s: wp.uint32,
                r: wp.array(dtype=wp.int32), t: wp.array(dtype=wp.int32), w: wp.uint64):
        pass

    kernels = {}
    for n, fn in ((4, empty4), (16, empty16)):
        try:
            kernels[n] = wp.kernel(fn, module="unique")
        except TypeError:                   # releases without per-kernel modules
            kernels[n] = wp.kernel(fn)
    dtypes = {"float32": wp.float32, "float64": wp.float64, "int32": wp.int32}
    sync = functools.partial(wp.synchronize_device, device)
    out = {"warp.launch": {}, "warp.recorded": {}}
    for n in ctx.params:
        kern = kernels[n]
        args = typed_args(n, lambda a: wp.empty(a.shape, dtype=dtypes[str(a.dtype)],
                                                device=device), "python")
        cmd = wp.launch(kern, dim=1, inputs=list(args), device=device, record_cmd=True)
        env = {"wp": wp, "kern": kern, "device": device, "cmd": cmd, **argenv(args)}
        out["warp.launch"][n] = batched(
            spelled_loop(f"wp.launch(kern, dim=1, inputs=[{arglist(n)}], device=device)", env),
            sync, ctx.batch)
        out["warp.recorded"][n] = batched(spelled_loop("cmd.launch()", env), sync, ctx.batch)
    return out


# ------------------------------------------------------------ the sources, in table order

QUICKLAUNCH = Source("quicklaunch", (
    RowSpec("ql.indexed", "quicklaunch indexed", LAUNCH, "k[1, 1](a, x, y, n)"),
    RowSpec("ql.configured", "quicklaunch configured", LAUNCH,
            "run = k.configure(1, 1) once; run(a, x, y, n)"),
    RowSpec("ql.direct", "quicklaunch direct", LAUNCH, "k.launch(1, 1, a, x, y, n)"),
    RowSpec("c.launch", "C baseline", LAUNCH,
            "C loop calling cuLaunchKernel with a prebuilt void *params[] (cuda_baseline.c)"),
    RowSpec("ql.inflight", "quicklaunch configured, many in flight", INFLIGHT,
            "launches back to back, then one cuCtxSynchronize, all timed"),
    RowSpec("c.inflight", "C baseline, many in flight", INFLIGHT,
            "the same from C"),
    RowSpec("ql.roundtrip", "quicklaunch configured, launch + sync", INFLIGHT,
            "run(...) then dev.synchronize(), each launch"),
    RowSpec("c.roundtrip", "C baseline, launch + sync", INFLIGHT,
            "cuLaunchKernel then cuCtxSynchronize, each launch"),
    RowSpec("ql.sync", "quicklaunch dev.synchronize() alone", INFLIGHT,
            "nothing queued (the same call in both columns)"),
    RowSpec("c.sync", "C cuCtxSynchronize alone", INFLIGHT,
            "nothing queued: the floor of the round trip (the same call in both columns)"),
), _setup_quicklaunch, ("quicklaunch", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12"))

PEERS = [
    Source("cuda.core", (RowSpec(
        "cuda_core.launch", "cuda.core launch()", LAUNCH,
        "launch(stream, config, kernel, *args); NumPy scalars, cuda.core Buffers"),),
        _setup_cuda_core, ("cuda-core", "cuda-bindings", "cuda-python")),
    Source("cupy", (RowSpec(
        "cupy.rawkernel", "CuPy RawKernel", LAUNCH,
        "kern((1,), (1,), (a, x, y, n)); NumPy scalars (a Python float would be passed as "
        "a double), CuPy arrays"),),
        _setup_cupy, ("cupy", "cupy-cuda12x", "cupy-cuda13x")),
    Source("torch", (RowSpec(
        "torch.add", "torch y.add_(x), 1 element", LAUNCH,
        "not a custom kernel: one elementwise op on 1-element tensors through the "
        "dispatcher, the cheapest launch torch offers"),),
        _setup_torch, ("torch",)),
    Source("numba", (
        RowSpec("numba.indexed", "Numba-CUDA k[1, 1](...)", LAUNCH,
                "@cuda.jit; type dispatch on every call; device arrays; low-occupancy "
                "warnings off (NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0)"),
        RowSpec("numba.configured", "Numba-CUDA cfg = k[1, 1] once", LAUNCH,
                "the launch configuration bound once, then cfg(a, x, y, n)")),
        _setup_numba, ("numba-cuda", "numba", "llvmlite")),
    Source("triton", (RowSpec(
        "triton.launch", "Triton k[(1,)](...)", LAUNCH,
        "@triton.jit, the normal launch path (binder, specialisation key, launcher); "
        "torch tensors; 4 warps per block"),),
        _setup_triton, ("triton", "torch")),
    Source("warp", (
        RowSpec("warp.launch", "Warp wp.launch", LAUNCH,
                "wp.launch(k, dim=1, inputs=[...]); wp.arrays; Warp's block of 256"),
        RowSpec("warp.recorded", "Warp recorded Launch.launch()", LAUNCH,
                "wp.launch(..., record_cmd=True) once, then replayed: fixed arguments, "
                "like the C baseline's prebuilt block")),
        _setup_warp, ("warp-lang",)),
]

REFERENCE = Source("reference", (
    RowSpec("ref.floor", "C-ext floor", LAUNCH,
            "a METH_FASTCALL function taking the arguments and doing nothing (no GPU)"),
    RowSpec("ref.loop", "python loop", LAUNCH, "the empty for-loop step every Python row pays"),
), _setup_reference)

SOURCES = [QUICKLAUNCH, *PEERS, REFERENCE]

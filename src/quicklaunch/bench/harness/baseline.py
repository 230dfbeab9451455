"""The C baseline of every launch benchmark: baseline.c from Python.

``CBaseline(device, sync=...)`` is a C loop calling the device's launch
entry (``device.backend.launch_entry``: the very function quicklaunch's
launcher calls) with a kernel handle quicklaunch loaded and a prebuilt
``void *params[]``; an asynchronous device names its synchronise function,
found in the library its backend launches through
(``device.backend.entry_library``). ``c_params`` builds the parameter block
for a kernel's arguments. ``library`` is baseline.c built by the host C
compiler (``find_cc``: ``$CC``, else cc, gcc or clang) and loaded, once per
process.
"""
import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("baseline.c")

# quicklaunch Param.kind -> ctypes type for the parameter block
_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "bool": ctypes.c_bool}

_vp, _ui, _ln = ctypes.c_void_p, ctypes.c_uint, ctypes.c_long
_pp = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "ql_bench_symbol": (_vp, [ctypes.c_char_p, ctypes.c_char_p]),
    "ql_bench_error": (ctypes.c_char_p, []),
    "ql_bench_launch_once": (ctypes.c_int, [_vp, _vp, _pp, _ui, _ui]),
    "ql_bench_launch_ns": (ctypes.c_double, [_vp, _vp, _vp, _pp, _ui, _ui, _ln, _ln]),
    "ql_bench_inflight_ns": (ctypes.c_double, [_vp, _vp, _vp, _pp, _ui, _ui, _ln]),
    "ql_bench_roundtrip_ns": (ctypes.c_double, [_vp, _vp, _vp, _pp, _ui, _ui, _ln]),
    "ql_bench_sync_ns": (ctypes.c_double, [_vp, _ln]),
    "ql_bench_saxpy_ns": (ctypes.c_double, [ctypes.c_float, _vp, _vp, _ln, _ln]),
    "ql_bench_launch_ex_ns": (ctypes.c_double, [_vp, _vp, _vp, _pp, _ln]),
}


def find_cc() -> str | None:
    """The C compiler: ``$CC``, else cc, gcc or clang; None when there is none."""
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    return None


def build(out_dir=None, extra_flags=()) -> Path:
    """Compiles baseline.c into a shared library and returns its path;
    RuntimeError with the compiler's output when that fails."""
    cc = find_cc()
    if cc is None:
        raise RuntimeError("no C compiler ($CC, cc, gcc or clang) for the C baseline")
    out = Path(out_dir or tempfile.mkdtemp(prefix="quicklaunch-bench-")) / "baseline.so"
    cmd = [cc, "-x", "c", "-std=gnu11", "-O3", "-march=native", "-fPIC", "-shared",
           *extra_flags, "-o", str(out), str(SOURCE), "-ldl"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the C baseline failed: {' '.join(cmd)}\n{proc.stderr}")
    return out


def load(path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """baseline.c built and loaded in this process (once)."""
    return load(build())


def kernel_handle(kernel) -> int:
    """What the launch entry takes as the kernel (its loaded function)."""
    return kernel.handle


def device_address(obj) -> int:
    """The address a pointer parameter gets: a ``ql`` buffer's ``ptr``, else
    the CUDA array interface's or the NumPy array interface's data pointer."""
    ptr = getattr(obj, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    for attr in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(obj, attr, None)
        if iface is not None:
            return iface["data"][0]
    raise TypeError(f"the C baseline cannot pass a {type(obj).__name__} as a pointer")


def c_params(kernel, args):
    """A void *params[] block holding ``args`` as the kernel's parameters, and
    the ctypes objects that keep the values alive (hold both)."""
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


class CBaseline:
    """The C loops on one device's launch entry. ``sync``: the name of the
    device's synchronise function (``"cuCtxSynchronize"``) in the backend's
    entry library, for the timings that synchronise; None where launches
    return when done (the CPU). Figures come back as ns per launch, and a
    refused call as a RuntimeError."""

    def __init__(self, device, sync: str | None = None, lib=None):
        self.lib = lib or library()
        backend = device.backend
        self.entry = backend.launch_entry
        self.sync = None
        if sync:
            self.sync = self.lib.ql_bench_symbol(str(backend.entry_library).encode(),
                                                 sync.encode())
            if not self.sync:
                raise RuntimeError(self.lib.ql_bench_error().decode(errors="replace"))

    @staticmethod
    def _ns(value, what):
        if value < 0:
            raise RuntimeError(f"{what} from C: the device returned status {-value:.0f}")
        return value

    def launch_once(self, kernel, params, grid=1, block=1) -> None:
        status = self.lib.ql_bench_launch_once(self.entry, kernel_handle(kernel), params,
                                               grid, block)
        if status:
            raise RuntimeError(f"a launch from C: the device returned status {status}")

    def launch_ns(self, kernel, params, iters, batch=0, grid=1, block=1) -> float:
        return self._ns(self.lib.ql_bench_launch_ns(self.entry, self.sync, kernel_handle(kernel),
                                                    params, grid, block, iters, batch),
                        "a launch")

    def inflight_ns(self, kernel, params, n, grid=1, block=1) -> float:
        return self._ns(self.lib.ql_bench_inflight_ns(self.entry, self.sync,
                                                      kernel_handle(kernel), params, grid,
                                                      block, n), "a launch")

    def roundtrip_ns(self, kernel, params, iters, grid=1, block=1) -> float:
        return self._ns(self.lib.ql_bench_roundtrip_ns(self.entry, self.sync,
                                                       kernel_handle(kernel), params, grid,
                                                       block, iters), "launch + sync")

    def sync_ns(self, iters) -> float:
        if not self.sync:
            raise RuntimeError("no synchronise function was named for this device")
        return self._ns(self.lib.ql_bench_sync_ns(self.sync, iters), "a synchronisation")


OMP_SOURCE = Path(__file__).with_name("omp_saxpy.c")


@functools.lru_cache(maxsize=1)
def omp_saxpy() -> str:
    """omp_saxpy.c built as a program with -fopenmp; RuntimeError saying why
    when there is no C compiler or it has no OpenMP."""
    cc = find_cc()
    if cc is None:
        raise RuntimeError("no C compiler ($CC, cc, gcc or clang) for the OpenMP baseline")
    out = Path(tempfile.mkdtemp(prefix="quicklaunch-bench-")) / "omp_saxpy"
    cmd = [cc, "-std=gnu11", "-O3", "-march=native", "-fopenmp", "-o", str(out),
           str(OMP_SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the OpenMP baseline failed: {' '.join(cmd)}\n"
                           f"{proc.stderr}")
    return str(out)


def omp_saxpy_ns(n: int, inner: int, repeats: int, threads: int) -> float:
    """Median ns per OpenMP saxpy pass over n floats with `threads` threads,
    measured in a child process (see omp_saxpy.c)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="false")
    proc = subprocess.run([omp_saxpy(), str(n), str(inner), str(repeats)], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"the OpenMP baseline failed ({proc.returncode}): {proc.stderr}")
    return float(proc.stdout.split()[0])

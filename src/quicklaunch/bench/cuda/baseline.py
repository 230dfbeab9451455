"""The C baseline of the CUDA launch benchmark: cuda_baseline.c from Python.

A C loop calling cuLaunchKernel with the same kernel handle and a prebuilt
``void *params[]``: ``build_cuda_baseline`` compiles it, ``CudaBaseline``
loads it with ctypes, ``c_params`` builds the parameter block for a
quicklaunch kernel's arguments and ``driver_facts`` says which libcuda
quicklaunch uses (so C opens the same one). The rows that time it are in
gpu_quicklaunch.py.
"""
import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CUDA_BASELINE_SOURCE = Path(__file__).with_name("baseline.c")

# quicklaunch Param.kind -> ctypes type for the C baseline's parameter block
_CTYPES = {"int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
           "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
           "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
           "float64": ctypes.c_double, "bool": ctypes.c_bool}


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


def driver_facts():
    """(libcuda path, API version, quicklaunch's cuLaunchKernel address or None)."""
    try:
        from ...backends.cuda import driver as drv
        d = drv.driver()
        return drv.library_path(), drv.API_VERSION, getattr(d, "launch_address", None)
    except Exception:
        return os.environ.get("QUICKLAUNCH_LIBCUDA") or "libcuda.so.1", 12000, None

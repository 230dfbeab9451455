"""The CUDA driver, ``libcuda.so.1``, opened at run time.

Nothing links against CUDA: the library is found when a CUDA device is first
asked for, ``cuInit`` is called once, and every entry point comes from
``cuGetProcAddress`` at the driver API version this module was written
against (so ``cuMemAlloc`` is the ``_v2`` entry, as in the CUDA headers).
``QUICKLAUNCH_LIBCUDA`` names another library to open (a path).

Each wrapper raises ``ql.CudaError`` carrying the status name, code and the
driver's explanation. The launch itself never goes through here: the C fast
path calls ``cuLaunchKernel`` through the address ``launch_entry()`` returns.
"""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_size_t, c_uint, c_uint64, c_void_p

from ...errors import CudaError, DeviceError

__all__ = ["Driver", "driver", "available", "CudaError"]

API_VERSION = 12000  # the driver API version the prototypes below follow

# name: argument types (every entry returns CUresult, an int)
_PROTOTYPES = {
    "cuDriverGetVersion": [POINTER(c_int)],
    "cuDeviceGetCount": [POINTER(c_int)],
    "cuDeviceGet": [POINTER(c_int), c_int],
    "cuDeviceGetName": [c_char_p, c_int, c_int],
    "cuDeviceGetAttribute": [POINTER(c_int), c_int, c_int],
    "cuDeviceTotalMem": [POINTER(c_size_t), c_int],
    "cuDevicePrimaryCtxRetain": [POINTER(c_void_p), c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxGetCurrent": [POINTER(c_void_p)],
    "cuCtxSynchronize": [],
    "cuModuleLoadData": [POINTER(c_void_p), c_void_p],
    "cuModuleUnload": [c_void_p],
    "cuModuleGetFunction": [POINTER(c_void_p), c_void_p, c_char_p],
    "cuModuleGetGlobal": [POINTER(c_uint64), POINTER(c_size_t), c_void_p, c_char_p],
    "cuFuncSetAttribute": [c_void_p, c_int, c_int],
    "cuFuncGetAttribute": [POINTER(c_int), c_int, c_void_p],
    "cuMemAlloc": [POINTER(c_uint64), c_size_t],
    "cuMemFree": [c_uint64],
    "cuMemcpyHtoD": [c_uint64, c_void_p, c_size_t],
    "cuMemcpyDtoH": [c_void_p, c_uint64, c_size_t],
    "cuMemcpyDtoD": [c_uint64, c_uint64, c_size_t],
    "cuMemsetD8": [c_uint64, ctypes.c_ubyte, c_size_t],
    "cuPointerGetAttribute": [c_void_p, c_int, c_uint64],
    "cuStreamSynchronize": [c_void_p],
    # streams, events and graphs (backends/cuda/streams.py)
    "cuStreamCreate": [POINTER(c_void_p), c_uint],
    "cuStreamDestroy": [c_void_p],                    # cuStreamDestroy_v2
    "cuStreamQuery": [c_void_p],
    "cuStreamWaitEvent": [c_void_p, c_void_p, c_uint],
    "cuEventCreate": [POINTER(c_void_p), c_uint],
    "cuEventDestroy": [c_void_p],                     # cuEventDestroy_v2
    "cuEventRecord": [c_void_p, c_void_p],
    "cuEventSynchronize": [c_void_p],
    "cuEventQuery": [c_void_p],
    "cuEventElapsedTime": [POINTER(ctypes.c_float), c_void_p, c_void_p],
    "cuGraphCreate": [POINTER(c_void_p), c_uint],
    "cuGraphDestroy": [c_void_p],
    # At 12000 these three are the _v2 entries, taking a pointer to
    # CUDA_KERNEL_NODE_PARAMS_v2 (streams.KernelNodeParams), not the v1 struct.
    "cuGraphAddKernelNode": [POINTER(c_void_p), c_void_p, POINTER(c_void_p), c_size_t, c_void_p],
    "cuGraphKernelNodeSetParams": [c_void_p, c_void_p],
    "cuGraphExecKernelNodeSetParams": [c_void_p, c_void_p, c_void_p],
    "cuGraphAddEventWaitNode": [POINTER(c_void_p), c_void_p, POINTER(c_void_p), c_size_t, c_void_p],
    # what cuGraphInstantiate means in the CUDA 12 headers, by its own name
    "cuGraphInstantiateWithFlags": [POINTER(c_void_p), c_void_p, c_uint64],
    "cuGraphLaunch": [c_void_p, c_void_p],
    "cuGraphExecDestroy": [c_void_p],
}

# Entries resolved at their first use (cooperative launches): a driver
# without them still opens, and only the call that needs one fails.
_LAZY = {
    "cuLaunchCooperativeKernel": [c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                                  c_uint, c_void_p, c_void_p],
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": [POINTER(c_int), c_void_p, c_int, c_size_t],
    # stream capture (streams.py: the capture rules); cuStreamBeginCapture_v2 at 12000
    "cuStreamBeginCapture": [c_void_p, c_int],
    "cuStreamEndCapture": [c_void_p, POINTER(c_void_p)],
    "cuStreamIsCapturing": [c_void_p, POINTER(c_int)],
    # texture objects (backends/cuda/textures.py); the _v2 entries at 12000
    "cuTexObjectCreate": [POINTER(c_uint64), c_void_p, c_void_p, c_void_p],
    "cuTexObjectDestroy": [c_uint64],
    "cuArray3DCreate": [POINTER(c_void_p), c_void_p],
    "cuArrayDestroy": [c_void_p],
    "cuMemcpy3D": [c_void_p],
}

# CUresult values the library reacts to
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CUDA_ERROR_NOT_FOUND = 500

CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901
CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906

_HINTS = {
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        "a stream is being captured into a CUDA graph (torch.cuda.graph, cuStreamBeginCapture) "
        "and this cannot be recorded: compile, load, allocate and launch once before the "
        "capture (torch's warm-up run does), and capture a build without debug=True (its "
        "launches synchronise)",
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        "an earlier operation during this capture could not be recorded, which invalidated it",
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
        "a launch on the legacy default stream while a blocking stream is being captured "
        "would run outside the graph: launch on the capturing stream (stream=..., or "
        "ql.torch.launcher(kernel, grid, block), which follows torch's current stream)",
    CUDA_ERROR_NO_BINARY_FOR_GPU: "the code was compiled for another GPU architecture",
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
        "the NVIDIA driver is older than the NVRTC that compiled the code; update the "
        "driver or install an nvidia-cuda-nvrtc wheel that matches it",
}


class Driver:
    """The opened driver: one ctypes function per entry point, as attributes."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            raise DeviceError(f"the CUDA driver could not be opened ({exc}); install the "
                              "NVIDIA driver, or use device='cpu'") from None
        self._get_error_name = self._direct("cuGetErrorName", [c_int, POINTER(c_char_p)])
        self._get_error_string = self._direct("cuGetErrorString", [c_int, POINTER(c_char_p)])
        init = self._direct("cuInit", [c_uint])
        self.check(init(0), "cuInit")
        self._proc = self._proc_address_entry()
        for name, argtypes in _PROTOTYPES.items():
            setattr(self, name, self._resolve(name, argtypes))
        self.launch_address = self._address("cuLaunchKernel")
        version = c_int()
        self.check(self.cuDriverGetVersion(byref(version)), "cuDriverGetVersion")
        self.version = version.value

    def __getattr__(self, name: str):
        """The _LAZY entries, resolved (and kept) at their first use."""
        argtypes = _LAZY.get(name)
        if argtypes is None or "_proc" not in self.__dict__:
            raise AttributeError(name)
        fn = self._resolve(name, argtypes)
        setattr(self, name, fn)
        return fn

    # -------------------------------------------------------------- lookup
    def _direct(self, name: str, argtypes):
        try:
            fn = getattr(self._lib, name)
        except AttributeError:
            raise DeviceError(f"{self.path} has no {name}: not a CUDA driver, or one too old "
                              "for quicklaunch (CUDA 12 or newer is needed)") from None
        fn.restype = c_int
        fn.argtypes = argtypes
        return fn

    def _proc_address_entry(self):
        status = c_int()
        try:  # CUDA 12: the _v2 form reports why a symbol is missing
            v2 = self._direct("cuGetProcAddress_v2", [c_char_p, POINTER(c_void_p), c_int,
                                                      c_uint64, POINTER(c_int)])
            return lambda n, out: v2(n, out, API_VERSION, 0, byref(status))
        except DeviceError:
            v1 = self._direct("cuGetProcAddress", [c_char_p, POINTER(c_void_p), c_int, c_uint64])
            return lambda n, out: v1(n, out, API_VERSION, 0)

    def _address(self, name: str) -> int:
        out = c_void_p()
        status = self._proc(name.encode(), byref(out))
        if status != 0 or not out.value:
            raise DeviceError(f"the CUDA driver at {self.path} has no {name} for API version "
                              f"{API_VERSION}; update the NVIDIA driver (status {status})")
        return out.value

    def _resolve(self, name: str, argtypes):
        proto = ctypes.CFUNCTYPE(c_int, *argtypes)
        return proto(self._address(name))

    # -------------------------------------------------------------- errors
    def error_name(self, status: int) -> tuple[str, str]:
        name, text = c_char_p(), c_char_p()
        if self._get_error_name(status, byref(name)) != 0 or not name.value:
            return f"CUDA_ERROR_{status}", "unknown status"
        self._get_error_string(status, byref(text))
        return name.value.decode(), (text.value or b"").decode()

    def error(self, status: int, call: str, hint: str = "") -> CudaError:
        name, text = self.error_name(status)
        hint = hint or _HINTS.get(status, "")
        message = f"{call} failed: {name} ({status}): {text}" + (f"; {hint}" if hint else "")
        return CudaError(message, name, status)

    def check(self, status: int, call: str, hint: str = "") -> None:
        if status != 0:
            raise self.error(status, call, hint)


_lock = threading.Lock()
_driver: Driver | None = None
_failure: Exception | None = None


def library_path() -> str:
    return os.environ.get("QUICKLAUNCH_LIBCUDA") or "libcuda.so.1"


def driver() -> Driver:
    """The driver, opened and initialised once per process; raises
    DeviceError (no driver) or CudaError (cuInit failed)."""
    global _driver, _failure
    if _driver is not None:
        return _driver
    with _lock:
        if _driver is None:
            if _failure is not None:
                raise _failure
            try:
                _driver = Driver(library_path())
            except (DeviceError, CudaError) as exc:
                _failure = exc
                raise
    return _driver


def available() -> bool:
    """Whether a CUDA driver opens and reports at least one device."""
    try:
        d = driver()
    except (DeviceError, CudaError):
        return False
    count = c_int()
    return d.cuDeviceGetCount(byref(count)) == 0 and count.value > 0


def _reset_for_tests() -> None:
    """Forget the opened driver (tests switch QUICKLAUNCH_LIBCUDA)."""
    global _driver, _failure
    with _lock:
        _driver = None
        _failure = None

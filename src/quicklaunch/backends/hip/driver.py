"""The HIP runtime, ``libamdhip64.so``, opened at run time.

Nothing links against ROCm: the library is found when a HIP device is
first asked for (``$QUICKLAUNCH_LIBHIP`` names one, else ``$ROCM_PATH/lib``,
``/opt/rocm/lib``, the distribution's copies, ``find_library``), ``hipInit``
is called once, and every entry point is looked up by name.

Each wrapper raises ``HipError`` (a ``ql.CudaError``, so code that handles
GPU runtime failures handles both) carrying the status name, code and the
runtime's explanation. The launch itself never goes through here: the C
fast path calls ``hipModuleLaunchKernel``, which has ``cuLaunchKernel``'s
shape, through the address in ``launch_address``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_ubyte, c_void_p

from ...errors import CudaError, DeviceError

__all__ = ["Runtime", "runtime", "available", "HipError", "candidates", "probe"]

# name: argument types (every entry returns hipError_t, an int)
_PROTOTYPES = {
    "hipDriverGetVersion": [POINTER(c_int)],
    "hipRuntimeGetVersion": [POINTER(c_int)],
    "hipGetDeviceCount": [POINTER(c_int)],
    "hipSetDevice": [c_int],
    "hipGetDevice": [POINTER(c_int)],
    "hipDeviceGetName": [c_char_p, c_int, c_int],
    "hipDeviceGetAttribute": [POINTER(c_int), c_int, c_int],
    "hipDeviceTotalMem": [POINTER(c_size_t), c_int],
    "hipDeviceSynchronize": [],
    "hipModuleLoadData": [POINTER(c_void_p), c_void_p],
    "hipModuleUnload": [c_void_p],
    "hipModuleGetFunction": [POINTER(c_void_p), c_void_p, c_char_p],
    "hipModuleGetGlobal": [POINTER(c_void_p), POINTER(c_size_t), c_void_p, c_char_p],
    "hipFuncGetAttribute": [POINTER(c_int), c_int, c_void_p],
    "hipMalloc": [POINTER(c_void_p), c_size_t],
    "hipFree": [c_void_p],
    "hipMemcpyHtoD": [c_void_p, c_void_p, c_size_t],
    "hipMemcpyDtoH": [c_void_p, c_void_p, c_size_t],
    "hipMemcpyDtoD": [c_void_p, c_void_p, c_size_t],
    "hipMemsetD8": [c_void_p, c_ubyte, c_size_t],
    "hipPointerGetAttributes": [c_void_p, c_void_p],
    "hipStreamCreateWithFlags": [POINTER(c_void_p), c_uint],
    "hipStreamDestroy": [c_void_p],
    "hipStreamSynchronize": [c_void_p],
    "hipStreamQuery": [c_void_p],
    "hipStreamWaitEvent": [c_void_p, c_void_p, c_uint],
    "hipEventCreateWithFlags": [POINTER(c_void_p), c_uint],
    "hipEventDestroy": [c_void_p],
    "hipEventRecord": [c_void_p, c_void_p],
    "hipEventSynchronize": [c_void_p],
    "hipEventQuery": [c_void_p],
    "hipEventElapsedTime": [POINTER(c_float), c_void_p, c_void_p],
}

# hipError_t values the library reacts to
hipErrorInvalidValue = 1
hipErrorInvalidDevice = 101
hipErrorNoDevice = 100
hipErrorInvalidContext = 201
hipErrorNoBinaryForGpu = 209
hipErrorInvalidHandle = 400
hipErrorNotFound = 500
hipErrorNotReady = 600
_NO_GPU = ("no AMD GPU is usable (check the amdgpu kernel driver, access to /dev/kfd and "
           "/dev/dri, and HIP_VISIBLE_DEVICES)")
_HINTS = {
    hipErrorNoBinaryForGpu: "the code object was compiled for another GPU architecture",
    hipErrorNoDevice: _NO_GPU,
}
_MULTIARCH = ("x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu")


class HipError(CudaError):
    """A HIP runtime call failed; carries the status name and code."""


def candidates() -> list[str]:
    """The libraries to try, in order."""
    explicit = os.environ.get("QUICKLAUNCH_LIBHIP")
    if explicit:
        return [explicit]
    roots = [os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"), "/opt/rocm"]
    dirs = [os.path.join(r, "lib") for r in dict.fromkeys(roots) if r]
    dirs += [f"/usr/lib/{m}" for m in _MULTIARCH] + ["/usr/lib64", "/usr/lib"]
    found = []
    for d in dirs:
        found += sorted(glob.glob(os.path.join(d, "libamdhip64.so*")), reverse=True)
    system = ctypes.util.find_library("amdhip64")
    if system:
        found.append(system)
    unique, seen = [], set()
    for path in found:   # one entry per library file
        real = os.path.realpath(path) if os.path.isabs(path) else path
        if real not in seen:
            seen.add(real)
            unique.append(path)
    return unique


class Runtime:
    """The opened HIP runtime: one ctypes function per entry point, as attributes."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._lib = lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as exc:
            raise DeviceError(f"the HIP runtime could not be opened ({exc}); install ROCm "
                              "(libamdhip64), or use device='cpu'") from None
        for fn_name in ("hipGetErrorName", "hipGetErrorString"):
            fn = self._entry(fn_name)
            fn.argtypes, fn.restype = [c_int], c_char_p
            setattr(self, fn_name, fn)
        self.hipInit = self._entry("hipInit")
        self.hipInit.argtypes, self.hipInit.restype = [c_uint], c_int
        for name, argtypes in _PROTOTYPES.items():
            fn = self._entry(name)
            fn.argtypes, fn.restype = argtypes, c_int
            setattr(self, name, fn)
        self.launch_address = ctypes.cast(self._entry("hipModuleLaunchKernel"), c_void_p).value
        props = getattr(lib, "hipGetDevicePropertiesR0600", None) or self._entry(
            "hipGetDeviceProperties")
        props.argtypes, props.restype = [c_void_p, c_int], c_int
        self.hipGetDeviceProperties = props
        version = c_int()
        self.check(self.hipRuntimeGetVersion(ctypes.byref(version)), "hipRuntimeGetVersion")
        self.version = version.value   # major * 10_000_000 + minor * 100_000 + patch

    def initialise(self) -> None:
        """hipInit(0); HipError when it fails (hipErrorNoDevice without a GPU)."""
        self.check(self.hipInit(0), "hipInit", _NO_GPU)

    def _entry(self, name: str):
        try:
            return getattr(self._lib, name)
        except AttributeError:
            raise DeviceError(f"{self.path} has no {name}: not the HIP runtime, or one too "
                              "old for quicklaunch (ROCm 5.2 or newer is needed)") from None

    def optional(self, name: str, argtypes):
        """An entry point older runtimes may lack (returning hipError_t), or None."""
        fn = getattr(self._lib, name, None)
        if fn is not None:
            fn.argtypes, fn.restype = argtypes, c_int
        return fn

    @property
    def version_text(self) -> str:
        v = self.version
        return f"{v // 10_000_000}.{v // 100_000 % 100}"

    # -------------------------------------------------------------- errors
    def error_name(self, status: int) -> tuple[str, str]:
        name = self.hipGetErrorName(status)
        text = self.hipGetErrorString(status)
        return ((name or f"hipError{status}".encode()).decode(),
                (text or b"unknown status").decode())

    def error(self, status: int, call: str, hint: str = "") -> HipError:
        name, text = self.error_name(status)
        hint = hint or _HINTS.get(status, "")
        message = f"{call} failed: {name} ({status}): {text}" + (f"; {hint}" if hint else "")
        return HipError(message, name, status)

    def check(self, status: int, call: str, hint: str = "") -> None:
        if status != 0:
            raise self.error(status, call, hint)


_lock = threading.Lock()
_runtime: Runtime | None = None
_failure: Exception | None = None


def runtime() -> Runtime:
    """The runtime, opened and initialised once per process; raises
    DeviceError (no library, or none that initialises) with the reasons."""
    global _runtime, _failure
    if _runtime is not None:
        return _runtime
    with _lock:
        if _runtime is None:
            if _failure is not None:
                raise _failure
            tried = []
            for path in candidates():
                try:
                    rt = Runtime(path)
                except (DeviceError, HipError) as exc:
                    tried.append(str(exc))
                    continue
                try:   # the library is the runtime: its answer is final
                    rt.initialise()
                except HipError as exc:
                    _failure = DeviceError(f"the HIP runtime ({path}, HIP {rt.version_text}) "
                                           f"did not initialise: {exc}; use device='cpu'")
                    raise _failure from None
                _runtime = rt
                return _runtime
            _failure = DeviceError(
                "no usable HIP runtime: " + ("; ".join(tried) if tried else
                                             "libamdhip64.so was not found (install ROCm)")
                + "; use device='cpu'")
            raise _failure
    return _runtime


def probe() -> tuple[int, str]:
    """(number of AMD GPUs, why none when 0), without raising."""
    try:
        rt = runtime()
    except DeviceError as exc:
        return 0, str(exc)
    count = c_int()
    status = rt.hipGetDeviceCount(ctypes.byref(count))
    if status != 0:
        return 0, str(rt.error(status, "hipGetDeviceCount"))
    return count.value, "" if count.value else "hipGetDeviceCount reports 0 devices"


def available() -> bool:
    """Whether a HIP runtime opens and reports at least one device."""
    return probe()[0] > 0


def _reset_for_tests() -> None:
    global _runtime, _failure
    with _lock:
        _runtime = None
        _failure = None

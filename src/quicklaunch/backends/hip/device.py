"""An AMD GPU as a quicklaunch device: its architecture and limits (queried
once), module loading, globals, and the launch error hook.

The HIP runtime keeps a current device per thread (default: device 0). The
thread that opens ``hip:N`` makes N current; a launch from another thread
whose current device is not N, if the runtime refuses it, has the error
hook make N current and the launcher retry once (as the CUDA device does
with its context). The fast path never asks which device is current.
"""
from __future__ import annotations

import ctypes
import os
import re
import threading
from ctypes import byref, c_int, c_size_t, c_void_p

from ...errors import CompileError, CudaError, DeviceError, LaunchError
from ..base import Limits, ModuleImage
from ..gpu.backend import GpuBackend
from . import driver as drv

__all__ = ["HipDevice", "open", "usable"]
DL_ROCM = 10

# hipDeviceAttribute_t (ROCm 5.x and 6.x agree on these)
_ATTR = {"major": 23, "block_x": 26, "block_y": 27, "block_z": 28, "grid_x": 29, "grid_y": 30,
         "grid_z": 31, "max_threads": 56, "minor": 61, "cus": 63, "shared": 74, "warp": 87}
_DEFAULTS = {"block_x": 1024, "block_y": 1024, "block_z": 1024, "grid_x": 2**31 - 1,
             "grid_y": 65535, "grid_z": 65535, "max_threads": 1024, "shared": 64 * 1024}
_ARCH_NAME = re.compile(rb"(gfx[0-9a-f]{3,5}(?::[a-z_]+[+-])*)\x00")
_PROPS_BYTES = 16384   # larger than any hipDeviceProp_t so far (about 1.5 KiB)


class HipDevice(GpuBackend):
    """One AMD GPU behind the backend interface (backends/base.py): the HIP
    runtime state, kept on its Device as ``backend``."""

    kind = "hip"
    _streams_class = ".streams:HipStreamOps"
    cuda_stream_protocol = False

    def __init__(self, rt: drv.Runtime, ordinal: int):
        self.runtime = rt
        self.ordinal = ordinal
        self.dlpack_device = (DL_ROCM, ordinal)
        self.launch_entry = rt.launch_address
        self.plan_entry = 0   # no planned launches: every call takes hipModuleLaunchKernel
        self.plan_direct_entry = 0
        self.entry_library = rt.path
        self.make_current()
        name = ctypes.create_string_buffer(256)
        rt.check(rt.hipDeviceGetName(name, 256, ordinal), "hipDeviceGetName")
        self.name = name.value.decode(errors="replace")
        self.attrs = {k: self._attribute(k, v) for k, v in _ATTR.items()}
        self.target = self._target()               # "gfx90a:sramecc+:xnack-"
        self.arch = self.target.split(":")[0]      # "gfx90a"
        memory = c_size_t()
        rt.check(rt.hipDeviceTotalMem(byref(memory), ordinal), "hipDeviceTotalMem")
        self.total_memory = memory.value
        self._images: dict[int, object] = {}   # module -> its code object, kept while loaded
        a = self.attrs
        self.limits = Limits(max_threads_per_block=a["max_threads"],
                             max_block_dims=(a["block_x"], a["block_y"], a["block_z"]),
                             max_grid_dims=(a["grid_x"], a["grid_y"], a["grid_z"]),
                             max_shared_per_block=a["shared"], warp_size=a["warp"])
        self.description = (f"{self.name}, {self.target}, {a['cus']} CUs, wave{a['warp']}, "
                            f"{self.total_memory / 2**30:.0f} GiB, HIP {rt.version_text}")

    def _attribute(self, key: str, attr: int) -> int:
        out = c_int()
        status = self.runtime.hipDeviceGetAttribute(byref(out), attr, self.ordinal)
        if status != 0:
            if key in _DEFAULTS:
                return _DEFAULTS[key]
            self.runtime.check(status, f"hipDeviceGetAttribute({attr})")
        return out.value

    def _target(self) -> str:
        """The GPU's target id, read from hipDeviceProp_t.gcnArchName (found by
        its contents: the struct's layout differs between ROCm versions)."""
        forced = os.environ.get("QUICKLAUNCH_HIP_ARCH")
        if forced:
            return forced
        props = ctypes.create_string_buffer(_PROPS_BYTES)
        self.runtime.check(self.runtime.hipGetDeviceProperties(props, self.ordinal),
                           "hipGetDeviceProperties")
        m = _ARCH_NAME.search(props.raw, 256)   # after name[256]
        if m is None:
            raise DeviceError(f"hip:{self.ordinal} ({self.name}): the GPU architecture could "
                              f"not be read from hipGetDeviceProperties; set "
                              f"QUICKLAUNCH_HIP_ARCH (e.g. gfx90a)")
        return m.group(1).decode()

    def make_current(self) -> None:
        self.runtime.check(self.runtime.hipSetDevice(self.ordinal), f"hipSetDevice({self.ordinal})")

    def current(self) -> bool:
        out = c_int()
        return self.runtime.hipGetDevice(byref(out)) == 0 and out.value == self.ordinal

    def call(self, status_of, what: str, hint: str = ""):
        """Runs a runtime call with this device current (made current first
        if the calling thread has another)."""
        if not self.current():
            self.make_current()
        self.runtime.check(status_of(), what, hint)

    def synchronize(self) -> None:
        self.call(lambda: self.runtime.hipDeviceSynchronize(), "hipDeviceSynchronize")

    # ---------------------------------------------------------------- code
    def compile(self, source, options, name_expressions, debug, origin, where) -> ModuleImage:
        """hiprtc for this GPU's architecture, then the runtime loads the code
        object; launches go through hipModuleLaunchKernel."""
        from . import program
        if debug:
            options = (*options, "-O0", "-g")
        prog = program.compile(source, arch=self.arch, options=options,
                               name_expressions=name_expressions)
        if prog.wave_size != self.limits.warp_size:
            raise CompileError(f"the code was compiled for wave{prog.wave_size} but "
                               f"hip:{self.ordinal} runs wave{self.limits.warp_size}; drop "
                               f"-mwavefrontsize64 / -mno-wavefrontsize64{origin}",
                               source=source, options=options)
        library = self.load_module(prog.code_object,
                                   f"{len(prog.kernels)} kernels for {prog.arch}")
        return ModuleImage(self.kernel_images(prog, library), library, program=prog, options=options)

    def global_address(self, image, name, symbol):
        try:
            return self.module_global(image.library, symbol)
        except CudaError as exc:   # HipError is a CudaError
            if exc.name == "hipErrorNotFound":
                return None
            raise

    # ------------------------------------------------------ streams, sync
    def export_sync(self, stream) -> None:
        """HIP's null stream is 0 (DLPack) or 1 (legacy default): a consumer
        there is ordered after quicklaunch's launches; others must wait."""
        if stream not in (None, 0, 1, -1):
            self.call(lambda: self.runtime.hipStreamSynchronize(None), "hipStreamSynchronize")

    # ------------------------------------------------------------ modules
    def load_module(self, image: bytes, what: str) -> int:
        module = c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        self.call(lambda: self.runtime.hipModuleLoadData(byref(module), buf),
                  f"hipModuleLoadData ({what})")
        self._images[module.value] = buf
        return LoadedModule(module.value, self)

    def function(self, module: int, lowered_name: str) -> int:
        fn = c_void_p()
        self.call(lambda: self.runtime.hipModuleGetFunction(byref(fn), module,
                                                            lowered_name.encode()),
                  f"hipModuleGetFunction({lowered_name})")
        return fn.value

    # ql.load (quicklaunch.loading): what this device loads, and its reader
    from .binary import DESCRIPTION as binary_description, KINDS as binary_kinds

    def read_binary(self, data: bytes, kind: str):
        """(symbol -> parameter rows, code object to load) of a prebuilt binary."""
        from . import binary
        return binary.read(data, self.arch or "")

    def function_attribute(self, fn: int, attr: int) -> int:
        """hipFuncGetAttribute (quicklaunch.attributes: k.attributes)."""
        out = c_int()
        self.call(lambda: self.runtime.hipFuncGetAttribute(byref(out), attr, fn),
                  f"hipFuncGetAttribute({attr})")
        return out.value

    def occupancy(self, fn: int, threads: int, shared: int) -> int:
        """hipModuleOccupancyMaxActiveBlocksPerMultiprocessor (k.max_active_blocks_per_sm)."""
        query = self.runtime.optional("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
                                      [ctypes.POINTER(c_int), c_void_p, c_int, c_size_t])
        if query is None:
            raise DeviceError(f"{self.runtime.path} has no "
                              f"hipModuleOccupancyMaxActiveBlocksPerMultiprocessor: the "
                              f"occupancy query needs a newer HIP runtime")
        out = c_int()
        self.call(lambda: query(byref(out), fn, threads, shared),
                  "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor")
        return out.value

    def module_global(self, module: int, name: str) -> tuple[int, int]:
        ptr, size = c_void_p(), c_size_t()
        self.call(lambda: self.runtime.hipModuleGetGlobal(byref(ptr), byref(size), module,
                                                          name.encode()),
                  f"hipModuleGetGlobal({name})")
        return ptr.value or 0, size.value

    def unload(self, module: int) -> None:
        self.runtime.hipModuleUnload(c_void_p(module))
        self._images.pop(module, None)

    # ------------------------------------------------------------ launches
    def error_hook(self, kernel, status: int):
        """Turns a hipModuleLaunchKernel status into the exception to raise,
        or None (the launcher retries once) after making this device current
        on a thread that had another."""
        if status in (drv.hipErrorInvalidDevice, drv.hipErrorInvalidContext,
                      drv.hipErrorInvalidHandle) and not self.current():
            self.make_current()
            return None
        err = self.runtime.error(status, f"launch of kernel '{kernel.name}'")
        return LaunchError(str(err))


_open_lock = threading.Lock()


def usable() -> bool:
    """Never probed for the default device (HIP is used when asked for)."""
    return False


def open(ordinal: int) -> HipDevice:   # noqa: A001 - the registry's name
    """ql.device("hip:N"): raises DeviceError when there is no such GPU."""
    rt = drv.runtime()      # DeviceError with the reason when there is none
    count = c_int()
    status = rt.hipGetDeviceCount(byref(count))
    if status not in (0, drv.hipErrorNoDevice):
        rt.check(status, "hipGetDeviceCount")
    n = count.value if status == 0 else 0
    if ordinal >= n:
        have = f"{n} AMD GPU{'s' if n != 1 else ''}"
        raise DeviceError(f"device 'hip:{ordinal}': this machine has {have}"
                          + ("; use device='cpu'" if not n else f" (hip:0 to hip:{n - 1})"))
    with _open_lock:
        return HipDevice(rt, ordinal)


def toolchain() -> list[tuple[str, str]]:
    """`quicklaunch info`'s compiler lines for this device."""
    import shutil

    from . import hiprtc
    try:
        lib = hiprtc.load()   # its version and where it is (and comgr's)
        line = (f"{lib.version[0]}.{lib.version[1]} ({lib.path}; comgr "
                f"{lib.comgr_version} at {lib.comgr_path})")
    except (CompileError, DeviceError) as exc:
        line = f"none: {str(exc).split('. ')[-1]}"
    return [("hiprtc", line), ("hipcc", shutil.which("hipcc") or "not found")]


class LoadedModule(int):
    """A hipModule_t handle (an int, as the launch path wants) that unloads
    the module when the last reference goes (the Module holds it, its
    Kernels hold the Module, launchers and graph nodes their Kernels)."""

    def __new__(cls, value: int, backend):
        self = super().__new__(cls, value)
        self._backend = backend
        return self

    def __del__(self):
        try:
            self._backend.unload(int(self))
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass

"""A CUDA GPU as a quicklaunch device: its primary context, its architecture
and limits (queried once), module loading, and the launch error hook.

The primary context is made current on the thread that opens the device. A
launch from another thread that has no current context fails in the driver
with CUDA_ERROR_INVALID_CONTEXT; the error hook then makes the context
current and asks the launcher to retry, once. So the fast path never asks
the driver which context is current.
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_int, c_size_t, c_uint64, c_void_p

from ...errors import CudaError, DeviceError, LaunchError
from ..base import Limits, ModuleImage
from ..gpu.backend import GpuBackend
from . import driver as drv

__all__ = ["CudaDevice", "open", "usable"]
DL_CUDA = 2

# CUdevice_attribute
_ATTR = {"max_threads": 1, "block_x": 2, "block_y": 3, "block_z": 4, "grid_x": 5, "grid_y": 6,
         "grid_z": 7, "warp": 10, "sms": 16, "major": 75, "minor": 76, "shared_optin": 97}
CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95
# CUfunction_attribute
FUNC_SHARED_SIZE_BYTES = 1
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CUDA_ERROR_INVALID_VALUE = 1


class CudaDevice(GpuBackend):
    """One GPU behind the backend interface (backends/base.py): the driver
    state, kept on its Device as ``backend``."""

    kind = "cuda"
    _streams_class = ".streams:CudaStreamOps"
    cuda_stream_protocol = True

    def __init__(self, d: drv.Driver, ordinal: int):
        self.driver = d
        self.ordinal = ordinal
        self.dlpack_device = (DL_CUDA, ordinal)
        self.launch_entry = d.launch_address
        self.plan_entry = 0   # no planned launches: every call takes cuLaunchKernel
        self.plan_direct_entry = 0
        self.entry_library = drv.library_path()
        handle = c_int()
        d.check(d.cuDeviceGet(byref(handle), ordinal), f"cuDeviceGet({ordinal})")
        self.handle = handle.value
        name = ctypes.create_string_buffer(256)
        d.check(d.cuDeviceGetName(name, 256, self.handle), "cuDeviceGetName")
        self.name = name.value.decode(errors="replace")
        self.attrs = {k: self._attribute(v) for k, v in _ATTR.items()}
        self.capability = (self.attrs["major"], self.attrs["minor"])
        self.arch = f"sm_{self.attrs['major']}{self.attrs['minor']}"
        memory = c_size_t()
        d.check(d.cuDeviceTotalMem(byref(memory), self.handle), "cuDeviceTotalMem")
        self.total_memory = memory.value
        ctx = c_void_p()
        d.check(d.cuDevicePrimaryCtxRetain(byref(ctx), self.handle),
                "cuDevicePrimaryCtxRetain")
        self.context = ctx.value
        self.make_current()
        a = self.attrs
        self.limits = Limits(max_threads_per_block=a["max_threads"],
                             max_block_dims=(a["block_x"], a["block_y"], a["block_z"]),
                             max_grid_dims=(a["grid_x"], a["grid_y"], a["grid_z"]),
                             max_shared_per_block=a["shared_optin"], warp_size=a["warp"])
        mem = self.total_memory / 2**30
        self.description = (f"{self.name}, {self.arch}, {a['sms']} SMs, {mem:.0f} GiB, "
                            f"driver {d.version // 1000}.{d.version % 1000 // 10}")

    def _attribute(self, attr: int) -> int:
        out = c_int()
        self.driver.check(self.driver.cuDeviceGetAttribute(byref(out), attr, self.handle),
                          f"cuDeviceGetAttribute({attr})")
        return out.value

    def make_current(self) -> None:
        """Makes this device's primary context current on the calling thread."""
        self.driver.check(self.driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def current(self) -> bool:
        ctx = c_void_p()
        return (self.driver.cuCtxGetCurrent(byref(ctx)) == 0 and ctx.value == self.context)

    def call(self, status_of, what: str, hint: str = ""):
        """Runs a driver call with this context current (made current first
        if the calling thread has none or another)."""
        if not self.current():
            self.make_current()
        self.driver.check(status_of(), what, hint)

    def synchronize(self) -> None:
        self.call(lambda: self.driver.cuCtxSynchronize(), "cuCtxSynchronize")

    # ---------------------------------------------------------------- code
    def compile(self, source, options, name_expressions, debug, origin, where) -> ModuleImage:
        """NVRTC for this GPU's architecture, then the driver loads the cubin
        (PTX, for the driver to finish, when NVRTC predates the GPU)."""
        from . import nvrtc, program
        if debug:
            options = (*options, "-G")
        prog = program.compile(source, arch=nvrtc.arch_for(self.capability), options=options,
                               name_expressions=name_expressions)
        image = prog.cubin if prog.cubin is not None else prog.ptx.encode()
        library = self.load_module(image, f"{len(prog.kernels)} kernels for {prog.arch}")
        return ModuleImage(self.kernel_images(prog, library), library, program=prog, options=options)

    def global_address(self, image, name, symbol):
        try:
            return self.module_global(image.library, symbol)
        except CudaError as exc:
            if exc.name == "CUDA_ERROR_NOT_FOUND":
                return None
            raise

    # ------------------------------------------------------ streams, sync
    def export_sync(self, stream) -> None:
        """A consumer on the legacy default stream (None, 1; -1: no sync
        asked) is ordered after quicklaunch's launches already; any other
        stream must see them finished."""
        if stream not in (None, 1, -1):
            self.call(lambda: self.driver.cuStreamSynchronize(None), "cuStreamSynchronize")

    # ------------------------------------------------------------ modules
    def load_module(self, image: bytes, what: str) -> int:
        module = c_void_p()
        buf = ctypes.create_string_buffer(image, len(image) + 1)  # PTX needs its NUL
        self.call(lambda: self.driver.cuModuleLoadData(byref(module), buf),
                  f"cuModuleLoadData ({what})")
        return LoadedModule(module.value, self)

    def function(self, module: int, lowered_name: str) -> int:
        fn = c_void_p()
        self.call(lambda: self.driver.cuModuleGetFunction(byref(fn), module,
                                                          lowered_name.encode()),
                  f"cuModuleGetFunction({lowered_name})")
        # Dynamic shared memory above 48 KiB needs a per-function opt-in:
        # grant the device's whole allowance once, at load, not per launch.
        static = c_int()
        self.call(lambda: self.driver.cuFuncGetAttribute(byref(static), FUNC_SHARED_SIZE_BYTES,
                                                         fn.value),
                  "cuFuncGetAttribute(SHARED_SIZE_BYTES)")
        allowance = self.attrs["shared_optin"] - static.value
        if allowance > 48 * 1024:
            self.call(lambda: self.driver.cuFuncSetAttribute(
                fn.value, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, allowance),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        return fn.value

    # ql.load (quicklaunch.loading): what this device loads, and its reader
    from .binary import DESCRIPTION as binary_description, KINDS as binary_kinds

    def read_binary(self, data: bytes, kind: str):
        """(symbol -> parameter rows, image to load) of a prebuilt binary."""
        from . import binary
        return binary.read(data, kind)

    def function_attribute(self, fn: int, attr: int) -> int:
        """cuFuncGetAttribute (quicklaunch.attributes: k.attributes)."""
        out = c_int()
        self.call(lambda: self.driver.cuFuncGetAttribute(byref(out), attr, fn),
                  f"cuFuncGetAttribute({attr})")
        return out.value

    def occupancy(self, fn: int, threads: int, shared: int) -> int:
        """cuOccupancyMaxActiveBlocksPerMultiprocessor (k.max_active_blocks_per_sm)."""
        out = c_int()
        self.call(lambda: self.driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            byref(out), fn, threads, shared), "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return out.value

    def module_global(self, module: int, name: str) -> tuple[int, int]:
        ptr, size = c_uint64(), c_size_t()
        self.call(lambda: self.driver.cuModuleGetGlobal(byref(ptr), byref(size), module,
                                                        name.encode()),
                  f"cuModuleGetGlobal({name})")
        return ptr.value, size.value

    def unload(self, module: int) -> None:
        """cuModuleUnload in this device's context (made current for the
        call and the thread's own put back: a finaliser may run anywhere)."""
        d, prev = self.driver, c_void_p()
        if d.cuCtxGetCurrent(byref(prev)) != 0:
            return   # the driver is gone (interpreter exit): nothing to free
        switch = prev.value != self.context
        if switch and d.cuCtxSetCurrent(self.context) != 0:
            return
        try:
            d.cuModuleUnload(c_void_p(int(module)))
        finally:
            if switch:
                d.cuCtxSetCurrent(prev)

    # ------------------------------------------------------------ launches
    def launch_cooperative(self, kernel, grid, block, shared, stream, params) -> None:
        """cuLaunchCooperativeKernel, after checking that the grid can be
        co-resident: at most cuOccupancyMaxActiveBlocksPerMultiprocessor
        blocks on each of the device's multiprocessors. Queued on `stream`
        like any launch."""
        d = self.driver
        if not self.current():
            self.make_current()
        if not self._attribute(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH):
            raise LaunchError(f"kernel '{kernel.name}': {self.name} does not support "
                              f"cooperative launches (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH "
                              f"is 0)")
        threads = block[0] * block[1] * block[2]
        nblocks = grid[0] * grid[1] * grid[2]
        per_sm = c_int()
        d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(byref(per_sm), kernel.handle,
                                                              threads, shared),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        sms = self.attrs["sms"]
        limit = per_sm.value * sms
        if nblocks > limit:
            raise LaunchError(
                f"kernel '{kernel.name}': a cooperative launch of {nblocks} blocks of {threads} "
                f"threads ({shared} bytes of dynamic shared memory) cannot be co-resident on "
                f"{self.name}: at most {per_sm.value} such blocks fit on a multiprocessor "
                f"(cuOccupancyMaxActiveBlocksPerMultiprocessor) x {sms} multiprocessors = "
                f"{limit} blocks; use a grid of at most {limit} blocks (a grid-stride loop "
                f"covers any size)")
        status = d.cuLaunchCooperativeKernel(kernel.handle, *grid, *block, shared,
                                             stream or None, params.address)
        if status:
            raise LaunchError(str(d.error(status, f"cooperative launch of kernel "
                                                  f"'{kernel.name}'")))

    def error_hook(self, kernel, status: int):
        """Turns a cuLaunchKernel status into the exception to raise, or None
        (the launcher then retries once) after making the context current on
        a thread that had none."""
        if status == drv.CUDA_ERROR_INVALID_CONTEXT and not self.current():
            self.make_current()
            return None
        err = self.driver.error(status, f"launch of kernel '{kernel.name}'")
        return LaunchError(str(err) + self._shared_hint(kernel, status))

    def _shared_hint(self, kernel, status: int) -> str:
        """For an invalid-value launch of a kernel with static shared memory:
        the dynamic shared memory it can have (the launcher checks the
        device's per-block limit, which the static bytes come out of)."""
        if status != CUDA_ERROR_INVALID_VALUE:
            return ""
        try:
            attrs = kernel.attributes
            static, allowed = attrs["shared_size_bytes"], attrs["max_dynamic_shared_size_bytes"]
        except Exception:   # noqa: BLE001 - a hint must never hide the error
            return ""
        if not static:
            return ""
        return (f"; if the launch asked for more than {allowed} bytes of dynamic shared "
                f"memory, that is why: the kernel's {static} bytes of static shared memory "
                f"and the dynamic bytes must fit the {self.attrs['shared_optin']} bytes a "
                f"block may have on {self.name} (k.attributes)")


_open_lock = threading.Lock()


def usable() -> bool:
    """A CUDA driver opens and reports a device."""
    return drv.available()


def count() -> int:
    """How many CUDA devices this process sees (0 without a driver): the
    default device's choice per MPI rank (mpi/local.py)."""
    try:
        d = drv.driver()
    except drv.CudaError:
        return 0
    n = c_int()
    return n.value if d.cuDeviceGetCount(byref(n)) == 0 else 0


def open(ordinal: int) -> CudaDevice:   # noqa: A001 - the registry's name
    """ql.device("cuda:N"): raises DeviceError when there is no such GPU."""
    try:
        d = drv.driver()
    except drv.CudaError as exc:
        raise DeviceError(f"the CUDA driver did not initialise: {exc}; use device='cpu'") \
            from None
    count = c_int()
    d.check(d.cuDeviceGetCount(byref(count)), "cuDeviceGetCount")
    if ordinal >= count.value:
        have = f"{count.value} CUDA device{'s' if count.value != 1 else ''}"
        raise DeviceError(f"device 'cuda:{ordinal}': this machine has {have}"
                          + ("; use device='cpu'" if not count.value else
                             f" (cuda:0 to cuda:{count.value - 1})"))
    with _open_lock:
        return CudaDevice(d, ordinal)


def toolchain() -> list[tuple[str, str]]:
    """`quicklaunch info`'s compiler lines for this device."""
    import shutil

    from ...errors import CompileError
    from . import nvrtc
    try:
        lib = nvrtc.load()
        line = f"{lib.version[0]}.{lib.version[1]} ({lib.path}): {lib.archs_text()}"
    except CompileError as exc:
        line = f"none: {str(exc).split('. ')[-1]}"
    return [("NVRTC", line), ("nvcc", shutil.which("nvcc") or "not found")]


class LoadedModule(int):
    """A CUmodule handle (an int, as the launch path wants) that unloads the
    module when the last reference goes: the Module holds it, its Kernels
    hold the Module, launchers and graph nodes hold their Kernels."""

    def __new__(cls, value: int, backend):
        self = super().__new__(cls, value)
        self._backend = backend
        return self

    def __del__(self):
        try:
            self._backend.unload(int(self))
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass

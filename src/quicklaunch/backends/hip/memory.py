"""Device memory on an AMD GPU: allocation, copies both ways, fills.

hipMemcpyHtoD / DtoH / DtoD and hipMemsetD8 are synchronous and ordered
after the launches on the null stream (where launches go unless given
another), so ``buf.numpy()`` after a launch sees the kernel's writes.
"""
from __future__ import annotations

import ctypes
from ctypes import byref, c_void_p

import numpy as np

from ..gpu.memory import DeviceAllocation


class Allocation(DeviceAllocation):
    """``nbytes`` of device memory from hipMalloc, freed when the last
    reference to it goes (buffers, views and exported capsules hold one)."""

    __slots__ = ()

    def _allocate(self, backend, nbytes: int) -> int:
        ptr = c_void_p()
        rt = backend.runtime
        backend.call(lambda: rt.hipMalloc(byref(ptr), max(nbytes, 1)),
                     f"hipMalloc({nbytes} bytes on hip:{backend.ordinal})",
                     hint="free buffers you no longer need, or allocate less")
        return ptr.value or 0

    def _free(self) -> None:
        self.backend.call(lambda: self.backend.runtime.hipFree(c_void_p(self.ptr)), "hipFree")


def to_device(backend, dst: int, src: np.ndarray) -> None:
    src = np.ascontiguousarray(src)
    if src.nbytes:
        backend.call(lambda: backend.runtime.hipMemcpyHtoD(c_void_p(dst),
                                                           c_void_p(src.ctypes.data),
                                                           src.nbytes), "hipMemcpyHtoD")


def to_host(backend, dst: np.ndarray, src: int) -> None:
    if not dst.flags.c_contiguous or not dst.flags.writeable:
        raise ValueError("the destination must be a writable, C-contiguous array")
    if dst.nbytes:
        backend.call(lambda: backend.runtime.hipMemcpyDtoH(c_void_p(dst.ctypes.data),
                                                           c_void_p(src), dst.nbytes),
                     "hipMemcpyDtoH")


def device_to_device(backend, dst: int, src: int, nbytes: int) -> None:
    if nbytes:
        backend.call(lambda: backend.runtime.hipMemcpyDtoD(c_void_p(dst), c_void_p(src),
                                                           nbytes), "hipMemcpyDtoD")


def fill_bytes(backend, dst: int, value: int, nbytes: int) -> None:
    if nbytes:
        backend.call(lambda: backend.runtime.hipMemsetD8(c_void_p(dst), value, nbytes),
                     "hipMemsetD8")


class _PointerAttributes(ctypes.Structure):
    """hipPointerAttribute_t; only ``device`` is read (its place is the same
    in ROCm 5 and 6; the memory-type enum is not)."""
    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", c_void_p), ("hostPointer", c_void_p),
                ("isManaged", ctypes.c_int), ("allocationFlags", ctypes.c_uint),
                ("reserved", ctypes.c_ubyte * 64)]


def owner_ordinal(backend, ptr: int) -> int | None:
    """The ordinal of the GPU that owns device pointer ``ptr``, or None when
    the runtime does not know the pointer (host memory, freed, foreign)."""
    attrs = _PointerAttributes()
    status = backend.runtime.hipPointerGetAttributes(byref(attrs), c_void_p(ptr))
    if status != 0 or not attrs.devicePointer:
        return None
    return attrs.device

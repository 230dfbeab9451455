"""Device memory on a CUDA GPU: allocation, copies both ways, fills.

Copies use the driver's synchronous cuMemcpy calls, which are ordered after
every launch on the legacy default stream (the stream launches use unless
given another), so ``buf.numpy()`` after a launch sees the kernel's writes.
"""
from __future__ import annotations

from ctypes import byref, c_uint64, c_void_p

import numpy as np

from ..gpu.memory import DeviceAllocation


class Allocation(DeviceAllocation):
    """``nbytes`` of device memory from cuMemAlloc, freed when the last
    reference to it goes (buffers, views and exported capsules hold one)."""

    __slots__ = ()

    def _allocate(self, backend, nbytes: int) -> int:
        ptr = c_uint64()
        d = backend.driver
        backend.call(lambda: d.cuMemAlloc(byref(ptr), max(nbytes, 1)),
                     f"cuMemAlloc({nbytes} bytes on cuda:{backend.ordinal})",
                     hint="free buffers you no longer need, or allocate less")
        return ptr.value

    def _free(self) -> None:
        self.backend.call(lambda: self.backend.driver.cuMemFree(self.ptr), "cuMemFree")


def to_device(backend, dst: int, src: np.ndarray) -> None:
    src = np.ascontiguousarray(src)
    if src.nbytes:
        backend.call(lambda: backend.driver.cuMemcpyHtoD(dst, c_void_p(src.ctypes.data),
                                                         src.nbytes), "cuMemcpyHtoD")


def to_host(backend, dst: np.ndarray, src: int) -> None:
    if not dst.flags.c_contiguous or not dst.flags.writeable:
        raise ValueError("the destination must be a writable, C-contiguous array")
    if dst.nbytes:
        backend.call(lambda: backend.driver.cuMemcpyDtoH(c_void_p(dst.ctypes.data), src,
                                                         dst.nbytes), "cuMemcpyDtoH")


def device_to_device(backend, dst: int, src: int, nbytes: int) -> None:
    if nbytes:
        backend.call(lambda: backend.driver.cuMemcpyDtoD(dst, src, nbytes), "cuMemcpyDtoD")


def fill_bytes(backend, dst: int, value: int, nbytes: int) -> None:
    if nbytes:
        backend.call(lambda: backend.driver.cuMemsetD8(dst, value, nbytes), "cuMemsetD8")


# CUpointer_attribute
POINTER_ATTRIBUTE_CONTEXT = 1
POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


def owner_ordinal(backend, ptr: int) -> int | None:
    """The ordinal of the GPU that owns device pointer ``ptr``, or None when
    the driver does not know the pointer (host memory, freed, foreign)."""
    from ctypes import c_int
    out = c_int()
    if not backend.current():
        backend.make_current()
    status = backend.driver.cuPointerGetAttribute(byref(out), POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                  ptr)
    return out.value if status == 0 else None

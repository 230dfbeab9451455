"""Device memory: ``ql.empty``, ``ql.zeros``, ``ql.asarray`` and ``Buffer``.

A Buffer is the launcher's C Buffer type (address, size, device id, owner)
plus shape and dtype. On the CPU device its memory is a 64-byte aligned NumPy
allocation, so ``Buffer.numpy()`` is a zero-copy view. On a GPU it is device
memory, allocated and copied by the device's backend (backends/base.py):
``numpy()`` copies back, and the buffer is exported as
``__cuda_array_interface__`` (v3) and DLPack.
"""
from __future__ import annotations

import numpy as np

from . import _launch
from .devices import Device, device as get_device

__all__ = ["Buffer", "empty", "zeros", "asarray"]

ALIGNMENT = 64


class Buffer(_launch.Buffer):
    """An n-dimensional, C-contiguous block of device memory."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: Device,
                 owner=None, readonly: bool = False):
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        super().__init__(ptr, nbytes, device.id, readonly, owner, dtype=dtype)
        self.shape = shape
        self.dtype = dtype
        self.device = device

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d buffer")
        return self.shape[0]

    def numpy(self) -> np.ndarray:
        """The contents as a NumPy array: a zero-copy view on the CPU, a copy
        from a GPU."""
        if self.device.host_memory:
            return self.owner
        out = np.empty(self.shape, self.dtype)
        self.device.backend.to_host(out, self.ptr)
        return out

    def copy_from(self, src) -> "Buffer":
        """Overwrites the contents with ``src`` (an array-like of the same
        shape, converted to this buffer's dtype). Returns the buffer."""
        if self.readonly:
            raise ValueError("the buffer is read-only")
        data = np.asarray(src.numpy() if isinstance(src, Buffer) else src, dtype=self.dtype)
        if data.shape != self.shape:
            raise ValueError(f"copy_from: shape {data.shape} does not match the buffer's "
                             f"{self.shape}")
        if self.device.host_memory:
            self.owner[...] = data
        else:
            self.device.backend.to_device(self.ptr, data)
        return self

    @property
    def __cuda_array_interface__(self) -> dict:
        if not self.device.backend.cuda_array_interface:
            raise AttributeError("__cuda_array_interface__ is for GPU device memory only")
        # stream 1: the legacy default stream, which quicklaunch's launches use
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "data": (self.ptr, bool(self.readonly)), "strides": None, "version": 3,
                "stream": 1}

    def __dlpack_device__(self) -> tuple[int, int]:
        from .dlpack import device_of
        return device_of(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .dlpack import export
        return export(self, stream=stream, dl_device=dl_device, copy=copy)

    @property
    def __array_interface__(self) -> dict:
        if not self.device.host_memory:
            raise AttributeError("__array_interface__ is for host memory only")
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "data": (self.ptr, bool(self.readonly)), "strides": None, "version": 3}

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return (f"<quicklaunch.Buffer shape={self.shape} dtype={self.dtype} "
                f"device={self.device.name}>")


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"buffer shape {shape} has a negative dimension")
    return shape


def _host_alloc(shape, dtype: np.dtype) -> np.ndarray:
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    # Slice one byte more and drop it, so even an empty buffer keeps an
    # aligned address (NumPy gives empty slices no address of their own).
    return raw[start:start + nbytes + 1][:nbytes].view(dtype).reshape(shape)


def _wrap_host(array: np.ndarray, dev: Device) -> Buffer:
    return Buffer(array.ctypes.data, array.shape, array.dtype, dev, owner=array,
                  readonly=not array.flags.writeable)


def _gpu_alloc(shape, dtype: np.dtype, dev: Device) -> Buffer:
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    owner = dev.backend.allocate(nbytes)
    return Buffer(owner.ptr, shape, dtype, dev, owner=owner)


def empty(shape, dtype=np.float32, device=None) -> Buffer:
    """An uninitialised buffer of ``shape`` and ``dtype`` on ``device``."""
    dev = get_device(device)
    dtype = np.dtype(dtype)
    if dev.host_memory:
        return _wrap_host(_host_alloc(_shape(shape), dtype), dev)
    return _gpu_alloc(_shape(shape), dtype, dev)


def zeros(shape, dtype=np.float32, device=None) -> Buffer:
    """A zero-filled buffer of ``shape`` and ``dtype`` on ``device``."""
    buf = empty(shape, dtype, device)
    if buf.device.host_memory:
        buf.numpy()[...] = 0
    else:
        buf.device.backend.fill_bytes(buf.ptr, 0, buf.nbytes)
    return buf


def asarray(obj, device=None, dtype=None) -> Buffer:
    """``obj`` as a buffer on ``device``: zero-copy on the CPU when it is
    already an aligned, C-contiguous NumPy array of the dtype; a copy otherwise."""
    dev = get_device(device)
    if isinstance(obj, Buffer) and obj.device is dev and (dtype is None or
                                                          np.dtype(dtype) == obj.dtype):
        return obj
    src = np.asarray(obj.numpy() if isinstance(obj, Buffer) else obj, dtype=dtype)
    if dev.host_memory:
        if src.flags.c_contiguous and src.ctypes.data % src.dtype.alignment == 0:
            return _wrap_host(src, dev)
        out = _host_alloc(src.shape, src.dtype)
        out[...] = src
        return _wrap_host(out, dev)
    if src.dtype.hasobject:
        raise TypeError("an array of Python objects cannot be copied to a GPU")
    buf = _gpu_alloc(src.shape, src.dtype, dev)
    dev.backend.to_device(buf.ptr, src)
    return buf

"""Texture objects on the CPU device: a ``ql_texture`` descriptor
(include/ql_texture.h, laid out here with ctypes) over the texels in host
memory; its address is the handle kernels receive. The texels are the
source's own memory when it is a C-contiguous array or CPU buffer (the
texture keeps it alive and sees later writes), else a contiguous copy."""
from __future__ import annotations

import ctypes
from ctypes import c_float, c_uint, c_ulonglong, c_void_p

import numpy as np

MAGIC = 0x3130305845544C51  # "QLTEX001", ql_texture.h's QL_TEXTURE_MAGIC


class Descriptor(ctypes.Structure):
    """struct ql_texture (ql_texture.h): keep the two in step."""
    _fields_ = [("magic", c_ulonglong), ("data", c_void_p), ("row_pitch", c_ulonglong),
                ("slice_pitch", c_ulonglong), ("extent", c_uint * 3), ("dims", c_uint),
                ("linear", c_uint), ("channels", c_uint), ("channel_bytes", c_uint),
                ("format", c_uint), ("address", c_uint * 3), ("filter", c_uint),
                ("read_normalized", c_uint), ("normalized_coords", c_uint),
                ("border", c_float * 4)]


def _host_array(data) -> np.ndarray:
    from ...memory import Buffer
    if isinstance(data, Buffer):   # its memory, whatever owns it (the texture keeps data)
        raw = (ctypes.c_char * data.nbytes).from_address(data.ptr)
        arr = np.frombuffer(raw, data.dtype).reshape(data.shape)
    else:
        arr = np.asarray(data)
    if not arr.flags.c_contiguous or arr.ctypes.data % max(arr.dtype.alignment, 1):
        arr = np.ascontiguousarray(arr).copy()
    return arr


def create(dev, spec):
    """(handle, what the texture keeps alive) for ``spec`` (textures.TextureSpec)."""
    arr = _host_array(spec.data)
    d = Descriptor()
    d.magic = MAGIC
    d.data = arr.ctypes.data
    d.row_pitch = spec.row_bytes
    d.slice_pitch = spec.row_bytes * spec.extent[1]
    d.extent[:] = spec.extent
    d.dims = spec.dims
    d.linear = spec.memory == "linear"
    d.channels = spec.channels
    d.channel_bytes = spec.dtype.itemsize
    d.format = spec.format
    d.address[:] = spec.address
    d.filter = spec.filter
    d.read_normalized = spec.read_normalized
    d.normalized_coords = spec.normalized_coords
    d.border[:] = spec.border
    return ctypes.addressof(d), (d, arr)


def destroy(dev, handle: int, keep):
    """Invalidates the descriptor and returns it, so the texture keeps it
    (not the texels) while it lives: a stale handle (an int copy, a graph
    recorded before close()) then fails the fetch instead of reading freed
    memory."""
    d = keep[0]
    if ctypes.addressof(d) == handle:
        d.magic = 0
        d.data = None
    return d

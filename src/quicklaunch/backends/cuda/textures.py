"""Texture objects on a CUDA GPU: cuTexObjectCreate over the texels.

* ``linear`` (1-D, tex1Dfetch): a linear resource over the ql buffer itself
  when its address has the device's texture alignment, else over a copy;
* ``pitch2d`` (2-D): a pitch2D resource over the buffer when its rows are a
  multiple of the texture pitch alignment, else over a pitched copy;
* ``array`` (tex1D, tex2D, tex3D): a CUDA array (cuArray3DCreate) the
  texels are copied into (cuMemcpy3D).
NumPy data is always copied to the device. The texture keeps the memory it
reads alive; ``destroy`` destroys the object, then its array."""
from __future__ import annotations

from ctypes import (Structure, Union, byref, c_float, c_int, c_size_t, c_uint, c_uint64,
                    c_void_p)

import numpy as np

# CUarray_format by (NumPy kind, bytes)
FORMATS = {("u", 1): 0x01, ("u", 2): 0x02, ("u", 4): 0x03, ("i", 1): 0x08, ("i", 2): 0x09,
           ("i", 4): 0x0A, ("f", 2): 0x10, ("f", 4): 0x20}
RES_ARRAY, RES_LINEAR, RES_PITCH2D = 0, 2, 3
MEM_HOST, MEM_DEVICE, MEM_ARRAY = 1, 2, 3
TRSF_READ_AS_INTEGER, TRSF_NORMALIZED_COORDINATES = 0x01, 0x02
ATTR_TEXTURE_ALIGNMENT, ATTR_TEXTURE_PITCH_ALIGNMENT = 14, 51


class _Linear(Structure):
    _fields_ = [("devPtr", c_uint64), ("format", c_int), ("numChannels", c_uint),
                ("sizeInBytes", c_size_t)]


class _Pitch2D(Structure):
    _fields_ = [("devPtr", c_uint64), ("format", c_int), ("numChannels", c_uint),
                ("width", c_size_t), ("height", c_size_t), ("pitchInBytes", c_size_t)]


class _Res(Union):
    _fields_ = [("hArray", c_void_p), ("linear", _Linear), ("pitch2D", _Pitch2D),
                ("reserved", c_int * 32)]


class ResourceDesc(Structure):
    """CUDA_RESOURCE_DESC"""
    _fields_ = [("resType", c_int), ("res", _Res), ("flags", c_uint)]


class TextureDesc(Structure):
    """CUDA_TEXTURE_DESC"""
    _fields_ = [("addressMode", c_int * 3), ("filterMode", c_int), ("flags", c_uint),
                ("maxAnisotropy", c_uint), ("mipmapFilterMode", c_int),
                ("mipmapLevelBias", c_float), ("minMipmapLevelClamp", c_float),
                ("maxMipmapLevelClamp", c_float), ("borderColor", c_float * 4),
                ("reserved", c_int * 12)]


class Array3DDesc(Structure):
    """CUDA_ARRAY3D_DESCRIPTOR"""
    _fields_ = [("Width", c_size_t), ("Height", c_size_t), ("Depth", c_size_t),
                ("Format", c_int), ("NumChannels", c_uint), ("Flags", c_uint)]


def _side(prefix: str):
    return [(prefix + "XInBytes", c_size_t), (prefix + "Y", c_size_t), (prefix + "Z", c_size_t),
            (prefix + "LOD", c_size_t), (prefix + "MemoryType", c_int),
            (prefix + "Host", c_void_p), (prefix + "Device", c_uint64),
            (prefix + "Array", c_void_p), ("reserved" + ("0" if prefix == "src" else "1"), c_void_p),
            (prefix + "Pitch", c_size_t), (prefix + "Height", c_size_t)]


class Memcpy3D(Structure):
    """CUDA_MEMCPY3D"""
    _fields_ = _side("src") + _side("dst") + [("WidthInBytes", c_size_t), ("Height", c_size_t),
                                              ("Depth", c_size_t)]



class _Array:
    """A CUDA array, destroyed with the texture (or when creating it fails)."""

    def __init__(self, backend, spec):
        d = Array3DDesc(spec.extent[0], spec.extent[1] if spec.dims > 1 else 0,
                        spec.extent[2] if spec.dims > 2 else 0,
                        FORMATS[spec.dtype.kind, spec.dtype.itemsize], spec.channels, 0)
        h = c_void_p()
        backend.call(lambda: backend.driver.cuArray3DCreate(byref(h), byref(d)),
                     f"cuArray3DCreate({'x'.join(map(str, spec.extent[:spec.dims]))} texels)")
        self.backend, self.handle = backend, h.value

    def destroy(self) -> None:
        if self.handle:
            h, self.handle = self.handle, None
            self.backend.call(lambda: self.backend.driver.cuArrayDestroy(h), "cuArrayDestroy")


def _copy(backend, spec, src, dst_kind: int, dst, dst_pitch: int) -> None:
    """The texels of src (a NumPy array or a ql buffer, contiguous) into a
    pitched device allocation or an array, with one cuMemcpy3D."""
    from ...memory import Buffer
    c = Memcpy3D()
    if isinstance(src, Buffer):
        c.srcMemoryType, c.srcDevice = MEM_DEVICE, src.ptr
    else:
        c.srcMemoryType, c.srcHost = MEM_HOST, src.ctypes.data
    c.srcPitch, c.srcHeight = spec.row_bytes, spec.extent[1]
    c.dstMemoryType = dst_kind
    if dst_kind == MEM_ARRAY:
        c.dstArray = dst
    else:
        c.dstDevice, c.dstPitch, c.dstHeight = dst, dst_pitch, spec.extent[1]
    c.WidthInBytes, c.Height, c.Depth = spec.row_bytes, spec.extent[1], spec.extent[2]
    backend.call(lambda: backend.driver.cuMemcpy3D(byref(c)), "cuMemcpy3D")


def _attribute(backend, attr: int) -> int:
    return max(int(backend._attribute(attr)), 1)


def create(dev, spec):
    """(CUtexObject, what the texture keeps alive) for ``spec``."""
    from ... import memory
    backend = dev.backend
    src = spec.data
    if not isinstance(src, memory.Buffer):
        src = np.ascontiguousarray(src)
    align = _attribute(backend, ATTR_TEXTURE_ALIGNMENT)
    fmt = FORMATS[spec.dtype.kind, spec.dtype.itemsize]
    res = ResourceDesc()
    keep: list = [spec.data]
    if spec.memory == "array":
        arr = _Array(backend, spec)
        keep.append(arr)
        try:
            _copy(backend, spec, src, MEM_ARRAY, arr.handle, 0)
        except BaseException:
            arr.destroy()
            raise
        res.resType, res.res.hArray = RES_ARRAY, arr.handle
    else:
        pitch = spec.row_bytes
        if spec.memory == "pitch2d":
            step = _attribute(backend, ATTR_TEXTURE_PITCH_ALIGNMENT)
            pitch = -(-spec.row_bytes // step) * step
        direct = (isinstance(src, memory.Buffer) and src.ptr % align == 0 and
                  pitch == spec.row_bytes)
        if direct:
            ptr = src.ptr
        else:
            # allocations are 256-byte aligned, textures may need more
            dst = memory.empty(pitch * spec.extent[1] + align, np.uint8, device=dev)
            keep.append(dst)
            ptr = -(-dst.ptr // align) * align
            _copy(backend, spec, src, MEM_DEVICE, ptr, pitch)
        if spec.memory == "linear":
            res.resType = RES_LINEAR
            res.res.linear = _Linear(ptr, fmt, spec.channels, spec.row_bytes)
        else:
            res.resType = RES_PITCH2D
            res.res.pitch2D = _Pitch2D(ptr, fmt, spec.channels, spec.extent[0], spec.extent[1],
                                       pitch)
    tex = TextureDesc()
    tex.addressMode[:] = spec.address
    tex.filterMode = spec.filter
    tex.flags = ((TRSF_READ_AS_INTEGER if spec.format != 2 and not spec.read_normalized else 0) |
                 (TRSF_NORMALIZED_COORDINATES if spec.normalized_coords else 0))
    tex.borderColor[:] = spec.border
    handle = c_uint64()
    try:
        backend.call(lambda: backend.driver.cuTexObjectCreate(byref(handle), byref(res),
                                                              byref(tex), None),
                     f"cuTexObjectCreate({spec.memory}, {spec.dtype} x {spec.channels})")
    except BaseException:
        destroy(dev, 0, keep)
        raise
    return handle.value, keep


def destroy(dev, handle: int, keep) -> None:
    backend = dev.backend
    try:
        if handle:
            backend.call(lambda: backend.driver.cuTexObjectDestroy(handle), "cuTexObjectDestroy")
    finally:
        for k in keep:
            if isinstance(k, _Array):
                k.destroy()


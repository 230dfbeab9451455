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

from ctypes import Structure, byref, c_int, c_size_t, c_uint, c_uint64, c_void_p

import numpy as np

from ..gpu.texture_desc import FORMATS, RES_ARRAY, ResourceDesc, memory_desc, texture_desc

MEM_HOST, MEM_DEVICE, MEM_ARRAY = 1, 2, 3
ATTR_TEXTURE_ALIGNMENT, ATTR_TEXTURE_PITCH_ALIGNMENT = 14, 51


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
    keep: list = [spec.data]
    if spec.memory == "array":
        arr = _Array(backend, spec)
        keep.append(arr)
        try:
            _copy(backend, spec, src, MEM_ARRAY, arr.handle, 0)
        except BaseException:
            arr.destroy()
            raise
        res = ResourceDesc()
        res.resType, res.res.hArray = RES_ARRAY, arr.handle
    else:
        pitch = spec.row_bytes
        if spec.memory == "pitch2d":
            step = _attribute(backend, ATTR_TEXTURE_PITCH_ALIGNMENT)
            pitch = -(-spec.row_bytes // step) * step
        if (isinstance(src, memory.Buffer) and src.ptr % align == 0 and
                pitch == spec.row_bytes):
            ptr = src.ptr
        else:
            # allocations are 256-byte aligned, textures may need more
            dst = memory.empty(pitch * spec.extent[1] + align, np.uint8, device=dev)
            keep.append(dst)
            ptr = -(-dst.ptr // align) * align
            _copy(backend, spec, src, MEM_DEVICE, ptr, pitch)
        res = memory_desc(spec, ptr, pitch)
    tex = texture_desc(spec)
    handle = c_uint64()
    try:
        backend.call(lambda: backend.driver.cuTexObjectCreate(byref(handle), byref(res),
                                                              byref(tex), None),
                     f"cuTexObjectCreate({spec.memory}, "
                     f"{'x'.join(map(str, spec.extent[:spec.dims]))} texels of {spec.dtype} x "
                     f"{spec.channels})",
                     hint="check the extents against the device's texture limits "
                          "(maxTexture1DLinear, maxTexture2DLinear, maxTexture1D/2D/3D for "
                          "arrays)")
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


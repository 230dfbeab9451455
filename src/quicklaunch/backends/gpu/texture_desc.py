"""What CUDA's driver API and HIP's driver-style texture API share, byte
for byte: CUDA_RESOURCE_DESC / HIP_RESOURCE_DESC, CUDA_TEXTURE_DESC /
HIP_TEXTURE_DESC, the array formats and flags, and the descriptors of a
linear or pitch2D texture made from a textures.TextureSpec."""
from __future__ import annotations

from ctypes import Structure, Union, c_float, c_int, c_size_t, c_uint, c_uint64, c_void_p

# CUarray_format by (NumPy kind, bytes)
FORMATS = {("u", 1): 0x01, ("u", 2): 0x02, ("u", 4): 0x03, ("i", 1): 0x08, ("i", 2): 0x09,
           ("i", 4): 0x0A, ("f", 2): 0x10, ("f", 4): 0x20}
RES_ARRAY, RES_LINEAR, RES_PITCH2D = 0, 2, 3
TRSF_READ_AS_INTEGER, TRSF_NORMALIZED_COORDINATES = 0x01, 0x02


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


def texture_desc(spec) -> TextureDesc:
    """The sampling state of ``spec``: address, filter, flags, border."""
    tex = TextureDesc()
    tex.addressMode[:] = spec.address
    tex.filterMode = spec.filter
    tex.flags = ((TRSF_READ_AS_INTEGER if spec.format != 2 and not spec.read_normalized else 0) |
                 (TRSF_NORMALIZED_COORDINATES if spec.normalized_coords else 0))
    tex.borderColor[:] = spec.border
    return tex


def memory_desc(spec, ptr: int, pitch: int) -> ResourceDesc:
    """A linear (1-D) or pitch2D resource over device memory at ``ptr``."""
    res = ResourceDesc()
    fmt = FORMATS[spec.dtype.kind, spec.dtype.itemsize]
    if spec.memory == "linear":
        res.resType = RES_LINEAR
        res.res.linear = _Linear(ptr, fmt, spec.channels, spec.row_bytes)
    else:
        res.resType = RES_PITCH2D
        res.res.pitch2D = _Pitch2D(ptr, fmt, spec.channels, spec.extent[0], spec.extent[1], pitch)
    return res

"""Texture objects on an AMD GPU: hipTexObjectCreate, HIP's driver-style
entry, whose HIP_RESOURCE_DESC and HIP_TEXTURE_DESC are laid out as CUDA's
(backends/gpu/texture_desc.py).

Linear (1-D, tex1Dfetch) and pitch2D (2-D) textures are made: over the ql
buffer itself when its address and row size have the alignment below, else
over an aligned, padded copy (built on the host and copied with one
hipMemcpyHtoD). CUDA arrays (memory="array": tex1D and tex3D) are not: they
need hipArray3DCreate and hipDrvMemcpy3D, whose memory-type numbering
changed between ROCm releases, and quicklaunch does not call them yet."""
from __future__ import annotations

from ctypes import POINTER, byref, c_void_p

import numpy as np

from ...errors import DeviceError
from ..gpu.texture_desc import memory_desc, texture_desc

# AMD's textureAlignment and texturePitchAlignment (hipDeviceProp_t) are
# 256 bytes on every GCN, CDNA and RDNA GPU; hipMalloc aligns to 256.
ALIGNMENT = 256


def _entries(backend):
    rt = backend.runtime
    create = rt.optional("hipTexObjectCreate", [POINTER(c_void_p), c_void_p, c_void_p, c_void_p])
    destroy = rt.optional("hipTexObjectDestroy", [c_void_p])
    if create is None or destroy is None:
        raise DeviceError(f"ql.Texture: the HIP runtime at {rt.path} has no hipTexObjectCreate "
                          f"/ hipTexObjectDestroy; a newer ROCm is needed for texture objects")
    return create, destroy


def create(dev, spec):
    """(hipTextureObject_t, what the texture keeps alive) for ``spec``."""
    from ... import memory
    backend = dev.backend
    if spec.memory == "array":
        raise DeviceError(f"ql.Texture on {dev.name}: memory='array' (tex1D, tex3D) needs "
                          f"hipArray3DCreate and hipDrvMemcpy3D, which quicklaunch does not "
                          f"call on HIP yet; use 1-D linear memory (tex1Dfetch) or a 2-D "
                          f"pitch2d texture (tex2D)")
    make, _ = _entries(backend)
    src = spec.data
    pitch = -(-spec.row_bytes // ALIGNMENT) * ALIGNMENT if spec.memory == "pitch2d" \
        else spec.row_bytes
    keep: list = [spec.data]
    if isinstance(src, memory.Buffer) and src.ptr % ALIGNMENT == 0 and pitch == spec.row_bytes:
        ptr = src.ptr
    else:
        host = src.numpy() if isinstance(src, memory.Buffer) else np.ascontiguousarray(src)
        rows = host.reshape(spec.extent[1], spec.row_bytes // host.itemsize).view(np.uint8)
        padded = np.zeros((spec.extent[1], pitch), np.uint8)
        padded[:, :spec.row_bytes] = rows
        buf = memory.asarray(padded, device=dev)     # hipMalloc: 256-byte aligned
        keep.append(buf)
        ptr = buf.ptr
    res, tex = memory_desc(spec, ptr, pitch), texture_desc(spec)
    handle = c_void_p()
    backend.call(lambda: make(byref(handle), byref(res), byref(tex), None),
                 f"hipTexObjectCreate({spec.memory}, {spec.dtype} x {spec.channels})")
    return handle.value, keep


def destroy(dev, handle: int, keep) -> None:
    _, gone = _entries(dev.backend)
    dev.backend.call(lambda: gone(c_void_p(handle)), "hipTexObjectDestroy")

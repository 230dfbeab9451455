"""DLPack export of ``ql.Buffer``: ``torch.from_dlpack(buf)``,
``cupy.from_dlpack(buf)``, ``np.from_dlpack(buf)`` (CPU buffers) share the
memory without a copy. The capsule itself is built in C (_launch.c)."""
from __future__ import annotations

import numpy as np

from . import _launch

# DLDataTypeCode
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def device_of(buf) -> tuple[int, int]:
    """(DLPack device type, ordinal), from the buffer's device backend."""
    return buf.device.backend.dlpack_device


def export(buf, stream=None, dl_device=None, copy=None):
    device = device_of(buf)
    if dl_device is not None and tuple(dl_device) != device:
        raise BufferError(f"a {buf.device.name} buffer cannot be exported to DLPack device "
                          f"{tuple(dl_device)} without a copy; copy it with ql.asarray first")
    if copy:
        raise BufferError("DLPack export with copy=True is not supported; export, then copy")
    # quicklaunch's launches run on the legacy default stream; the backend
    # makes them visible to a consumer on ``stream``.
    buf.device.backend.export_sync(stream)
    dtype = np.dtype(buf.dtype)
    code = _CODES.get(dtype.kind)
    if code is None or dtype.fields is not None:
        raise BufferError(f"dtype {dtype} has no DLPack equivalent")
    return _launch._dlpack_capsule(buf.ptr, tuple(int(s) for s in buf.shape), code,
                                   dtype.itemsize * 8, device[0], device[1], buf)

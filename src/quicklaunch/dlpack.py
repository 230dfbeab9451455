"""DLPack export of ``ql.Buffer``: ``torch.from_dlpack(buf)``,
``cupy.from_dlpack(buf)``, ``np.from_dlpack(buf)`` (CPU buffers) share the
memory without a copy. The capsule itself is built in C (_launch.c)."""
from __future__ import annotations

import numpy as np

from . import _launch

DL_CPU, DL_CUDA, DL_ROCM = 1, 2, 10
# DLDataTypeCode
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def device_of(buf) -> tuple[int, int]:
    if buf.device.kind == "cpu":
        return DL_CPU, 0
    if buf.device.kind == "cuda":
        return DL_CUDA, buf.device.ordinal
    if buf.device.kind == "hip":
        return DL_ROCM, buf.device.ordinal
    raise BufferError(f"no DLPack device type for {buf.device.name}")


def export(buf, stream=None, dl_device=None, copy=None):
    device = device_of(buf)
    if dl_device is not None and tuple(dl_device) != device:
        raise BufferError(f"a {buf.device.name} buffer cannot be exported to DLPack device "
                          f"{tuple(dl_device)} without a copy; copy it with ql.asarray first")
    if copy:
        raise BufferError("DLPack export with copy=True is not supported; export, then copy")
    # quicklaunch's launches run on the legacy default stream. A consumer that
    # will use the memory on that stream (stream None or 1) is ordered after
    # them already; on any other stream it must see them finished.
    if buf.device.kind == "cuda" and stream not in (None, 1, -1):
        backend = buf.device.backend
        backend.call(lambda: backend.driver.cuStreamSynchronize(None), "cuStreamSynchronize")
    elif buf.device.kind == "hip" and stream not in (None, 0, 1, -1):
        backend = buf.device.backend   # HIP's null stream: 0 (DLPack) or 1 (legacy default)
        backend.call(lambda: backend.runtime.hipStreamSynchronize(None), "hipStreamSynchronize")
    dtype = np.dtype(buf.dtype)
    code = _CODES.get(dtype.kind)
    if code is None or dtype.fields is not None:
        raise BufferError(f"dtype {dtype} has no DLPack equivalent")
    return _launch._dlpack_capsule(buf.ptr, tuple(int(s) for s in buf.shape), code,
                                   dtype.itemsize * 8, device[0], device[1], buf)

"""Finds torch's C tensor accessors for the launcher's fast path.

The launcher (``_launch_torch.h``) reads a torch tensor's data pointer,
device, dtype and contiguity through libtorch's exported C shim
(``aoti_torch_get_data_ptr`` and friends, the functions AOTInductor's
compiled code calls), given an ``at::Tensor*`` found at a fixed offset inside
the Python tensor object. Both are checked here on probe tensors against
torch's own Python answers before they are registered; if anything differs,
nothing is registered and tensors take the (slower, equally checked) Python
path. Called by the launcher the first time it meets a tensor-like type.
"""
from __future__ import annotations

import ctypes
import os
import sys

_NAMES = ("aoti_torch_get_data_ptr", "aoti_torch_get_dtype", "aoti_torch_get_device_type",
          "aoti_torch_get_device_index", "aoti_torch_is_contiguous")

registered = False


def _library():
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    if not os.path.exists(lib):
        return None
    try:  # already loaded by torch: RTLD_NOLOAD only finds it
        return ctypes.CDLL(lib, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_LOCAL)
    except OSError:
        return None


def _answers(fns, t, offset):
    h = ctypes.c_void_p(id(t) + offset)
    p, i32, b = ctypes.c_void_p(), ctypes.c_int32(), ctypes.c_bool()
    out = []
    for name, ref in zip(_NAMES, (p, i32, i32, i32, b)):
        if fns[name](h, ctypes.byref(ref)) != 0:
            return None
        out.append(ref.value)
    return out


def register():
    """Registers the accessors with the launcher: True when it did, False
    when it cannot, None when torch is not imported (yet)."""
    global registered
    if registered:
        return True
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor"):
        return None
    lib = _library()
    if lib is None:
        return False
    try:
        fns = {n: getattr(lib, n) for n in _NAMES}
    except AttributeError:
        return False
    for f in fns.values():
        f.restype = ctypes.c_int32
        f.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
    base = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase")
    offset = object.__basicsize__  # THPVariable: PyObject_HEAD, then at::Tensor
    # Probe: the answers through the shim must be torch's own, for tensors
    # whose every answer differs (dtype, contiguity, offset into storage).
    probes = [torch.arange(12, dtype=torch.float32).reshape(3, 4)[1:],
              torch.zeros(4, 3, dtype=torch.int16).t(),
              torch.nn.Parameter(torch.ones(5, dtype=torch.float64))]
    codes = {torch.float32: 6, torch.int16: 2, torch.float64: 7}
    for t in probes:
        got = _answers(fns, t, offset)
        want = [t.data_ptr(), codes[t.dtype], 0, -1, t.is_contiguous()]
        if got is None or got[0] != want[0] or got[1] != want[1] or got[2] != 0 or \
                bool(got[4]) != want[4]:
            return False
    from .. import _launch
    _launch._register_torch(base, torch.Tensor, offset, *(ctypes.cast(fns[n], ctypes.c_void_p).value
                                            for n in _NAMES))
    registered = True
    return True

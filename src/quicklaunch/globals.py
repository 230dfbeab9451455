"""``Module.get_global``: module-scope ``__device__`` and ``__constant__``
variables as buffers, on the CPU device a zero-copy view of the variable."""
from __future__ import annotations

import re

import numpy as np

from .errors import QuicklaunchError
from .kinds import char_dtype
from .memory import Buffer
from .signature import strip_comments

# C scalar types a declaration can name, and their NumPy dtypes.
_DTYPES = {
    "float": "float32", "double": "float64", "signed char": "int8",
    "unsigned char": "uint8", "short": "int16", "unsigned short": "uint16", "int": "int32",
    "unsigned": "uint32", "unsigned int": "uint32", "long": "int64",
    "unsigned long": "uint64", "long long": "int64", "unsigned long long": "uint64",
    "bool": "bool", "int8_t": "int8", "uint8_t": "uint8", "int16_t": "int16",
    "uint16_t": "uint16", "int32_t": "int32", "uint32_t": "uint32", "int64_t": "int64",
    "uint64_t": "uint64", "__half": "float16", "half": "float16",
}


class GlobalNotFoundError(QuicklaunchError, KeyError):
    """A variable name that the module does not define."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _declared(source: str, name: str):
    """(dtype, shape) from `__device__`/`__constant__ T name[d0][d1]...`, or
    (None, None) when the declaration is not that simple."""
    short = name.rsplit("::", 1)[-1]
    pattern = (r"(?:__device__|__constant__|__managed__)(?:\s+(?:__device__|__constant__|"
               r"static|const|volatile))*\s+([A-Za-z_][\w ]*?)\s+" + re.escape(short) +
               r"\s*((?:\[[^\]]*\]\s*)*)[;=]")
    m = re.search(pattern, strip_comments(source))
    if not m:
        return None, None
    ctype = " ".join(m.group(1).split())
    sizes = re.findall(r"\[([^\]]*)\]", m.group(2))
    # Literal sizes give the shape; sizes spelled with macros give a flat one.
    dims = tuple(int(d) for d in sizes) if all(d.strip().isdigit() for d in sizes) else ()
    # Plain char: signed or not as the target's ABI says (kinds.char_dtype:
    # uint8 on Linux aarch64, int8 on x86-64), as the kernel sees it.
    dtype = char_dtype() if ctype == "char" else _DTYPES.get(ctype)
    return (np.dtype(dtype), dims) if dtype else (None, None)


def _mangled(name: str) -> str:
    """The symbol of a namespace-scope variable: `ns::table` -> _ZN2ns5tableE."""
    parts = name.split("::")
    if len(parts) == 1:
        return name
    return "_ZN" + "".join(f"{len(p)}{p}" for p in parts) + "E"


def global_buffer(module, name: str, dtype=None, shape=None) -> Buffer:
    plain = name.strip().lstrip(":")
    found = module.device.backend.global_address(module._image, name, _mangled(plain))
    if found is None:
        raise GlobalNotFoundError(f"no __device__ or __constant__ variable '{name}' in this "
                                  f"module (a variable nothing uses may have been optimised "
                                  f"away; mark it __device__ and use it, or keep it with "
                                  f"__attribute__((used)))")
    address, nbytes = found
    if dtype is None:
        dtype, dims = _declared(module.source, name)
        if dtype is None:
            dtype, dims = np.dtype(np.uint8), (nbytes,)
        if shape is None:
            shape = dims if dims and int(np.prod(dims)) * dtype.itemsize == nbytes else None
    dtype = np.dtype(dtype)
    if shape is None:
        shape = (nbytes // dtype.itemsize,) if nbytes != dtype.itemsize else ()
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != nbytes:
        raise ValueError(f"variable '{name}' is {nbytes} bytes; shape {shape} of {dtype} "
                         f"is {int(np.prod(shape)) * dtype.itemsize}")
    if not module.device.host_memory:  # device memory: the module owns it
        return Buffer(address, shape, dtype, module.device, owner=module)
    memory = (np.ctypeslib.ctypes.c_ubyte * nbytes).from_address(address) if nbytes else None
    if memory is not None:
        memory._ql_module = module   # the view keeps the module (its memory) loaded
    raw = np.ctypeslib.as_array(memory) if nbytes else np.empty(0, np.uint8)
    view = raw.view(dtype).reshape(shape)
    return Buffer(address, shape, dtype, module.device, owner=view)

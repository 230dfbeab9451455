"""Texture objects: ``ql.Texture``, what a ``cudaTextureObject_t`` kernel
parameter takes (docs/textures.md).

A texture reads an array of 1 to 3 dimensions of 8/16/32-bit integers, half
or float texels with 1, 2 or 4 channels, through the texture unit's address
modes (clamp, wrap, mirror, border), filtering (point, linear), normalised
coordinates and read modes. This module checks what is asked and describes
it (``TextureSpec``); the device's backend makes the object: the CPU
device's descriptor (backends/cpu/textures.py, read by ql_texture.h), the
CUDA driver's cuTexObjectCreate (backends/cuda/textures.py). A backend
package without a ``textures`` module has no texture objects, and says so.

The launcher (``_launch_texture.h``) passes a texture only to a texture
parameter of a kernel on the texture's own device, and only while it is
open."""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from . import _launch
from .devices import Device, device as get_device

__all__ = ["Texture", "TextureSpec"]

ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTER_MODES = {"point": 0, "linear": 1}
READ_MODES = ("element", "normalized_float")
MEMORY_KINDS = ("linear", "pitch2d", "array")
# NumPy kind and size -> (format: 0 signed, 1 unsigned, 2 float), as CUDA's channel formats
_FORMATS = {("i", 1): 0, ("i", 2): 0, ("i", 4): 0, ("u", 1): 1, ("u", 2): 1, ("u", 4): 1,
            ("f", 2): 2, ("f", 4): 2}


@dataclass(frozen=True)
class TextureSpec:
    """What a backend builds: the texels (C-contiguous, ``dims`` axes in C
    order, then the channels) and the sampling state."""
    data: object               # a NumPy array or ql.Buffer of `dtype`
    extent: tuple[int, int, int]   # width, height, depth (1 where unused)
    dims: int
    dtype: np.dtype            # one channel's type
    format: int                # 0 signed int, 1 unsigned int, 2 float (half when 2 bytes)
    channels: int
    memory: str                # "linear", "pitch2d" or "array"
    address: tuple[int, int, int]
    filter: int
    read_normalized: bool
    normalized_coords: bool
    border: tuple[float, float, float, float]

    @property
    def texel_bytes(self) -> int:
        return self.dtype.itemsize * self.channels

    @property
    def row_bytes(self) -> int:
        return self.extent[0] * self.texel_bytes


def _modes(address, dims: int) -> tuple[int, int, int]:
    names = (address,) * dims if isinstance(address, str) else tuple(address)
    if len(names) != dims:
        raise ValueError(f"ql.Texture: address has {len(names)} modes for a {dims}-D texture; "
                         f"give one mode or one per axis (x first)")
    out = []
    for n in names:
        if n not in ADDRESS_MODES:
            raise ValueError(f"ql.Texture: address mode {n!r} is not one of "
                             f"{', '.join(map(repr, ADDRESS_MODES))}")
        out.append(ADDRESS_MODES[n])
    return tuple(out + [ADDRESS_MODES["clamp"]] * (3 - dims))


def _source(data, dev: Device | None):
    """(array-like of the texels, the device): a ql.Buffer stays as it is,
    anything else becomes a NumPy array (host data, copied where the device
    needs it)."""
    from .memory import Buffer
    if isinstance(data, Buffer):
        if dev is not None and data.device is not dev:
            raise ValueError(f"ql.Texture: the buffer lives on {data.device.name}, not "
                             f"{dev.name}; copy it with ql.asarray(x, device=...)")
        return data, data.device
    dev = get_device(dev)
    if not dev.host_memory and hasattr(data, "__cuda_array_interface__"):
        return _device_array(data, dev), dev
    arr = np.asarray(data)
    if arr.dtype.hasobject:
        raise TypeError("ql.Texture: an array of Python objects has no texel format")
    return arr, dev


def _device_array(obj, dev: Device):
    """Another library's GPU array (``__cuda_array_interface__``: CuPy,
    Numba, torch, ...) as a ql.Buffer over the same memory, kept alive by
    holding ``obj``; it must be C-contiguous and on ``dev``."""
    from .memory import Buffer
    iface = obj.__cuda_array_interface__
    shape = tuple(int(s) for s in iface["shape"])
    dtype = np.dtype(iface["typestr"])
    strides = iface.get("strides")
    if strides is not None and tuple(strides) != tuple(np.empty(shape, dtype).strides):
        raise ValueError("ql.Texture: the device array is strided; pass a contiguous copy")
    ptr = int(iface["data"][0])
    owner = dev.backend.pointer_owner(ptr) if ptr else None
    if owner is not None and owner != dev.ordinal:
        raise ValueError(f"ql.Texture: the array lives on GPU {owner}, not {dev.name}; pass "
                         f"device= its device, or copy it there")
    return Buffer(ptr, shape, dtype, dev, owner=obj, readonly=True)


def make_spec(data, channels: int, address, filter: str, normalized_coords: bool,
              read_mode: str, border_color, memory: str | None) -> TextureSpec:
    dtype = np.dtype(data.dtype)
    key = (dtype.kind, dtype.itemsize)
    if key not in _FORMATS or not dtype.isnative:
        raise TypeError(f"ql.Texture: {dtype} is not a texel format; textures hold 8-, 16- or "
                        f"32-bit integers, float16 or float32 (convert with "
                        f"x.astype(np.float32), or pass 64-bit values as two 32-bit channels: "
                        f"x.view(np.int32) with channels=2, read as int2)")
    if channels not in (1, 2, 4):
        raise ValueError(f"ql.Texture: channels={channels!r}; a texel has 1, 2 or 4 channels "
                         f"(pad 3-channel data to 4)")
    shape = tuple(int(s) for s in data.shape)
    if channels > 1:
        if not shape or shape[-1] != channels:
            raise ValueError(f"ql.Texture: channels={channels} needs the last axis to hold "
                             f"the channels, got shape {shape}")
        shape = shape[:-1]
    dims = len(shape)
    if not 1 <= dims <= 3:
        raise ValueError(f"ql.Texture: a texture has 1, 2 or 3 dimensions (plus the channel "
                         f"axis), got shape {tuple(data.shape)}")
    if any(s < 1 for s in shape):
        raise ValueError(f"ql.Texture: every extent must be at least 1, got {shape}")
    memory = memory or ("linear", "pitch2d", "array")[dims - 1]
    if memory not in MEMORY_KINDS:
        raise ValueError(f"ql.Texture: memory={memory!r} is not one of {MEMORY_KINDS}")
    if (memory == "linear" and dims != 1) or (memory == "pitch2d" and dims != 2):
        raise ValueError(f"ql.Texture: memory={memory!r} is for {1 if memory == 'linear' else 2}"
                         f"-D data, got {dims}-D; use memory='array'")
    if filter not in FILTER_MODES:
        raise ValueError(f"ql.Texture: filter={filter!r} is not 'point' or 'linear'")
    if read_mode not in READ_MODES:
        raise ValueError(f"ql.Texture: read_mode={read_mode!r} is not one of {READ_MODES}")
    fmt = _FORMATS[key]
    read_normalized = read_mode == "normalized_float"
    if read_normalized and (fmt == 2 or dtype.itemsize == 4):
        raise ValueError(f"ql.Texture: read_mode='normalized_float' is for 8- and 16-bit "
                         f"integers; {dtype} texels are read as they are")
    if filter == "linear" and fmt != 2 and not read_normalized:
        raise ValueError(f"ql.Texture: linear filtering returns floats, so {dtype} texels need "
                         f"read_mode='normalized_float' (8/16-bit) or filter='point'")
    if memory == "linear" and (filter != "point" or normalized_coords):
        raise ValueError("ql.Texture: linear memory is read by tex1Dfetch, whole texels by "
                         "integer index: no filtering or normalised coordinates; use "
                         "memory='array' for tex1D")
    border = tuple(float(c) for c in (border_color or (0.0,)))
    border = (border + (0.0,) * 4)[:4]
    extent = tuple(reversed(shape)) + (1,) * (3 - dims)
    return TextureSpec(data, extent, dims, dtype, fmt, channels, memory,
                       _modes(address, dims), FILTER_MODES[filter], read_normalized,
                       bool(normalized_coords), border)


def _backend_textures(dev: Device):
    package = type(dev.backend).__module__.rpartition(".")[0]
    try:
        return importlib.import_module(".textures", package)
    except ModuleNotFoundError as exc:
        if exc.name != package + ".textures":
            raise
        from .errors import DeviceError
        raise DeviceError(f"ql.Texture: device {dev.name} has no texture objects") from None


class Texture(_launch.TextureBase):
    """A texture object over ``data`` (a NumPy array, a ql.Buffer, or on a
    GPU an array with ``__cuda_array_interface__``) on
    ``device`` (the buffer's, else ``ql.device(device)``), for kernels'
    ``cudaTextureObject_t`` parameters.

    ``data``'s axes are the texture's (1 to 3, C order: ``(depth,) (height,)
    width``), then the channels when ``channels`` is 2 or 4. ``address``:
    ``"clamp"``, ``"wrap"``, ``"mirror"`` or ``"border"``, or one per axis
    (x first); ``filter``: ``"point"`` or ``"linear"``; ``read_mode``:
    ``"element"`` or ``"normalized_float"`` (8/16-bit integers read as
    [0, 1] or [-1, 1]); ``memory``: ``"linear"`` (1-D, tex1Dfetch; the 1-D
    default), ``"pitch2d"`` (the 2-D default) or ``"array"`` (the 3-D
    default; tex1D for 1-D data). The texture keeps what it reads alive;
    ``close()`` (or ``with``, or garbage collection) destroys it."""

    def __init__(self, data, *, channels: int = 1, address="clamp", filter: str = "point",
                 normalized_coords: bool = False, read_mode: str = "element",
                 border_color=(0.0, 0.0, 0.0, 0.0), memory: str | None = None, device=None):
        src, dev = _source(data, get_device(device) if device is not None else None)
        spec = make_spec(src, channels, address, filter, normalized_coords, read_mode,
                         border_color, memory)
        ops = _backend_textures(dev)
        handle, keep = ops.create(dev, spec)
        super().__init__(handle, dev.id, dev.name)
        self._ops, self._keep, self._source = ops, keep, data
        self.device, self.spec = dev, spec

    @property
    def shape(self) -> tuple[int, ...]:
        """The texture's extents in C order (``(height, width)`` for 2-D)."""
        return tuple(reversed(self.spec.extent[:self.spec.dims]))

    @property
    def dtype(self) -> np.dtype:
        return self.spec.dtype

    @property
    def channels(self) -> int:
        return self.spec.channels

    @property
    def closed(self) -> bool:
        return not self.handle

    def close(self) -> None:
        """Destroys the texture object (after the device finishes what it
        has queued) and drops what it kept alive. Idempotent."""
        handle = self._release()
        if handle:
            try:
                self.device.synchronize()
            finally:
                # what stays is what a stale handle may still be read through
                # (the CPU device's invalidated descriptor), else nothing
                self._keep = self._ops.destroy(self.device, handle, self._keep)
                self._source = None

    def __enter__(self) -> "Texture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the device may be gone
            pass

    def __reduce__(self):
        raise TypeError("a ql.Texture cannot be pickled; pickle its data and make a new one")

    def __repr__(self) -> str:
        s = self.spec
        state = "closed" if self.closed else f"handle=0x{self.handle:x}"
        return (f"<quicklaunch.Texture {'x'.join(map(str, self.shape))} {s.dtype}"
                f"{'x' + str(s.channels) if s.channels > 1 else ''} {s.memory} on "
                f"{self.device.name}, {state}>")

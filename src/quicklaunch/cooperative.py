"""Cooperative launches: every block of the grid resident at once, so a
kernel may call ``cooperative_groups::this_grid().sync()``.

Spelled ``k.configure(grid, block, shared_mem=0, stream=None,
cooperative=True)(*args)``: the same configuration a launch always takes,
plus the one switch CUDA's runtime also makes a launch attribute
(``cudaLaunchAttributeCooperative``). Only ``configure`` takes it: the fast
paths ``k[grid, block](...)`` and ``k.launch(...)`` (C, ``_launch.c``) are
untouched, and a Python ``launch`` wrapper would cost every plain launch
about 0.7 us. A cooperative launch is rare and heavy (it
starts a thread per block on the CPU, checks occupancy on a GPU), so it goes
through Python: the arguments are packed by the launcher's own ``_pack``
(the same checks and conversions as every launch) and handed to the
device's ``launch_cooperative``, which refuses, before anything runs, a grid
that cannot be co-resident, with the numbers behind the limit.
"""
from __future__ import annotations

import ctypes
import math
from ctypes import c_uint64, c_void_p

from .errors import LaunchError

__all__ = ["CooperativeLauncher", "ParamBlock", "dims3"]


def dims3(value, what: str) -> tuple[int, int, int]:
    """A grid or block as (x, y, z): an int or a tuple of one to three ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        dims = (value,)
    elif isinstance(value, tuple) and 1 <= len(value) <= 3 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        dims = value
    else:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    dims = tuple(dims) + (1,) * (3 - len(dims))
    if any(d < 1 for d in dims):
        raise LaunchError(f"{what} {value!r}: every dimension must be at least 1")
    return dims


class ParamBlock:
    """A packed parameter block (``k._pack``) in memory of its own, and the
    ``void *[]`` of pointers to each parameter (at ``k._layout()`` offsets)
    that cuLaunchKernel-shaped entries take."""
    __slots__ = ("block", "pointers")

    def __init__(self, kernel, packed: bytes):
        layout = kernel._layout()
        self.block = (c_uint64 * max(1, (len(packed) + 7) // 8))()  # 8-byte aligned
        ctypes.memmove(self.block, packed, len(packed))
        base = ctypes.addressof(self.block)
        self.pointers = (c_void_p * max(1, len(layout)))(*[base + off for _, _, off in layout])

    @property
    def address(self) -> int:
        return ctypes.addressof(self.pointers)


def stream_handle(kernel, stream) -> int:
    """The device's handle of ``stream`` (0: the default stream)."""
    if stream is None:
        return 0
    export = getattr(stream, "__ql_stream__", None)
    if export is not None:
        device_id, handle = export()
        if device_id != kernel.device.id:
            raise LaunchError(f"kernel '{kernel.name}' is on {kernel.device.name}; the stream "
                              f"is another device's")
        return handle
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    raise TypeError(f"stream must be a ql.Stream, an int handle or None, got "
                    f"{type(stream).__name__}")


class CooperativeLauncher:
    """``k.configure(..., cooperative=True)``: call it with the kernel's
    arguments to launch."""

    def __init__(self, kernel, grid, block, shared_mem: int = 0, stream=None):
        self.kernel = kernel
        self.grid = dims3(grid, "grid")
        self.block = dims3(block, "block")
        if not isinstance(shared_mem, int) or shared_mem < 0:
            raise LaunchError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
        self.shared_mem = shared_mem
        self.stream = stream
        lim = kernel.device.limits
        threads = math.prod(self.block)
        if threads > lim.max_threads_per_block or any(
                b > m for b, m in zip(self.block, lim.max_block_dims)):
            raise LaunchError(f"kernel '{kernel.name}': block {self.block} exceeds "
                              f"{kernel.device.name}'s limits ({lim.max_threads_per_block} "
                              f"threads, {lim.max_block_dims})")
        if any(g > m for g, m in zip(self.grid, lim.max_grid_dims)):
            raise LaunchError(f"kernel '{kernel.name}': grid {self.grid} exceeds "
                              f"{kernel.device.name}'s limit {lim.max_grid_dims}")
        backend = kernel.device.backend
        self._launch = getattr(backend, "launch_cooperative", None)
        if self._launch is None:
            raise LaunchError(f"kernel '{kernel.name}': {kernel.device.name} has no "
                              f"cooperative launch in quicklaunch (the CPU and CUDA devices "
                              f"have one)")

    def __call__(self, *args) -> None:
        from .graphs import active_capture
        k = self.kernel
        if active_capture() is not None:
            raise LaunchError(f"kernel '{k.name}': a cooperative launch cannot be recorded in "
                              f"a ql.graph; launch it outside the graph")
        packed = k._pack(*args)   # the launcher's own checks and conversions
        self._launch(k, self.grid, self.block, self.shared_mem,
                     stream_handle(k, self.stream), ParamBlock(k, packed))

    def __repr__(self) -> str:
        return (f"<cooperative launch of {self.kernel.name} grid={self.grid} "
                f"block={self.block} shared_mem={self.shared_mem}>")

"""Kernel attributes and occupancy: ``k.attributes``, ``k.max_active_blocks_per_sm``.

On CUDA and HIP the values are the driver's (``cuFuncGetAttribute`` /
``hipFuncGetAttribute``), read once, on first use, through the backend's
``function_attribute(handle, code)``; the occupancy query is
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` /
``hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`` through its
``occupancy(handle, threads, shared)``. A backend without those (the CPU
device) gets the values that mean something there and ``None`` for the rest,
named in ``not_applicable`` with the reason (docs/loading.md).

``k.attributes`` is a read-only mapping that also answers by attribute
(``k.attributes.num_regs``); it holds what the compiler said about the
kernel too (the CPU device's ``tier`` and ``tier_reason``).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["DRIVER_ATTRIBUTES", "KernelAttributes", "max_active_blocks_per_sm"]

# CUfunction_attribute and hipFunction_attribute share these codes
DRIVER_ATTRIBUTES = {
    "max_threads_per_block": 0,
    "shared_size_bytes": 1,
    "const_size_bytes": 2,
    "local_size_bytes": 3,
    "num_regs": 4,
    "ptx_version": 5,
    "binary_version": 6,
    "max_dynamic_shared_size_bytes": 8,
}
CPU_NOT_APPLICABLE = (
    "not applicable on the CPU device: a kernel there is host machine code; it has no "
    "register file, no per-kernel static shared or constant segment the loader reports, "
    "and no PTX or SASS version")


class KernelAttributes(Mapping):
    """What the driver (or the CPU device) reports about one kernel."""

    def __init__(self, kernel, compiler: dict):
        self._kernel = kernel
        self._compiler = dict(compiler)
        self._values: dict | None = None
        self.not_applicable: dict[str, str] = {}   # name -> why it is None

    def _load(self) -> dict:
        if self._values is None:
            k = self._kernel
            backend = k.device.backend
            get = getattr(backend, "function_attribute", None)
            values: dict = {}
            if get is not None:
                for name, code in DRIVER_ATTRIBUTES.items():
                    values[name] = get(k.handle, code)
            else:
                lim = k.device.limits
                for name in DRIVER_ATTRIBUTES:
                    values[name] = None
                    self.not_applicable[name] = CPU_NOT_APPLICABLE
                values["max_threads_per_block"] = lim.max_threads_per_block
                values["max_dynamic_shared_size_bytes"] = lim.max_shared_per_block
                for name in ("max_threads_per_block", "max_dynamic_shared_size_bytes"):
                    del self.not_applicable[name]
            values.update(self._compiler)
            self._values = values
        return self._values

    def __getitem__(self, name: str):
        if name in self._compiler:
            return self._compiler[name]   # no driver call (compile reads "tier")
        if name not in DRIVER_ATTRIBUTES:
            raise KeyError(name)
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel attributes have no {name!r}; they have "
                                 f"{sorted(self._load())}") from None

    def __repr__(self) -> str:
        return f"<kernel attributes of {self._kernel.name}: {dict(self._load())}>"


class AttributesSlot:
    """``Kernel.attributes``: assigning (``ql.compile`` does, with what the
    compiler reported) keeps that dict; reading gives the KernelAttributes."""

    def __set_name__(self, owner, name):
        self._key = "_" + name + "_mapping"

    def __get__(self, kernel, owner=None):
        if kernel is None:
            return self
        got = kernel.__dict__.get(self._key)
        if got is None:
            got = kernel.__dict__[self._key] = KernelAttributes(kernel, {})
        return got

    def __set__(self, kernel, compiler: dict) -> None:
        kernel.__dict__[self._key] = KernelAttributes(kernel, compiler or {})


def _threads(block) -> int:
    if isinstance(block, int):
        dims = (block,)
    else:
        dims = tuple(block)
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) for d in dims):
            raise TypeError(f"block must be an int or a tuple of 1 to 3 ints, got {block!r}")
    n = 1
    for d in dims:
        if d <= 0:
            raise ValueError(f"block dimensions must be positive, got {block!r}")
        n *= d
    return n


def max_active_blocks_per_sm(kernel, block, shared_mem: int = 0) -> int:
    """How many blocks of ``block`` threads using ``shared_mem`` bytes of
    dynamic shared memory can be resident on one multiprocessor at once.

    CUDA / HIP: the driver's occupancy calculator. The CPU device: a
    "multiprocessor" is one worker thread (a core of the device's pool),
    which runs one block at a time to its end, so 1 when the block can be
    launched at all (threads and shared memory within the device's limits),
    else 0 (as the driver answers 0 for a block that cannot fit)."""
    threads = _threads(block)
    if not isinstance(shared_mem, int) or shared_mem < 0:
        raise ValueError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
    backend = kernel.device.backend
    occupancy = getattr(backend, "occupancy", None)
    if occupancy is not None:
        if threads > kernel.attributes["max_threads_per_block"]:
            return 0
        return occupancy(kernel.handle, threads, shared_mem)
    lim = kernel.device.limits
    if threads > lim.max_threads_per_block or shared_mem > lim.max_shared_per_block:
        return 0
    return 1


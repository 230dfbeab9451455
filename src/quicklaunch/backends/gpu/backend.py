"""What the CUDA and HIP backends share behind the backend interface
(backends/base.py): device memory through their memory module, the stream
operations made once, and the kernel rows of a compiled program."""
from __future__ import annotations

import importlib

from ..base import KernelImage, ParamImage

__all__ = ["GpuBackend"]


class GpuBackend:
    """A mixin: a subclass names its memory and stream modules (relative to
    its own package) and provides ``function(library, lowered_name)``."""

    host_memory = False
    cuda_array_interface = True
    inline_threads = 2**63   # a GPU launch only queues: never release the GIL for it
    _memory_module = ".memory"
    _streams_class = ".streams:StreamOps"

    def _sibling(self, name: str):
        return importlib.import_module(name, type(self).__module__.rpartition(".")[0])

    # -------------------------------------------------------------- memory
    def allocate(self, nbytes: int):
        return self._sibling(self._memory_module).Allocation(self, nbytes)

    def to_host(self, out, ptr: int) -> None:
        self._sibling(self._memory_module).to_host(self, out, ptr)

    def to_device(self, ptr: int, src) -> None:
        self._sibling(self._memory_module).to_device(self, ptr, src)

    def fill_bytes(self, ptr: int, value: int, nbytes: int) -> None:
        self._sibling(self._memory_module).fill_bytes(self, ptr, value, nbytes)

    def pointer_owner(self, address: int) -> int | None:
        return self._sibling(self._memory_module).owner_ordinal(self, address)

    # ------------------------------------------------------------- streams
    def stream_ops(self):
        ops = self.__dict__.get("_stream_ops")
        if ops is None:
            module, _, cls = self._streams_class.partition(":")
            ops = self.__dict__["_stream_ops"] = getattr(self._sibling(module), cls)(self)
        return ops

    # --------------------------------------------------------------- code
    def kernel_images(self, prog, library) -> tuple[KernelImage, ...]:
        """The launchable rows of a compiled program loaded as ``library``."""
        return tuple(
            KernelImage(expr, info.lowered_name,
                        tuple(ParamImage(p.name, p.ctype, p.size, p.align, p.kind)
                              for p in info.params),
                        self.function(library, info.lowered_name), getattr(info, "line", 1))
            for expr, info in prog.kernels.items())

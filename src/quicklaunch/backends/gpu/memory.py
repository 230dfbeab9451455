"""Device memory as the GPU backends (cuda/, hip/) hold it: an object that
owns ``nbytes`` at ``ptr`` and frees it when the last reference goes. Each
backend's ``memory.Allocation`` says how to allocate and free (the driver
calls and their pointer types differ)."""
from __future__ import annotations

import sys


class DeviceAllocation:
    """``nbytes`` of device memory at ``ptr``, freed when the last reference
    to it goes (buffers, views and exported capsules hold one). Subclasses
    give ``_allocate(backend, nbytes) -> int`` and ``_free()``; an error in
    ``_free`` (a context or runtime torn down at exit) is ignored."""

    __slots__ = ("backend", "ptr", "nbytes", "__weakref__")

    def __init__(self, backend, nbytes: int):
        self.backend = backend
        self.nbytes = nbytes
        self.ptr = self._allocate(backend, nbytes)

    def _allocate(self, backend, nbytes: int) -> int:
        raise NotImplementedError

    def _free(self) -> None:
        raise NotImplementedError

    def __del__(self):
        if sys.is_finalizing() or not getattr(self, "ptr", 0):
            return
        try:
            self._free()
        except Exception:  # torn down at exit: nothing left to free
            pass
        self.ptr = 0

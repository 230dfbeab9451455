"""Finding and opening a GPU compiler library (NVRTC, hiprtc) at run time:
``$QUICKLAUNCH_...`` first (a library there that does not load is an
error, never silently replaced by another), then the backend's candidates
in order."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import CompileError

__all__ = ["open_library", "LibrarySearch"]


def open_library(cls, path: str):
    """``cls(path)``; OSError (naming ``path``) when it does not load."""
    try:
        return cls(path)
    except (OSError, AttributeError) as exc:
        raise OSError(str(exc) if path in str(exc) else f"{path}: {exc}") from None


@dataclass(frozen=True)
class LibrarySearch:
    """Where a compiler library is looked for, and the words of the errors
    when it is not found: ``name`` ("NVRTC"), what it is (``role``: "the
    CUDA runtime compiler"), the ``files`` to point ``env_var`` at, what it
    is for (``purpose``: "compile for CUDA GPUs") and how to install it."""
    env_var: str
    name: str
    role: str
    files: str
    purpose: str
    install_hint: str

    def find(self, cls, candidates):
        """``cls(path)`` for the library at ``$env_var`` when set, else for
        the first of ``candidates()`` that opens; CompileError when none."""
        explicit = os.environ.get(self.env_var)
        if explicit:
            try:
                return open_library(cls, explicit)
            except OSError as exc:
                raise CompileError(
                    f"{self.env_var}={explicit} could not be loaded as {self.name} ({exc}); "
                    f"point it at {self.files}, unset it, or {self.install_hint}") from None
        tried = []
        for path in candidates():
            try:
                return open_library(cls, path)
            except OSError as exc:
                tried.append(str(exc))
        detail = ("; tried: " + "; ".join(tried)) if tried else ""
        raise CompileError(f"{self.name} ({self.role}) was not found{detail}. "
                           f"To {self.purpose}, {self.install_hint}")

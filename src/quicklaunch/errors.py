"""The exceptions quicklaunch raises.

Every class is picklable (its constructor arguments round-trip through
``args``), so errors cross process boundaries intact. Errors about bad
arguments also derive from the matching builtin (``TypeError``,
``ValueError``, ``OverflowError``) so generic handlers keep working.
"""
from __future__ import annotations

__all__ = [
    "CacheError",
    "CompileError",
    "CompileLogWarning",
    "CompileWarning",
    "CudaError",
    "DeviceError",
    "LaunchError",
    "LaunchOverflowError",
    "LaunchTypeError",
    "LaunchValueError",
    "QuicklaunchError",
]


class QuicklaunchError(Exception):
    """Base class of every error quicklaunch raises."""


class CompileError(QuicklaunchError):
    """A kernel source did not compile, or could not be reflected.

    ``log`` is the compiler's output, ``source`` the kernel source as given,
    ``options`` the options used and ``command`` the compiler command line.
    """

    def __init__(self, message: str, log: str = "", source: str = "",
                 options: tuple = (), command: tuple = ()):
        super().__init__(message, log, source, tuple(options), tuple(command))
        self.message = message
        self.log = log
        self.source = source
        self.options = tuple(options)
        self.command = tuple(command)

    def __str__(self) -> str:
        return self.message


class LaunchError(QuicklaunchError):
    """A launch was refused (bad configuration or arguments) or failed."""


class LaunchTypeError(LaunchError, TypeError):
    """An argument of the wrong kind for its kernel parameter."""


class LaunchValueError(LaunchError, ValueError):
    """An argument or configuration value that is invalid for the launch."""


class LaunchOverflowError(LaunchError, OverflowError):
    """A scalar argument out of range for its kernel parameter's C type."""


class CacheError(QuicklaunchError):
    """The compile cache directory is unusable or unsafe."""


class DeviceError(QuicklaunchError):
    """A device was asked for that does not exist or cannot be used."""


class CudaError(QuicklaunchError):
    """A CUDA driver call failed; carries the status name and code."""

    def __init__(self, message: str, name: str = "", code: int = 0):
        super().__init__(message, name, code)
        self.message = message
        self.name = name
        self.code = code

    def __str__(self) -> str:
        return self.message


class CompileWarning(UserWarning):
    """Something a compile did to the source that the user should know once:
    host code dropped, a feature mapped. Silence it with
    ``warnings.filterwarnings("ignore", category=ql.CompileWarning)``."""


class CompileLogWarning(CompileWarning):
    """The device compiler's own warnings (g++, NVRTC, hiprtc), issued once
    per ``ql.compile`` whose log has any (a cache hit too: the log is kept
    with the entry); the whole log is ``module.compile_log``. Make them
    errors with ``warnings.filterwarnings("error", category=ql.CompileLogWarning)``."""

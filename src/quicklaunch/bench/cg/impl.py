"""What a CG implementation gives the runner, and how its failures read.

An ``Implementation`` has a ``name`` (its row), ``version()`` and
``prepare(device)`` (imports its library, compiles its kernels: done once,
never timed). ``solver(problem)`` returns a ``Solver`` holding the buffers
of one grid size:

    reset()          u = 0, r = p = f, rr = r.r (not timed)
    solve(k)         k CG iterations, returning when they are done (timed)
    result()         u as a host (N, N) array

A library that is not installed raises ``Unavailable("not installed: ...")``
from ``prepare``; one that cannot run here says why with ``Unavailable``
too. The runner turns any exception into its row's status (``describe``),
so no implementation can stop the run.
"""
from __future__ import annotations

import importlib
from importlib import metadata


class Unavailable(Exception):
    """The implementation cannot run here; the message is the row's status."""


class Solver:
    def reset(self) -> None:
        raise NotImplementedError

    def solve(self, iterations: int) -> None:
        raise NotImplementedError

    def result(self):
        raise NotImplementedError


class Implementation:
    name = "?"
    module = ""            # the Python module it needs
    distribution = ""      # its PyPI name, for the version and the install hint

    def version(self) -> str:
        if not self.distribution:
            return "unknown"
        try:
            return metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            return "not installed"
        except Exception as exc:  # noqa: BLE001 - a broken installation
            return f"unknown ({type(exc).__name__})"

    def need(self):
        """Imports ``module``, or raises Unavailable naming the package."""
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            hint = f" (pip install {self.distribution})" if self.distribution else ""
            raise Unavailable(f"not installed: {self.module}{hint}: {exc}") from None

    def prepare(self, device) -> None:
        if self.module:
            self.need()

    def solver(self, problem) -> Solver:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<CG implementation {self.name!r}>"


def describe(exc: BaseException, limit: int = 200) -> str:
    """A row status for an exception: Unavailable's own message, else
    'failed: Type: first line'."""
    if isinstance(exc, Unavailable):
        text = str(exc)
    else:
        first = (str(exc).strip().splitlines() or [""])[0]
        text = f"failed: {type(exc).__name__}: {first}".rstrip(": ")
    return text if len(text) <= limit else text[:limit - 3] + "..."

"""The launch benchmarks' vocabulary: sources, rows and their statuses.

A *source* is one library (or quicklaunch with its C baseline). It declares
its rows up front (``RowSpec``), so that when it cannot run (not installed,
no GPU, an exception, a crash) every row it would have given still appears,
saying why. Its ``setup(ctx)`` gets a ``Context`` and returns
``{row id: {param count: timer}}``, where a timer is
``fn(iters) -> ns per launch``; instead of a timer dict a row may map to an
exception (that row failed), and instead of a timer a param count may map to
an exception (that cell failed, e.g. ``NotApplicable``).

A ``Row`` is one line of the result tables: its timers while measuring, its
samples afterwards, and how it round-trips through JSON (child processes and
results.json). ``describe`` turns an exception into a row's status and reason;
``load_sources`` finds a list of sources by name (``module:attribute``), as
child processes do.
"""
import importlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

LAUNCH = "launch"        # table 1: host cost per launch
INFLIGHT = "inflight"    # table 2: many kernels in flight, launch + sync
OK, SKIPPED, ERROR = "ok", "skipped", "error"


class Skip(Exception):
    """The row cannot run here, for the stated reason (not an error)."""


class NotApplicable(Skip):
    """The row has no such measurement (e.g. torch has no 16-argument op)."""


def only_on(ctx, kind: str) -> None:
    """Raises Skip unless the benchmark's device is of ``kind`` (a peer that
    only launches there)."""
    if str(ctx.device).split(":")[0] != kind:
        raise Skip(f"a {kind} peer; the bench device is {ctx.device}")


@dataclass(frozen=True)
class RowSpec:
    id: str            # stable key: "ql.configured", "cupy.rawkernel"
    name: str          # what the table shows
    table: str = LAUNCH
    note: str = ""


@dataclass
class Source:
    name: str                         # "quicklaunch", "cupy", ...
    rows: tuple                       # RowSpec, ...
    setup: Callable                   # ctx -> {row id: {n: timer} | Exception}
    dists: tuple = ()                 # distributions whose versions to record


@dataclass
class Context:
    """What every source's setup gets."""
    device: str = "cuda"
    params: tuple = (4, 16)
    batch: int = 256            # launches between two (untimed) synchronisations
    inflight: int = 10_000      # launches queued before one synchronisation
    roundtrip: int = 2_000      # launch + synchronise pairs per sample
    check: bool = True          # verify quicklaunch's and C's launches compute right
    info: dict = field(default_factory=dict)   # facts sources report (JSON "checks")


@dataclass
class Row:
    id: str
    name: str
    source: str
    table: str = LAUNCH
    note: str = ""
    status: str = OK
    reason: str = ""
    iters: dict = field(default_factory=dict)       # n -> launches per sample
    timers: dict = field(default_factory=dict, repr=False)
    samples: dict = field(default_factory=dict)     # n -> [ns per launch]
    cells: dict = field(default_factory=dict)       # n -> why there is no figure

    def median(self, n):
        values = self.samples.get(n)
        return statistics.median(values) if values else None

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "source": self.source, "table": self.table,
                "note": self.note, "status": self.status, "reason": self.reason,
                "ns": {str(n): self.median(n) for n in sorted(set(self.samples) | set(self.cells))},
                "cells": {str(n): why for n, why in self.cells.items()},
                "iters": {str(n): it for n, it in self.iters.items()},
                "samples": {str(n): v for n, v in self.samples.items()}}

    @classmethod
    def from_json(cls, d: dict) -> "Row":
        row = cls(d["id"], d["name"], d["source"], d.get("table", LAUNCH), d.get("note", ""),
                  d.get("status", OK), d.get("reason", ""))
        row.iters = {int(n): v for n, v in d.get("iters", {}).items()}
        row.samples = {int(n): list(v) for n, v in d.get("samples", {}).items()}
        row.cells = {int(n): v for n, v in d.get("cells", {}).items()}
        return row


def describe(exc: BaseException, limit: int = 400) -> tuple[str, str]:
    """(status, reason) for an exception raised while setting up or timing."""
    if isinstance(exc, NotApplicable):
        return SKIPPED, f"n/a: {exc}"
    if isinstance(exc, Skip):
        return SKIPPED, str(exc)
    text = " ".join(str(exc).split()) or repr(exc)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    if isinstance(exc, ImportError):
        return SKIPPED, f"not importable ({type(exc).__name__}: {text})"
    return ERROR, f"{type(exc).__name__}: {text}"


def load_sources(ref: str) -> list[Source]:
    """``module:attribute`` naming a list of Sources."""
    module, _, attr = ref.partition(":")
    return list(getattr(importlib.import_module(module), attr or "SOURCES"))

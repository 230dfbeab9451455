"""Devices: where kernels run. ``ql.device("cpu")``, ``ql.device()``.

A device is a name, an id and the backend that drives it (the interface in
backends/base.py). It carries what the launcher needs once per kernel (the
backend's launch entry, the id buffers are tagged with, its limits) and
nothing that is looked up per call. Which kinds exist is the registry's
business (backends/__init__.py); nothing here knows one kind from another.
"""
from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field

from .backends import REGISTRY, entry
from .backends.base import Backend, Limits
from .errors import DeviceError

__all__ = ["Device", "Limits", "device", "default_device"]


@dataclass(frozen=True, eq=False)
class Device:
    """A device kernels can be compiled for and launched on."""

    id: int                        # tags buffers; compared by the launcher
    backend: Backend = field(repr=False)

    @property
    def kind(self) -> str:
        return self.backend.kind

    @property
    def ordinal(self) -> int:
        return self.backend.ordinal

    @property
    def name(self) -> str:
        found = entry(self.kind)
        return self.kind if found and found[1].single else f"{self.kind}:{self.ordinal}"

    @property
    def description(self) -> str:
        return self.backend.description

    @property
    def limits(self) -> Limits:
        return self.backend.limits

    @property
    def host_memory(self) -> bool:
        return self.backend.host_memory

    @property
    def arch(self) -> str | None:
        """The GPU architecture ("sm_90", "gfx90a"); None for the CPU."""
        return self.backend.arch

    def synchronize(self) -> None:
        """Waits for all work queued on this device (every stream); raises
        the first failure of queued work as LaunchError."""
        from .capture import capture_check
        capture_check(f"{self.name}.synchronize()")
        self.backend.stream_ops().device_synchronize()

    def __repr__(self) -> str:
        return f"<quicklaunch.Device {self.name}: {self.description}>"


_devices: dict[str, Device] = {}
_lock = threading.Lock()


def _known() -> str:
    names = [f"'{e.kind}'" + ("" if e.single else f", '{e.kind}:N'") for e in REGISTRY]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _parse(spec: str) -> tuple[str, int]:
    kind, _, ordinal = spec.strip().lower().partition(":")
    if ordinal:
        if not ordinal.isdigit():
            raise DeviceError(f"device {spec!r}: the ordinal after ':' must be a "
                              "non-negative int, as in 'cuda:1'")
        return kind, int(ordinal)
    return kind, 0


def _open(spec: str, kind: str, ordinal: int) -> Device:
    found = entry(kind)
    if found is None:
        raise DeviceError(f"unknown device {spec!r}; use {_known()}")
    index, row = found
    if row.single and ordinal != 0:
        raise DeviceError(f"device {spec!r}: there is one {kind.upper()} device, '{kind}'")
    backend = importlib.import_module(row.module).open(ordinal)
    return Device(index << 8 | ordinal, backend)


def device(spec: "str | Device | None" = None) -> Device:
    """The device named by ``spec`` ("cpu", "cuda", "cuda:1", "hip", "hip:1"), or the
    default ($QUICKLAUNCH_DEVICE, else the first usable GPU, else the CPU)."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        raise DeviceError(f"a device is named by a string such as 'cpu' or 'cuda:0', "
                          f"got {type(spec).__name__}")
    kind, ordinal = _parse(spec)
    key = f"{kind}:{ordinal}"
    dev = _devices.get(key)
    if dev is None:
        with _lock:
            dev = _devices.get(key)
            if dev is None:
                dev = _devices[key] = _open(spec, kind, ordinal)
    return dev


_default_probe: list[str] = []


def _usable_default() -> str:
    """The first default row whose device is usable, else "cpu"; probed
    once per process."""
    if not _default_probe:
        chosen = "cpu"
        for row in REGISTRY:
            if row.default and importlib.import_module(row.module).usable():
                chosen = row.kind
                break
        _default_probe.append(chosen)
    return _default_probe[0]


def default_device() -> Device:
    """``$QUICKLAUNCH_DEVICE`` if set, else the first usable GPU, else the CPU;
    under MPI, the node-local rank's GPU or share of the cores (_rank_spec)."""
    spec = os.environ.get("QUICKLAUNCH_DEVICE") or _rank_spec()
    return device(spec)


_rank_choice: dict[str, str] = {}   # default kind -> this process's spec


def _rank_spec() -> str:
    """The default device's spec for this process, chosen once per default
    kind: under MPI ``kind:{local_rank % devices}``, or the CPU pinned to the
    local rank's share of the cores (mpi/local.py; no mpi4py import)."""
    kind = _usable_default()
    spec = _rank_choice.get(kind)
    if spec is None:
        from .mpi import local
        _, row = entry(kind)
        spec = _rank_choice[kind] = local.choose(kind, row.single,
                                                 importlib.import_module(row.module))
    return spec

"""Devices: where kernels run. ``ql.device("cpu")``, ``ql.device()``.

A device carries what the launcher needs once per kernel (its backend's
launch entry, the id buffers are tagged with, its limits) and nothing that is
looked up per call.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from .errors import DeviceError

__all__ = ["Device", "device", "default_device"]

CPU_ID = 0  # device ids: cpu 0, cuda:N 0x100 + N, hip:N 0x200 + N
CUDA_ID = 0x100
HIP_ID = 0x200


@dataclass(frozen=True, eq=False)
class Limits:
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_per_block: int = 48 * 1024
    warp_size: int = 32


@dataclass(frozen=True, eq=False)
class Device:
    """A device kernels can be compiled for and launched on."""

    kind: str                      # "cpu", "cuda", "hip"
    ordinal: int
    id: int                        # tags buffers; compared by the launcher
    description: str
    limits: Limits = field(default_factory=Limits)
    host_memory: bool = False      # NumPy arrays are this device's memory
    backend: object = field(default=None, repr=False)  # the GPU backend's state

    @property
    def name(self) -> str:
        return self.kind if self.kind == "cpu" else f"{self.kind}:{self.ordinal}"

    @property
    def arch(self) -> str | None:
        """The GPU architecture ("sm_90"); None for the CPU."""
        return getattr(self.backend, "arch", None)

    def synchronize(self) -> None:
        """Waits for all work queued on this device (every stream); raises
        the first failure of queued work as LaunchError."""
        from .streams import _capture_check, ops
        _capture_check(f"{self.name}.synchronize()")
        if self.kind in ("cpu", "cuda", "hip"):  # failures of queued work raise LaunchError
            ops(self).device_synchronize()
        elif self.backend is not None:
            self.backend.synchronize()

    def __repr__(self) -> str:
        return f"<quicklaunch.Device {self.name}: {self.description}>"


def _cpu_device() -> Device:
    from .backends.cpu import runtime
    n = runtime.threads()
    return Device("cpu", 0, CPU_ID, f"host CPU, {n} worker thread{'s' if n != 1 else ''}",
                  host_memory=True)


_devices: dict[str, Device] = {}
_lock = threading.Lock()


def _parse(spec: str) -> tuple[str, int]:
    kind, _, ordinal = spec.strip().lower().partition(":")
    if ordinal:
        if not ordinal.isdigit():
            raise DeviceError(f"device {spec!r}: the ordinal after ':' must be a "
                              "non-negative int, as in 'cuda:1'")
        return kind, int(ordinal)
    return kind, 0


_gpu_probe: list[str | None] = []


def _usable_gpu() -> str | None:
    """"cuda" when a CUDA driver opens and reports a device, else None;
    probed once per process."""
    if not _gpu_probe:
        from .backends.cuda import driver
        _gpu_probe.append("cuda" if driver.available() else None)
    return _gpu_probe[0]


def device(spec: "str | Device | None" = None) -> Device:
    """The device named by ``spec`` ("cpu", "cuda", "cuda:1", "hip", "hip:1"), or the
    default ($QUICKLAUNCH_DEVICE, else the first CUDA GPU, else the CPU)."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        raise DeviceError(f"a device is named by a string such as 'cpu' or 'cuda:0', "
                          f"got {type(spec).__name__}")
    kind, ordinal = _parse(spec)
    key = f"{kind}:{ordinal}"
    with _lock:
        dev = _devices.get(key)
        if dev is None:
            if kind == "cpu":
                if ordinal != 0:
                    raise DeviceError(f"device {spec!r}: there is one CPU device, 'cpu'")
                dev = _cpu_device()
            elif kind == "cuda":
                from .backends.cuda.device import open_device
                dev = open_device(ordinal, CUDA_ID + ordinal)
            elif kind == "hip":
                from .backends.hip.device import open_device as open_hip
                dev = open_hip(ordinal, HIP_ID + ordinal)
            else:
                raise DeviceError(f"unknown device {spec!r}; use 'cpu', 'cuda', 'cuda:N', "
                                  f"'hip' or 'hip:N'")
            _devices[key] = dev
    return dev


def default_device() -> Device:
    """``$QUICKLAUNCH_DEVICE`` if set, else the first usable GPU, else the CPU."""
    spec = os.environ.get("QUICKLAUNCH_DEVICE") or _usable_gpu() or "cpu"
    return device(spec)

"""The device backend interface: what every device (cpu/, cuda/, hip/, and
any new one) implements, and the records it hands back.

A backend is the state of one opened device. ``quicklaunch.Device`` holds
one and asks it, never which kind it is:

* compile a source into a ``ModuleImage`` (its ``KernelImage`` rows: name,
  lowered name, parameters with their kinds, handle, source line), loaded;
* the launch entry the C fast path calls (``cuLaunchKernel``'s shape), the
  launch size under which the caller's thread runs the kernel itself, and
  the hook that turns a failed launch's status into an exception;
* allocation and copies of device memory (host-memory devices allocate with
  NumPy in ``quicklaunch.memory`` and never see these calls);
* globals, stream/event/graph operations, the DLPack device, limits.

``backends/__init__.py`` is the registry: one line per device kind. Opening
``ql.device("kind:N")`` imports that line's module and calls its
``open(ordinal)``, which returns a ``Backend`` or raises ``DeviceError``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

__all__ = ["Limits", "ParamImage", "KernelImage", "ModuleImage", "StreamOps", "Backend"]


@dataclass(frozen=True, eq=False)
class Limits:
    """What a launch may ask of a device; checked by the launcher once per
    configuration."""
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_per_block: int = 48 * 1024
    warp_size: int = 32


@dataclass(frozen=True)
class ParamImage:
    """One parameter as the compiler reflected it: the name and C type from
    the source, size, alignment and kind code (``quicklaunch.kinds``)."""
    name: str
    ctype: str
    size: int
    align: int
    kind: int


@dataclass(frozen=True)
class KernelImage:
    """One launchable kernel of a loaded module."""
    name: str                      # the name expression ("saxpy", "add<float>")
    lowered_name: str              # the symbol the loader knows (mangled for C++)
    params: tuple[ParamImage, ...]
    handle: int                    # what the launch entry takes as its function
    source_line: int = 1           # the __global__ declaration's line in the source
    attributes: dict = field(default_factory=dict)   # e.g. the CPU's {"tier", "tier_reason"}


@dataclass
class ModuleImage:
    """A compiled and loaded module: its kernels plus what keeps it loaded."""
    kernels: tuple[KernelImage, ...]
    library: Any                   # a loaded library or module handle
    templates: frozenset[str] | None = None   # template kernels; None: parse the source
    path: str | None = None        # the shared object, where there is a file
    program: Any = None            # the compiler's output (ptx, cubin, code object)
    options: tuple[str, ...] = ()  # the options the compiler was given in the end
    extra: dict = field(default_factory=dict)


class StreamOps(Protocol):
    """Streams, events and graphs of one device; handles are ints, 0 is the
    default stream. Failures of queued work raise ``LaunchError``."""

    def stream_create(self) -> int: ...
    def stream_destroy(self, s: int) -> None: ...
    def stream_synchronize(self, s: int) -> None: ...
    def stream_query(self, s: int) -> bool: ...
    def stream_wait_event(self, s: int, e: int) -> None: ...
    def device_synchronize(self) -> None: ...
    def event_create(self, timing: bool) -> int: ...
    def event_destroy(self, e: int) -> None: ...
    def event_record(self, e: int, s: int) -> None: ...
    def event_synchronize(self, e: int) -> None: ...
    def event_query(self, e: int) -> bool: ...
    def event_elapsed_ms(self, start: int, end: int) -> float: ...
    def graph_create(self, n: int) -> int: ...
    def graph_destroy(self, g: int) -> None: ...
    def graph_set_launch(self, g: int, i: int, kernel, grid, block, shared: int,
                         block_bytes) -> None: ...
    def graph_set_wait(self, g: int, i: int, e: int) -> None: ...
    def graph_launch(self, g: int, s: int) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """One opened device. Attributes are fixed when the device opens."""

    kind: str                       # the registry's name: "cpu", "cuda", "hip"
    ordinal: int
    description: str                # one line for ql.device() reprs and `quicklaunch info`
    arch: str | None                # "sm_90", "gfx90a"; None for the CPU
    limits: Limits
    host_memory: bool               # NumPy arrays are this device's memory
    dlpack_device: tuple[int, int]  # (DLPack device type, ordinal)
    cuda_array_interface: bool      # its buffers export __cuda_array_interface__
    cuda_stream_protocol: bool      # its streams export __cuda_stream__
    launch_entry: int               # address of the cuLaunchKernel-shaped entry
    plan_entry: int                 # address of its planner (_launch_core.h's ql_plan_fn), or 0
    plan_direct_entry: int          # its direct launches' planner (ql_plan_direct_fn), or 0
    entry_library: str              # the shared library that exports it (C baselines)
    inline_threads: int             # launches up to this size keep the GIL
    error_hook: Callable[[Any, int], BaseException | None]

    # ---------------------------------------------------------------- code
    def compile(self, source: str, options: tuple[str, ...],
                name_expressions: tuple[str, ...], debug: bool, origin: str,
                where: tuple[str, int]) -> ModuleImage:
        """Compiles and loads ``source``; raises ``CompileError``. ``origin``
        ends messages (where ql.compile was called); ``where`` is the file and
        line the source starts at, for builds that map lines back."""
        ...

    def global_address(self, image: ModuleImage, name: str,
                       symbol: str) -> tuple[int, int] | None:
        """(address, bytes) of a module-scope variable (``name`` as written,
        ``symbol`` its mangled name), or None when the module has none."""
        ...

    # -------------------------------------------------------------- memory
    def allocate(self, nbytes: int) -> Any:
        """Device memory of ``nbytes``: an object with ``.ptr`` that frees it
        when collected."""
        ...

    def to_host(self, out: np.ndarray, ptr: int) -> None: ...
    def to_device(self, ptr: int, src: np.ndarray) -> None: ...
    def fill_bytes(self, ptr: int, value: int, nbytes: int) -> None: ...

    def pointer_owner(self, address: int) -> int | None:
        """The ordinal of the device that owns ``address``, None when it is no
        device's memory (debug launches only: one driver query)."""
        ...

    # ------------------------------------------------------ streams, sync
    def stream_ops(self) -> StreamOps:
        """The device's stream, event and graph operations (made once)."""
        ...

    def export_sync(self, stream: int | None) -> None:
        """Makes this device's default-stream work visible to a consumer that
        will use exported memory on ``stream`` (DLPack's stream argument)."""
        ...

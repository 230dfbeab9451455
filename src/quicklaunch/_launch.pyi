"""Type stubs for the C fast path (src/quicklaunch/_launch.c)."""
from typing import Any, Callable, Sequence

MAX_PARAMS: int
MAX_PARAM_BYTES: int

Dims = int | tuple[int] | tuple[int, int] | tuple[int, int, int]
LaunchFunction = Callable[..., None]
"""A builtin method named after the kernel; its ``__self__`` is the Launcher."""

class KernelCore:
    def __init__(
        self,
        *,
        name: str,
        param_names: tuple[str, ...],
        codes: bytes,
        sizes: Sequence[int],
        aligns: Sequence[int],
        launch: int,
        func: int,
        device_id: int,
        device_name: str,
        host_memory: bool,
        inline_threads: int,
        max_block: tuple[int, int, int],
        max_grid: tuple[int, int, int],
        max_threads: int,
        max_shared: int,
        error_hook: Callable[[Any, int], BaseException | None],
        dlpack_device: tuple[int, int] = (1, 0),
        defaults: tuple[Any, ...] = (),
        elems: Any = None,
        plan: int = 0,
    ) -> None:
        """``device_id`` is the opaque tag ql buffers of the device carry;
        ``dlpack_device`` is the device as DLPack names it (type, ordinal:
        kDLCPU 1, kDLCUDA 2, kDLROCM 10), which other libraries' arrays are
        checked against. ``defaults`` are the values of the last
        ``len(defaults)`` parameters for launches that leave them out (an
        exception instance among them is raised, as its type, instead).
        ``plan`` is the address of the backend's planner (``ql_plan_fn``,
        0: none): each Launcher asks it once to check its configuration,
        and a planned Launcher's calls pass only the parameters.
        ``elems``: per parameter None (any element) or (kind, size, lanes,
        expect text, NumPy spelling), from ``quicklaunch.elements``."""
    def __getitem__(self, config: tuple[Any, ...]) -> LaunchFunction: ...
    def configure(self, grid: Dims, block: Dims, shared_mem: int = 0,
                  stream: Any = None, *, cooperative: bool = False) -> LaunchFunction: ...
    def launch(self, grid: Dims, block: Dims, *args: Any, shared_mem: int = 0,
               stream: Any = None) -> None: ...
    def _layout(self) -> tuple[tuple[int, int, int], ...]: ...
    def _pack(self, *args: Any) -> bytes: ...

class Launcher:
    @property
    def kernel(self) -> KernelCore: ...
    @property
    def grid(self) -> tuple[int, int, int]: ...
    @property
    def block(self) -> tuple[int, int, int]: ...
    @property
    def shared_mem(self) -> int: ...
    @property
    def stream(self) -> Any: ...
    @property
    def planned(self) -> bool: ...
    def __call__(self, *args: Any) -> None: ...

class Buffer:
    def __init__(self, ptr: int, nbytes: int, device_id: int, readonly: bool = False,
                 owner: Any = None, *, dtype: Any = None) -> None: ...
    @property
    def ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device_id(self) -> int: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def owner(self) -> Any: ...

class TextureBase:
    """A texture object's handle and device (_launch_texture.h)."""
    def __init__(self, handle: int, device_id: int, device_name: str) -> None: ...
    @property
    def handle(self) -> int: ...
    @property
    def device_id(self) -> int: ...
    def _release(self) -> int: ...

def _array_address(array: Any) -> int: ...
def _dlpack_capsule(ptr: int, shape: tuple[int, ...], code: int, bits: int, device_type: int,
                    device_id: int, owner: Any) -> Any: ...
def _stub_tls_offset() -> int: ...
def _set_capture_hook(hook: Callable[..., Any] | None) -> Callable[..., Any] | None: ...
def _set_trace_hook(hook: Callable[..., Any] | None) -> Callable[..., Any] | None: ...
def _register_errors(launch_error: type, type_error: type, value_error: type,
                     overflow_error: type) -> None: ...

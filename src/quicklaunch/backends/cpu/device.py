"""The CPU as a quicklaunch device: the backend interface (backends/base.py)
over the host compiler (compiler.py), the C runtime (runtime.py) and its
streams (streams.py). Its memory is host memory: NumPy allocates it."""
from __future__ import annotations

import functools

from ...errors import DeviceError
from ..base import KernelImage, Limits, ModuleImage, ParamImage
from . import runtime

__all__ = ["CpuBackend", "open", "usable"]

DL_CPU = 1


class CpuBackend:
    """The one CPU device. Kernels run on the runtime's worker pool."""

    kind = "cpu"
    ordinal = 0
    arch = None
    host_memory = True
    dlpack_device = (DL_CPU, 0)
    cuda_array_interface = False
    cuda_stream_protocol = False

    def __init__(self):
        n = runtime.threads()
        self.description = f"host CPU, {n} worker thread{'s' if n != 1 else ''}"
        self.limits = Limits()
        self.launch_entry = runtime.launch_entry()
        self.plan_entry = runtime.plan_entry()
        self.plan_direct_entry = runtime.plan_direct_entry()
        self.entry_library = str(runtime.library_path())
        self.inline_threads = runtime.inline_threads()
        self.error_hook = runtime.error_hook

    # ---------------------------------------------------------------- code
    def compile(self, source, options, name_expressions, debug, origin, where) -> ModuleImage:
        from ...errors import CompileError
        from . import compiler
        built = compiler.build(source, options, name_expressions, debug, origin, *where)
        lines = built.meta.get("lines", {})
        kernels = []
        for lk in built.kernels:
            names = built.meta["params"].get(lk.expr)
            if names is None or len(names) != len(lk.params):
                raise CompileError(
                    f"kernel '{lk.expr}': the compiler reports {len(lk.params)} parameters "
                    f"but the source declares {len(names) if names else 'no such kernel'}"
                    f"{origin}", source=source, options=options)
            params = tuple(ParamImage(name, ctype, size, align, kind)
                           for (name, ctype), (size, align, kind) in zip(names, lk.params))
            tier = built.meta.get("tier", {}).get(lk.expr) or \
                (["loop", ""] if lk.tier == 1 else ["fibers", ""])
            kernels.append(KernelImage(lk.expr, lk.symbol or lk.expr, params, lk.handle,
                                       lines.get(lk.expr, 1),
                                       {"tier": tier[0], "tier_reason": tier[1]}))
        return ModuleImage(tuple(kernels), built.library, frozenset(built.meta["templates"]),
                           path=built.path, options=options,
                           extra={"log": str(built.meta.get("log") or "")})

    def global_address(self, image, name, symbol):
        from .loader import global_variable
        return global_variable(image.library, image.path, name)

    def launch_cooperative(self, kernel, grid, block, shared, stream, params) -> None:
        """Every block at once, each on a thread of its own (cooperative.c),
        after the work queued before it (the stream's, or every stream's for
        the default stream); returns when the launch is over."""
        if stream:
            self._ops.stream_synchronize(stream)
        else:
            self._ops.device_synchronize()
        runtime.launch_cooperative(kernel, grid, block, shared, params.address)

    # -------------------------------------------------------------- memory
    def _no_device_memory(self, *args):
        raise DeviceError("the CPU device's memory is host memory: NumPy allocates and "
                          "copies it")

    allocate = to_host = to_device = fill_bytes = _no_device_memory

    def pointer_owner(self, address: int) -> int | None:
        return None

    # ------------------------------------------------------ streams, sync
    @functools.cached_property
    def _ops(self):
        from .streams import CpuStreamOps
        return CpuStreamOps()

    def stream_ops(self):
        return self._ops

    def export_sync(self, stream) -> None:
        """Work on the default stream has finished by the time a launch
        returns, unless it was queued on a ql.Stream: nothing to wait for."""


_backend: list[CpuBackend] = []


def open(ordinal: int) -> CpuBackend:   # noqa: A001 - the registry's name
    if ordinal != 0:
        raise DeviceError(f"device 'cpu:{ordinal}': there is one CPU device, 'cpu'")
    if not _backend:
        _backend.append(CpuBackend())
    return _backend[0]


def usable() -> bool:
    return True



def _memcheck_line(tc, c) -> str:
    from ...errors import CompileError
    try:
        return "debug + " + " ".join(tc.memcheck_flags(c))
    except CompileError as exc:
        return f"unavailable: {exc}"


def _flag_lines(tc, c, indent: str = "") -> list[tuple[str, str]]:
    """The flags the toolchain chooses for compiler ``c`` (probed once per
    process: common, release, debug, memcheck)."""
    cxx = " ".join(c.argv[1:])
    return [(indent + "flags", " ".join((*c.argv[1:], *tc.common_flags(c)))
             + (f" (from $CXX: {cxx})" if cxx else "")),
            (indent + "release", " ".join(tc.release_flags(c))),
            (indent + "debug", " ".join(tc.debug_flags(c))),
            (indent + "memcheck", _memcheck_line(tc, c))]


def _other_compilers(tc, used) -> list[tuple[str, str]]:
    """g++ and clang++ where installed and not the one in use: what each
    would be handed with CXX set to it."""
    import shutil
    from ...errors import CompileError
    out = []
    for name in ("g++", "clang++"):
        if shutil.which(name) is None:
            continue
        try:
            c = tc._probe(name)
        except CompileError:
            continue
        if c.path == used.path and c.argv[1:] == used.argv[1:]:
            continue
        out.append((f"CXX={name}", f"{c.path}: {c.version} (not in use)"))
        out += _flag_lines(tc, c, "  ")
    return out


def toolchain() -> list[tuple[str, str]]:
    """`quicklaunch info`'s compiler lines for this device: the compiler in
    use with the flags probed for it and the target, then each other
    installed compiler with its flags."""
    from ...errors import CompileError
    from . import toolchain as tc
    try:
        c = tc.find_compiler()
    except CompileError as exc:
        return [("C++", f"none: {exc}")]
    return [("C++", f"{c.path}: {c.version}"), *_flag_lines(tc, c),
            ("target", tc.resolved_target(c) + " (in every CPU cache key)"),
            *_other_compilers(tc, c)]

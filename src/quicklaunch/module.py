"""The Python face: ``compile()``, ``Module`` and ``Kernel``.

A Kernel *is* the launcher's KernelCore (a C type) with names and metadata
added, so ``k[grid, block]``, ``k.configure`` and ``k.launch`` go straight to C.
"""
from __future__ import annotations

import os
import sys
from typing import NamedTuple

from . import _launch
from .devices import Device, device as get_device
from .errors import CompileError, QuicklaunchError
from .signature import normalize_name

__all__ = ["compile", "Module", "Kernel", "Param", "KernelNotFoundError"]

KIND_NAMES = {1: "pointer", 2: "const pointer", 3: "int8", 4: "int16", 5: "int32",
              6: "int64", 7: "uint8", 8: "uint16", 9: "uint32", 10: "uint64", 11: "half",
              12: "bfloat16", 13: "float32", 14: "float64", 15: "bool", 16: "struct",
              17: "invalid"}


class KernelNotFoundError(QuicklaunchError, KeyError):
    """A kernel name that the module does not have."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Param(NamedTuple):
    """One kernel parameter: name and C type text from the source; size,
    alignment and kind from the compiler."""
    name: str
    ctype: str
    size: int
    align: int
    kind: str


class Kernel(_launch.KernelCore):
    """A compiled kernel. Launch it with ``k[grid, block](*args)``,
    ``k.configure(grid, block)(*args)`` or ``k.launch(grid, block, *args)``."""

    def __init__(self, module: "Module", name: str, lowered_name: str, params: tuple[Param, ...],
                 codes: bytes, handle: int, launch_entry: int, inline_threads: int,
                 error_hook):
        dev = module.device
        lim = dev.limits
        super().__init__(
            name=name, param_names=tuple(p.name for p in params), codes=codes,
            sizes=[p.size for p in params], aligns=[p.align for p in params],
            launch=launch_entry, func=handle, device_id=dev.id, device_name=dev.name,
            host_memory=dev.host_memory, inline_threads=inline_threads,
            max_block=lim.max_block_dims, max_grid=lim.max_grid_dims,
            max_threads=lim.max_threads_per_block, max_shared=lim.max_shared_per_block,
            error_hook=error_hook)
        self.name = name
        self.lowered_name = lowered_name
        self._handle = handle
        self.params = params
        self.module = module
        self.device = dev

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.name}' needs a launch configuration: call "
                        f"k[grid, block](...), k.configure(grid, block)(...) or "
                        f"k.launch(grid, block, ...)")

    def __repr__(self) -> str:
        sig = ", ".join(p.ctype + ("" if p.ctype.endswith(("*", "&")) else " ") + p.name
                        for p in self.params)
        return f"<quicklaunch.Kernel {self.name}({sig}) on {self.device.name}>"


class DebugKernel(Kernel):
    """A kernel of a debug build: every launch goes through a Python function
    named after the kernel (see quicklaunch.debug)."""

    def _stub(self, run):
        from .debug import make_stub, python_location
        file, line = python_location(self.module.source, *self.module._origin,
                                     self._source_line)
        return make_stub(self, run, file, line)

    def __getitem__(self, config):
        stubs = self.__dict__.setdefault("_stubs", {})
        try:
            return stubs[config]
        except (KeyError, TypeError):
            stub = self._stub(super().__getitem__(config))
        try:
            stubs[config] = stub
        except TypeError:
            pass  # an unhashable stream object: not cached
        return stub

    def configure(self, grid, block, shared_mem=0, stream=None):
        return self._stub(super().configure(grid, block, shared_mem, stream))

    def launch(self, grid, block, *args, shared_mem=0, stream=None):
        return self.configure(grid, block, shared_mem, stream)(*args)


class Module:
    """Kernels compiled together from one source, for one device."""

    def __init__(self, device: Device, source: str, options: tuple[str, ...]):
        self.device = device
        self.source = source
        self.options = options
        self._kernels: dict[str, Kernel] = {}
        self._aliases: dict[str, str] = {}
        self._templates: set[str] = set()
        self._origin = ("<unknown>", 0)  # where ql.compile was called
        self.debug = False
        self._library = None   # keeps the shared object loaded
        self._path = None      # the shared object's file

    @property
    def kernels(self) -> list[str]:
        """Names of the kernels this module can launch."""
        return list(self._kernels)

    def get_kernel(self, name: str) -> Kernel:
        """A kernel by plain, qualified or mangled name, or name expression."""
        if not isinstance(name, str):
            raise TypeError(f"kernel names are strings, got {type(name).__name__}")
        key = normalize_name(name)
        k = self._kernels.get(key) or self._kernels.get(self._aliases.get(key, ""))
        if k is not None:
            return k
        base = key.split("<")[0]
        if base in self._templates or base in {t.rsplit("::", 1)[-1] for t in self._templates}:
            if "<" in key:
                hint = (f"'{name}' was not instantiated: add it to name_expressions in "
                        f"ql.compile")
            else:
                hint = (f"'{name}' is a template: pass name_expressions=['{key}<...>'] (with "
                        f"the template arguments you need) to ql.compile and get it by that "
                        f"expression")
            raise KernelNotFoundError(f"kernel {hint}; available: {self.kernels}")
        raise KernelNotFoundError(f"no kernel '{name}' in this module; available: "
                                  f"{self.kernels or 'none (the source has no __global__ function)'}")

    def get_global(self, name: str, dtype=None, shape=None):
        """A ``__device__`` or ``__constant__`` variable as a ``ql.Buffer``: a
        zero-copy view (``.numpy()``) that kernels of this module see.

        The dtype and shape come from the declaration when it is a plain C
        scalar type (``__constant__ float coef[5]``); pass ``dtype`` (and
        ``shape``) for anything else, or get the raw bytes (uint8)."""
        from .globals import global_buffer
        return global_buffer(self, name, dtype, shape)

    def __getitem__(self, name: str) -> Kernel:
        return self.get_kernel(name)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.get_kernel(name)
        except KernelNotFoundError as exc:
            raise AttributeError(str(exc)) from None

    def __contains__(self, name: str) -> bool:
        try:
            self.get_kernel(name)
            return True
        except KernelNotFoundError:
            return False

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self._kernels if k.isidentifier()})

    def __repr__(self) -> str:
        return f"<quicklaunch.Module on {self.device.name}: {', '.join(self.kernels)}>"


def _origin() -> tuple[str, int]:
    """File and line of the first caller outside quicklaunch."""
    here = os.path.dirname(__file__)
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(here):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("<unknown>", 0)


def _check_options(options) -> tuple[str, ...]:
    if isinstance(options, str):
        options = (options,)
    options = tuple(options)
    for opt in options:
        if not isinstance(opt, str):
            raise TypeError(f"compiler options are strings, got {opt!r}")
    return options


def compile(source: str, device=None, options=(), name_expressions=(), debug=None) -> Module:
    """Compiles CUDA C++ ``source`` for ``device`` (default: ``ql.device()``).

    ``options`` are passed to the device's compiler; ``name_expressions``
    instantiate template kernels ("add<float>") so ``get_kernel`` finds them.
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of CUDA C++, got {type(source).__name__}")
    dev = get_device(device)
    options = _check_options(options)
    if isinstance(name_expressions, str):
        name_expressions = (name_expressions,)
    name_expressions = tuple(name_expressions)
    if debug is None:
        debug = os.environ.get("QUICKLAUNCH_DEBUG", "") not in ("", "0")
    file, line = _origin()
    origin = f" (ql.compile called at {file}:{line})"
    if dev.kind == "cpu":
        where = ("kernel.cu", 1)
        if debug:  # compiler messages and gdb lines point into the Python file
            from .debug import source_start
            start = source_start(source, file, line)
            if start is not None:
                where = (file, start)
        mod = _compile_cpu(dev, source, options, name_expressions, bool(debug), origin, where)
        mod._origin = (file, line)
        return mod
    if dev.kind == "cuda":
        mod = _compile_cuda(dev, source, options, name_expressions, bool(debug), origin)
        mod._origin = (file, line)
        return mod
    if dev.kind == "hip":
        mod = _compile_hip(dev, source, options, name_expressions, bool(debug), origin)
        mod._origin = (file, line)
        return mod
    raise CompileError(f"no compiler for device {dev.name}")


def _add_kernel(mod: Module, expr: str, symbol: str | None, k: Kernel) -> None:
    """Registers a kernel under its expression and the names it answers to."""
    mod._kernels[expr] = k
    if normalize_name(expr) != expr:
        mod._aliases[normalize_name(expr)] = expr
    if symbol and symbol != expr:
        mod._aliases[symbol] = expr
    short = expr.rsplit("::", 1)[-1]
    if short != expr and "<" not in expr:
        mod._aliases.setdefault(short, expr)


def _compile_cuda(dev, source, options, name_expressions, debug, origin) -> Module:
    """NVRTC for the device's architecture, then the driver loads the cubin
    (PTX, for the driver to finish, when NVRTC predates the GPU)."""
    from .backends.cuda import nvrtc, program
    from .signature import parse_kernels
    backend = dev.backend
    if debug:
        options = (*options, "-G")
    exprs = tuple(" ".join(e.split()) for e in name_expressions)
    prog = program.compile(source, arch=nvrtc.arch_for(backend.capability), options=options,
                           name_expressions=exprs)
    image = prog.cubin if prog.cubin is not None else prog.ptx.encode()
    mod = Module(dev, source, options)
    mod.debug = debug
    mod._library = backend.load_module(image, f"{len(prog.kernels)} kernels for {prog.arch}")
    mod._program = prog
    try:
        mod._templates = {d.name for d in parse_kernels(source) if d.template is not None}
    except ValueError:
        mod._templates = set()
    hook = backend.error_hook
    for expr, info in prog.kernels.items():
        params = tuple(Param(p.name, p.ctype, p.size, p.align, KIND_NAMES.get(p.kind, "?"))
                       for p in info.params)
        bad = [p.name for p in params if p.kind == "invalid"]
        if bad:
            raise CompileError(f"kernel '{expr}': parameter(s) {bad} are references; a "
                               f"kernel takes values and pointers{origin}", source=source,
                               options=options)
        codes = bytes(p.kind for p in info.params)
        handle = backend.function(mod._library, info.lowered_name)
        cls = DebugKernel if debug else Kernel
        # inline_threads: never release the GIL around cuLaunchKernel, which
        # only queues the launch (about 2 us); a release would cost more.
        k = cls(mod, expr, info.lowered_name, params, codes, handle,
                backend.driver.launch_address, 2**63, hook)
        k._source_line = getattr(info, "line", 1)
        _add_kernel(mod, expr, info.lowered_name, k)
    return mod


def _compile_hip(dev, source, options, name_expressions, debug, origin) -> Module:
    """hiprtc for the GPU's architecture, then the HIP runtime loads the code
    object; launches go through hipModuleLaunchKernel (cuLaunchKernel's shape)."""
    from .backends.hip import program
    from .signature import parse_kernels
    backend = dev.backend
    if debug:
        options = (*options, "-O0", "-g")
    exprs = tuple(" ".join(e.split()) for e in name_expressions)
    prog = program.compile(source, arch=backend.arch, options=options, name_expressions=exprs)
    if prog.wave_size != dev.limits.warp_size:
        raise CompileError(f"the code was compiled for wave{prog.wave_size} but {dev.name} "
                           f"runs wave{dev.limits.warp_size}; drop -mwavefrontsize64 / "
                           f"-mno-wavefrontsize64{origin}", source=source, options=options)
    mod = Module(dev, source, options)
    mod.debug = debug
    mod._library = backend.load_module(prog.code_object,
                                       f"{len(prog.kernels)} kernels for {prog.arch}")
    mod._program = prog
    try:
        mod._templates = {d.name for d in parse_kernels(source) if d.template is not None}
    except ValueError:
        mod._templates = set()
    for expr, info in prog.kernels.items():
        params = tuple(Param(p.name, p.ctype, p.size, p.align, KIND_NAMES.get(p.kind, "?"))
                       for p in info.params)
        bad = [p.name for p in params if p.kind == "invalid"]
        if bad:
            raise CompileError(f"kernel '{expr}': parameter(s) {bad} are references; a "
                               f"kernel takes values and pointers{origin}", source=source,
                               options=options)
        handle = backend.function(mod._library, info.lowered_name)
        cls = DebugKernel if debug else Kernel
        # hipModuleLaunchKernel only queues the launch: keep the GIL, as for CUDA
        k = cls(mod, expr, info.lowered_name, params, bytes(p.kind for p in info.params),
                handle, backend.runtime.launch_address, 2**63, backend.error_hook)
        k._source_line = getattr(info, "line", 1)
        _add_kernel(mod, expr, info.lowered_name, k)
    return mod


def _compile_cpu(dev, source, options, name_expressions, debug, origin,
                 where=("kernel.cu", 1)) -> Module:
    from .backends.cpu import compiler, runtime
    exprs = tuple(" ".join(e.split()) for e in name_expressions)
    built = compiler.build(source, options, exprs, debug, origin, *where)
    mod = Module(dev, source, options)
    mod.debug = debug
    mod._library = built.library
    mod._path = built.path
    mod._templates = set(built.meta["templates"])
    entry, inline, hook = runtime.launch_entry(), runtime.inline_threads(), runtime.error_hook
    for lk in built.kernels:
        names = built.meta["params"].get(lk.expr)
        if names is None or len(names) != len(lk.params):
            raise CompileError(
                f"kernel '{lk.expr}': the compiler reports {len(lk.params)} parameters but "
                f"the source declares {len(names) if names else 'no such kernel'}"
                f"{origin}", source=source, options=options)
        params = tuple(Param(name, ctype, size, align, KIND_NAMES.get(kind, "?"))
                       for (name, ctype), (size, align, kind) in zip(names, lk.params))
        codes = bytes(kind for _, _, kind in lk.params)
        bad = [p.name for p in params if p.kind == "invalid"]
        if bad:
            raise CompileError(f"kernel '{lk.expr}': parameter(s) {bad} are references; a "
                               f"kernel takes values and pointers{origin}", source=source,
                               options=options)
        cls = DebugKernel if debug else Kernel
        k = cls(mod, lk.expr, lk.symbol or lk.expr, params, codes, lk.handle, entry, inline,
                hook)
        k._source_line = built.meta.get("lines", {}).get(lk.expr, 1)
        _add_kernel(mod, lk.expr, lk.symbol, k)
    return mod

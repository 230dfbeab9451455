"""The Python face: ``compile()``, ``Module`` and ``Kernel``.

A Kernel *is* the launcher's KernelCore (a C type) with names and metadata
added, so ``k[grid, block]``, ``k.configure`` and ``k.launch`` go straight to C.
"""
from __future__ import annotations

import os
import sys
from typing import NamedTuple

from . import _launch, kinds
from . import attributes as _attributes
from .devices import Device, device as get_device
from .elements import elements, template_types   # pointers' element types
from .errors import CompileError, LaunchError, QuicklaunchError
from .signature import SignatureError, declared_only, normalize_name, parse_kernels

__all__ = ["compile", "Module", "Kernel", "Param", "KernelNotFoundError"]

KIND_NAMES = kinds.NAMES   # kept for code that read the table here


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
            error_hook=error_hook, dlpack_device=dev.backend.dlpack_device,
            # the backend's planner, for launches through its own entry (not a stub's)
            plan=dev.backend.plan_entry if launch_entry == dev.backend.launch_entry else 0,
            plan_direct=dev.backend.plan_direct_entry
            if launch_entry == dev.backend.launch_entry else 0,
            defaults=(defaults := _defaults(module, name, params)),
            elems=(elems := elements(params,
                                     template_types(getattr(module, "source", None), name))))
        self._elems = elems    # per parameter: the pointee's element, or None (any)
        self.defaults = defaults   # the trailing parameters' defaults (see quicklaunch.defaults)
        self.name = name
        self.lowered_name = lowered_name
        self.handle = handle   # what the device's launch entry takes (CUfunction, ...)
        self.params = params
        self.module = module
        self.device = dev

    # what the driver reports (num_regs, shared_size_bytes, ...): quicklaunch.attributes
    attributes = _attributes.AttributesSlot()

    def max_active_blocks_per_sm(self, block, shared_mem: int = 0) -> int:
        """Blocks of ``block`` threads with ``shared_mem`` bytes of dynamic
        shared memory resident at once on one multiprocessor (the driver's
        occupancy query; the CPU device's meaning: quicklaunch.attributes)."""
        return _attributes.max_active_blocks_per_sm(self, block, shared_mem)

    def _configure_cooperative(self, grid, block, shared_mem, stream):
        """``k.configure(grid, block, shared_mem, stream, cooperative=True)``
        (the C configure hands the keyword here): every block resident at
        once, for kernels that call grid.sync() (quicklaunch.cooperative); a
        grid that cannot be co-resident is refused with a LaunchError that
        gives the limit. Spelled only on configure: k.launch and
        k[grid, block] are the fast path and take no such switch."""
        from .cooperative import CooperativeLauncher
        return CooperativeLauncher(self, grid, block, shared_mem, stream)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel '{self.name}' needs a launch configuration: call "
                        f"k[grid, block](...), k.configure(grid, block)(...) or "
                        f"k.launch(grid, block, ...)")

    def __reduce__(self):
        """Pickles as (module, name): docs/loading.md."""
        return Module.get_kernel, (self.module, self.name)

    def __repr__(self) -> str:
        sig = ", ".join(p.ctype + ("" if p.ctype.endswith(("*", "&")) else " ") + p.name
                        for p in self.params)
        return f"<quicklaunch.Kernel {self.name}({sig}) on {self.device.name}>"


def _defaults(module: "Module", name: str, params: tuple[Param, ...]) -> tuple:
    """The kernel's default arguments for the launcher: Python values, and a
    LaunchError for each default that cannot be evaluated (raised only by a
    launch that leaves that argument out)."""
    from .defaults import Unevaluable, kernel_defaults
    source = getattr(module, "source", None)
    if not source or "=" not in source:
        return ()
    return tuple(
        LaunchError(f"kernel '{name}': the default of parameter '{d.param}' ({d.text}) cannot "
                    f"be evaluated by quicklaunch ({d.why}); pass that argument explicitly")
        if isinstance(d, Unevaluable) else d
        for d in kernel_defaults(source, name, params))


class DebugKernel(Kernel):
    """A kernel of a debug build: every launch goes through a Python function
    named after the kernel (see quicklaunch.debug)."""

    def _stub(self, run):
        from .debug import make_stub, python_location
        file, line = python_location(self.module.source, *self.module._origin,
                                     self._source_line)
        if self.module.memcheck:
            from .backends.cpu.memcheck import checked
            run = checked(self, run)
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

    def configure(self, grid, block, shared_mem=0, stream=None, cooperative=False):
        return self._stub(super().configure(grid, block, shared_mem, stream,
                                            cooperative=cooperative))

    def launch(self, grid, block, *args, shared_mem=0, stream=None):
        return self.configure(grid, block, shared_mem, stream)(*args)


def _declared_only(source) -> dict[str, int]:
    """Kernels `source` only declares (normalized name -> line); {} when it
    cannot be read. For the not-found message: a cold path."""
    try:
        return {normalize_name(n): line
                for n, line in declared_only(parse_kernels(source)).items()}
    except (SignatureError, TypeError):
        return {}


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
        self.memcheck = False
        self._library = None   # keeps the shared object loaded
        self._path = None      # the shared object's file

    @property
    def compile_log(self) -> str:
        """The device compiler's log of this module (its warnings; "" when it
        said nothing, or for a module ql.load made): g++ on the CPU device,
        NVRTC, hiprtc. Kept with the cache entry, so a cache hit has it too."""
        image = getattr(self, "_image", None)
        if image is None:
            return ""
        log = image.extra.get("log") if isinstance(image.extra, dict) else None
        if log is None:
            log = getattr(image.program, "log", None)
        return log if isinstance(log, str) else ""

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
        declared = _declared_only(self.source).get(key)
        if declared is not None:
            raise KernelNotFoundError(
                f"kernel '{name}' is declared (line {declared}) but not defined in this "
                f"source: a kernel defined in another file is compiled with that file (pass "
                f"its source, or #include it); available: {self.kernels}")
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

    def __reduce__(self):
        """Pickles as how to make it again: source, options, name expressions,
        switches and device name, compiled again (a cache hit where the cache
        is shared) where it is unpickled; docs/loading.md."""
        args = getattr(self, "_compile_args", None)
        if args is not None:
            options, exprs, debug, memcheck, stub = args
            state = ("source", self.device.name, self.source, tuple(options), tuple(exprs),
                     bool(debug), bool(memcheck), stub)
        elif getattr(self, "_pickle_state", None) is not None:
            state = self._pickle_state   # set by the maker (quicklaunch.loading)
        else:
            import pickle
            raise pickle.PicklingError(f"{self!r} was not made by ql.compile or ql.load: it "
                                       f"cannot be pickled")
        return Module._unpickle, (state,)

    _rebuilders: dict = {}   # state kind -> maker, for states not made here (ql.load's)
    _unpickled: dict = {}    # state -> weak reference to the module made from it

    @staticmethod
    def _unpickle(state: tuple) -> "Module":
        """One module per distinct pickled state in this process."""
        import weakref
        ref = Module._unpickled.get(state)
        mod = ref() if ref is not None else None
        if mod is None:
            if state[0] == "source":
                _, dev, source, options, exprs, debug, memcheck, stub = state
                mod = compile(source, dev, options, exprs, debug=debug, memcheck=memcheck,
                              stub=stub)
            elif state[0] in Module._rebuilders:
                mod = Module._rebuilders[state[0]](state)
            else:
                import pickle
                raise pickle.UnpicklingError(f"unknown quicklaunch module state {state[0]!r}")
            Module._unpickled[state] = weakref.ref(   # forgotten when the module goes
                mod, lambda _ref, key=state: Module._unpickled.pop(key, None))
        return mod

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


def compile(source: str, device=None, options=(), name_expressions=(), debug=None,
            memcheck=None, stub=None) -> Module:
    """Compiles CUDA C++ ``source`` for ``device`` (default: ``ql.device()``).

    ``options`` are passed to the device's compiler; ``name_expressions``
    instantiate template kernels ("add<float>") so ``get_kernel`` finds them.
    ``stub=True`` (or ``QUICKLAUNCH_STUB=1``; implied by ``debug``) launches
    every kernel through a C host stub named after it, built with the host
    C++ compiler, so plain gdb can ``break saxpy`` (quicklaunch.host_stub).
    ``memcheck=True`` (or ``QUICKLAUNCH_MEMCHECK=1``; CPU device, g++; implies
    ``debug``) checks every load and store of the kernels against the launch's
    buffers before it happens (quicklaunch.backends.cpu.memcheck).
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a str of CUDA C++, got {type(source).__name__}")
    dev = get_device(device)
    options = _check_options(options)
    if isinstance(name_expressions, str):
        name_expressions = (name_expressions,)
    exprs = tuple(" ".join(e.split()) for e in name_expressions)
    if debug is None:
        debug = os.environ.get("QUICKLAUNCH_DEBUG", "") not in ("", "0")
    debug = bool(debug)
    from .backends.cpu.memcheck import requested
    memcheck = requested(memcheck, dev)   # implies debug (backends/cpu/memcheck.py)
    debug = debug or memcheck
    file, line = _origin()
    origin = f" (ql.compile called at {file}:{line})"
    where = ("kernel.cu", 1)
    if debug:  # compiler messages and debugger lines point into the Python file
        from .debug import source_start
        start = source_start(source, file, line)
        if start is not None:
            where = (file, start)
    image = dev.backend.compile(source, options, exprs, "memcheck" if memcheck else debug,
                                origin, where)
    mod = Module(dev, source, image.options or options)
    mod.debug = debug
    mod.memcheck = memcheck
    mod._origin = (file, line)
    mod._compile_args = (options, exprs, debug, memcheck, stub)   # what pickle carries
    mod._image = image
    mod._library = image.library
    mod._path = image.path
    mod._program = image.program
    _warn_log(mod, origin)   # the compiler's warnings: CompileLogWarning
    mod._templates = (set(image.templates) if image.templates is not None
                      else _templates_of(source))
    backend = dev.backend
    cls = DebugKernel if debug else Kernel
    from . import host_stub
    mod._stub_library = None
    entries = [backend.launch_entry] * len(image.kernels)
    why = host_stub.wanted(stub, debug)
    if why and image.kernels and not any(p.kind == kinds.INVALID for ki in image.kernels
                                         for p in ki.params):
        try:
            mod._stub_library = host_stub.build(
                [(ki.name, ki.lowered_name, ki.params) for ki in image.kernels],
                backend.launch_entry, source)
            entries = list(mod._stub_library.trampolines)
        except CompileError as exc:
            if why != "debug":
                raise
            import warnings   # implied by debug=True: the Python stub still works
            from .errors import CompileWarning
            warnings.warn(f"debug build without the C host stub: {exc}", CompileWarning,
                          stacklevel=2)
    for ki, entry in zip(image.kernels, entries):
        params = tuple(Param(p.name, p.ctype, p.size, p.align, kinds.NAMES.get(p.kind, "?"))
                       for p in ki.params)
        bad = [p.name for p in ki.params if p.kind == kinds.INVALID]
        if bad:
            raise CompileError(f"kernel '{ki.name}': parameter(s) {bad} are references; a "
                               f"kernel takes values and pointers{origin}", source=source,
                               options=options)
        k = cls(mod, ki.name, ki.lowered_name, params, bytes(p.kind for p in ki.params),
                ki.handle, entry, backend.inline_threads, backend.error_hook)
        k._source_line = ki.source_line
        k.attributes = dict(getattr(ki, "attributes", None) or {})
        k.tier = k.attributes.get("tier")   # CPU: "loop" | "fission" | "fibers"
        _add_kernel(mod, ki.name, ki.lowered_name, k)
    return mod


def _templates_of(source: str) -> set[str]:
    """The template kernels a source declares (for get_kernel's hints)."""
    from .signature import parse_kernels
    try:
        return {d.name for d in parse_kernels(source) if d.template is not None}
    except ValueError:
        return set()


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


def _warn_log(mod: Module, origin: str) -> None:
    """One CompileLogWarning when the compiler's log has warnings."""
    log = mod.compile_log
    if "warning" not in log.lower():
        return
    import warnings
    from .errors import CompileLogWarning
    shown = log.strip()
    if len(shown) > 4000:
        shown = shown[:4000] + "\n[... see module.compile_log]"
    warnings.warn(f"the {mod.device.name} compiler reported warnings{origin}:\n{shown}",
                  CompileLogWarning, stacklevel=3)

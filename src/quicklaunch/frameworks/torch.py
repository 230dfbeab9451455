"""quicklaunch inside PyTorch programs: ``ql.torch``.

* Tensors are pointer arguments as they are (no copy), on every device:
  the launcher reads them itself (see ``_launch_torch.h``); nothing here is
  needed for that.
* ``launcher(kernel, grid, block)``: a launch on torch's *current* stream,
  read per launch (on CUDA: ``torch.cuda.current_stream``, which inside
  ``torch.cuda.graph(...)`` is the capturing stream; on the CPU device:
  torch's program order, so the launch has finished when the call returns).
* ``op(kernel, grid, block, ...)``: the kernel as a torch operator
  (``torch.ops.ql.<name>``), schema from the kernel's parameters, the
  non-const pointers declared mutated, a fake implementation from a shape
  rule, so ``torch.compile(fullgraph=True)`` traces through it. Calling the
  returned object outside of tracing launches directly (a direct launch's
  cost); under tracing it is the torch op.

Imported only when used (``ql.torch`` on first access).
"""
from __future__ import annotations

import itertools
import re

import torch

from ..devices import device as _device
from . import _torch_abi

_torch_abi.register()  # the launcher's C reading of tensors (else on the first tensor seen)

__all__ = ["launcher", "op", "current_stream", "capture_guard", "LIBRARY"]

LIBRARY = "ql"
_lib = torch.library.Library(LIBRARY, "FRAGMENT")
_names = set()
_count = itertools.count()


def current_stream(dev) -> object:
    """torch's current stream for quicklaunch device ``dev``, as a stream
    argument: ``None`` on the CPU device (torch's CPU work has no stream),
    the raw ``cudaStream_t`` handle of torch's current stream on CUDA."""
    dev = _device(dev)
    if dev.host_memory:
        return None
    return torch._C._cuda_getCurrentRawStream(dev.ordinal)


def launcher(kernel, grid, block, shared_mem: int = 0):
    """A callable ``run(*args)`` launching ``kernel`` on torch's current
    stream, read at each launch (see the module docstring). The launcher of
    each stream is built once (on its first launch: build it before a CUDA
    graph capture by one launch outside it, as torch's warm-up does)."""
    dev = kernel.device
    if dev.host_memory:
        # A launch on the CPU device's default stream runs before the call
        # returns, unless launches queued on ql streams are pending, which
        # it then queues behind: only then is there anything to wait for.
        from ..backends.cpu import runtime
        run = kernel.configure(grid, block, shared_mem)
        sync = dev.synchronize
        queued = runtime.library().ql_cpu_queued_work
        seen = runtime.StreamsSeen

        def call(*args):  # torch's CPU order: done when the call returns
            run(*args)
            if seen.made and queued():
                sync()
        return call
    runs = {}
    raw = torch._C._cuda_getCurrentRawStream
    ordinal = dev.ordinal
    configure = kernel.configure

    def call(*args):
        s = raw(ordinal)
        run = runs.get(s)
        if run is None:
            run = runs[s] = configure(grid, block, shared_mem, s)
        run(*args)
    return call


def capture_guard(device=None, stream=None):
    """``with torch.cuda.graph(g), ql.torch.capture_guard():``: while torch
    captures, a quicklaunch launch on the legacy default stream (``k[grid,
    block](...)`` with no stream) raises instead of running outside the
    graph. ``device`` defaults to torch's current CUDA device, ``stream`` to
    torch's current (capturing) stream, read on entry."""
    from ._capture import CaptureGuard
    if device is None:
        device = f"cuda:{torch.cuda.current_device()}"
    dev = _device(device)
    if stream is None:
        stream = torch._C._cuda_getCurrentRawStream(dev.ordinal)
    return CaptureGuard(dev, stream, "torch.cuda.graph")


# ------------------------------------------------------------------ op()

_INT = re.compile(r"^(unsigned |signed )?(char|short|int|long|long long|long int|"
                  r"long long int|size_t|ptrdiff_t|u?int(8|16|32|64)_t)$")


def _schema_type(p, kernel: str) -> tuple[str, bool]:
    """(schema type, mutated) of a kernel parameter."""
    ct = p.ctype.strip()
    if ct.endswith("*"):
        const = ct.startswith("const ") or " const " in ct.split("*")[0] + " "
        return "Tensor", not const
    if ct in ("float", "double"):
        return "float", False
    if ct == "bool":
        return "bool", False
    if _INT.match(ct):
        return "SymInt", False
    raise TypeError(f"ql.torch.op: parameter '{p.name}' of kernel '{kernel}' has C type "
                    f"{ct!r}, which a torch schema cannot carry; wrap the launch in a Python "
                    f"function and pass that to ql.torch.op(fn, ...)")


def _unique(name: str) -> str:
    name = re.sub(r"\W", "_", name)
    while name in _names or hasattr(torch.ops.ql, name):
        name = f"{name}_{next(_count)}"
    _names.add(name)
    return name


def _call(rule, args: dict):
    return rule(**args) if callable(rule) else rule


class Op:
    """A kernel as a torch operator. ``op(*args)``: the kernel's arguments in
    order, less those named in ``outputs``, which are allocated by the op
    and returned (one tensor, or a tuple). ``op.op``: the torch OpOverload."""

    def __init__(self, kernel, grid, block, shared_mem=0, outputs=None, name=None):
        self.kernel = kernel
        self.outputs = dict(outputs or {})
        params = kernel.params
        names = [p.name for p in params]
        for o in self.outputs:
            if o not in names:
                raise ValueError(f"ql.torch.op: outputs names {o!r}, which is not a parameter "
                                 f"of kernel '{kernel.name}' {tuple(names)}")
        types = [_schema_type(p, kernel.name) for p in params]
        for o in self.outputs:
            t, mut = types[names.index(o)]
            if t != "Tensor" or not mut:
                raise ValueError(f"ql.torch.op: output {o!r} of kernel '{kernel.name}' must "
                                 f"be a non-const pointer parameter")
        self.inputs = [n for n in names if n not in self.outputs]
        alias = iter("abcdefghijklmnopqrstuvwxyz")
        fields = []
        mutated = []
        for p, (t, mut) in zip(params, types):
            if p.name in self.outputs:
                continue
            if t == "Tensor" and mut:
                fields.append(f"Tensor({next(alias)}!) {p.name}")
                mutated.append(p.name)
            else:
                fields.append(f"{t} {p.name}")
        self.mutated = tuple(mutated)
        ret = {0: "()", 1: "Tensor"}.get(len(self.outputs),
                                          "(" + ", ".join(["Tensor"] * len(self.outputs)) + ")")
        self.name = _unique(name or kernel.name)
        self.schema = f"({', '.join(fields)}) -> {ret}"
        _lib.define(self.name + self.schema)
        self.grid, self.block, self.shared_mem = grid, block, shared_mem
        static = not callable(grid) and not callable(block)
        run = launcher(kernel, grid, block, shared_mem) if static else None
        launchers = {}
        dev = kernel.device
        inputs, outs = self.inputs, self.outputs

        def allocate(bound, like):
            made = []
            for o, rule in outs.items():
                shape, dtype = _call(rule, bound)
                made.append(torch.empty(shape, dtype=dtype, device=like))
            return made

        def impl(*args):
            bound = dict(zip(inputs, args))
            made = allocate(bound, _tensor_device(args, dev))
            bound.update(zip(outs, made))
            full = [bound[n] for n in names]
            if static:
                run(*full)
            else:  # one launcher per configuration met, as k[grid, block] caches its own
                cfg = (_call(grid, bound), _call(block, bound))
                go = launchers.get(cfg)
                if go is None:
                    go = launchers[cfg] = launcher(kernel, cfg[0], cfg[1], shared_mem)
                go(*full)
            return None if not made else made[0] if len(made) == 1 else tuple(made)

        def fake(*args):
            bound = dict(zip(inputs, args))
            made = allocate(bound, _tensor_device(args, dev))
            return None if not made else made[0] if len(made) == 1 else tuple(made)

        if static and not outs:
            impl = run  # the kernel's own arguments, in order: launch as they are
        for key in ("CPU", "CUDA"):
            _lib.impl(self.name, impl, key)
        torch.library.register_fake(f"{LIBRARY}::{self.name}", fake, lib=_lib)
        self.op = getattr(torch.ops.ql, self.name).default
        self._impl = impl
        compiling = torch.compiler.is_compiling
        overload = self.op

        def call(*args):
            """Eager: launches directly; traced (torch.compile): the torch op."""
            if compiling():
                return overload(*args)
            return impl(*args)
        call.op, call.schema, call.name, call.mutated = overload, self.schema, self.name, \
            self.mutated
        call.__name__ = self.name
        self.call = call

    def __repr__(self):
        return f"<ql.torch.op torch.ops.{LIBRARY}.{self.name}{self.schema}>"


def _tensor_device(args, dev):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    return torch.device("cpu") if dev.host_memory else torch.device("cuda", dev.ordinal)


def op(kernel_or_fn, grid=None, block=None, *, shared_mem: int = 0, outputs=None,
       name: str | None = None, mutates_args=None, fake=None):
    """Makes a torch operator of a quicklaunch kernel (or of a Python function
    of launches).

    Kernel form: ``op(kernel, grid, block, outputs={"y": rule})``. ``grid`` and
    ``block`` are launch dimensions or functions of the arguments by name
    (``grid=lambda n, **_: (n + 255) // 256``). The schema comes from the
    kernel's parameters: pointers are Tensors, non-const ones mutated
    (``Tensor(a!)``), integers SymInt, floats float. ``outputs`` maps
    non-const pointer parameters the op allocates to a shape rule: a
    ``(shape, dtype)`` pair or a function of the arguments returning one;
    they leave the op's inputs and are returned. Without outputs the op
    writes only its arguments, which is also its fake implementation.

    Function form: ``op(fn, mutates_args=("y",), fake=None)``: ``fn`` has
    type annotations as ``torch.library.custom_op`` wants; ``fake``
    defaults to "writes only its arguments" (returns None).
    """
    if hasattr(kernel_or_fn, "configure") and hasattr(kernel_or_fn, "params"):
        if grid is None or block is None:
            raise TypeError("ql.torch.op(kernel, grid, block, ...): a kernel needs its launch "
                            "configuration")
        return Op(kernel_or_fn, grid, block, shared_mem, outputs, name).call
    fn = kernel_or_fn
    qual = f"{LIBRARY}::{_unique(name or fn.__name__)}"
    custom = torch.library.custom_op(qual, fn, mutates_args=tuple(mutates_args or ()))
    custom.register_fake(fake or (lambda *a, **k: None))
    return custom

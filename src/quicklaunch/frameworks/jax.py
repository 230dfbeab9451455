"""quicklaunch inside JAX programs: ``ql.jax``.

``ql.jax.op(kernel, grid, block, outputs={...})`` makes a function callable
inside ``jax.jit`` that runs the kernel through ``jax.ffi``: an XLA FFI
handler (``jax_ffi.cc``, built on first use with the host C++ compiler
against jaxlib's FFI headers, cached) calls the kernel's launch entry on
XLA's stream with XLA's buffers: no copy, no Python at run time.

* const pointer parameters are operands (JAX arrays);
* non-const pointer parameters named in ``outputs`` are results, declared by
  a rule giving ``(shape, dtype)`` (or a ``jax.ShapeDtypeStruct``) from the
  arguments by name;
* other non-const pointer parameters are in-out: an operand aliased to a
  result (``input_output_aliases``), returned after the launch;
* scalars are static: Python numbers, packed once per traced call.

Imported only when used (``ql.jax`` on first access).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import jax
import numpy as np

__all__ = ["op", "handler_library"]

_SOURCE = Path(__file__).with_name("jax_ffi.cc")
_lock = threading.Lock()
_lib = None
_registered = set()
_calls = {}    # (kernel id, config, scalars, shapes) -> QlCall: kept for the process
_MAXP = 128


def _cache_dir() -> Path:
    from ..cache import default_cache_dir
    try:
        d = default_cache_dir() / "jax_ffi"
        d.mkdir(parents=True, exist_ok=True)
        return d
    except OSError:
        return Path(tempfile.gettempdir())


def handler_library() -> ctypes.CDLL:
    """The built FFI handler library (built on first use, then cached)."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        inc = jax.ffi.include_dir()
        src = _SOURCE.read_bytes()
        key = hashlib.sha256(src + jax.__version__.encode() + inc.encode()).hexdigest()[:16]
        out = _cache_dir() / f"ql_jax_ffi_{key}.so"
        if not out.exists():
            cxx = os.environ.get("CXX") or "g++"
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", "-w", f"-I{inc}", str(_SOURCE),
                   "-o", str(tmp)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"ql.jax: building the XLA FFI handler failed:\n"
                                   f"{' '.join(cmd)}\n{r.stderr[-4000:]}")
            os.replace(tmp, out)
        lib = ctypes.CDLL(str(out))
        lib.ql_jax_params_offset.restype = ctypes.c_size_t
        if lib.ql_jax_params_offset() != _Layout.params.offset:
            raise RuntimeError(f"ql.jax: the handler's QlCall layout differs from quicklaunch's "
                               f"({lib.ql_jax_params_offset()} != {_Layout.params.offset})")
        _lib = lib
        return _lib


def _register(platform: str) -> str:
    name = f"quicklaunch_{platform}"
    if name not in _registered:
        lib = handler_library()
        fn = lib.ql_jax_cpu if platform == "cpu" else lib.ql_jax_gpu
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(fn), platform=platform)
        _registered.add(name)
    return name


def _dims(v) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


def _sync_entry(dev) -> int:
    if not dev.host_memory:
        return 0
    from ..backends.cpu import runtime
    return ctypes.cast(runtime.library().ql_cpu_device_synchronize, ctypes.c_void_p).value


def _spec(rule, bound):
    r = rule(**bound) if callable(rule) else rule
    if isinstance(r, jax.ShapeDtypeStruct):
        return r
    shape, dtype = r
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def op(kernel, grid, block, *, shared_mem: int = 0, outputs=None):
    """A function ``f(*args)`` (the kernel's arguments in order, less those
    named in ``outputs``) that runs ``kernel`` inside JAX; returns the
    results (outputs, then in-out pointers, in parameter order): one array
    or a tuple. ``grid``/``block`` may be functions of the arguments by name
    (arrays give their shapes)."""
    from ..kinds import POINTER, CODES
    outputs = dict(outputs or {})
    params = kernel.params
    names = [p.name for p in params]
    layout = kernel._layout()
    codes = [row[0] for row in layout]
    for o in outputs:
        if o not in names or codes[names.index(o)] != CODES["PTR"]:
            raise ValueError(f"ql.jax.op: output {o!r} must be a non-const pointer parameter "
                             f"of kernel '{kernel.name}' {tuple(names)}")
    inputs = [n for n in names if n not in outputs]
    dev = kernel.device
    platform = "cpu" if dev.host_memory else "cuda"
    target = _register(platform)
    entry = kernel.device.backend.launch_entry
    sync = _sync_entry(dev)

    def f(*args):
        if len(args) != len(inputs):
            raise TypeError(f"ql.jax.op of '{kernel.name}' takes {len(inputs)} arguments "
                            f"{tuple(inputs)}, got {len(args)}")
        bound = dict(zip(inputs, args))
        operands, results, aliases, source = [], [], {}, []
        packed = []
        for n, code in zip(names, codes):
            if code in POINTER:
                packed.append(0)
                if n in outputs:
                    source.append(-2 - len(results))
                    results.append(_spec(outputs[n], bound))
                    continue
                a = bound[n]
                source.append(len(operands))
                if code == CODES["PTR"]:  # in-out
                    aliases[len(operands)] = len(results)
                    source[-1] = -2 - len(results)
                    results.append(jax.ShapeDtypeStruct(a.shape, a.dtype))
                operands.append(a)
            else:
                v = bound[n]
                if isinstance(v, jax.core.Tracer):
                    raise TypeError(f"ql.jax.op of '{kernel.name}': scalar parameter {n!r} "
                                    f"must be a static Python number (got a traced value); "
                                    f"mark it static in jax.jit")
                packed.append(v)
                source.append(-1)
        g = _dims(grid(**bound) if callable(grid) else grid)
        b = _dims(block(**bound) if callable(block) else block)
        key = (id(kernel), g, b, shared_mem, tuple(packed), tuple(source))
        call = _calls.get(key)
        if call is None:
            call = _make_call(kernel, entry, sync, g, b, shared_mem, packed, source, layout)
            _calls[key] = (call, kernel)
        else:
            call = call[0]
        fn = jax.ffi.ffi_call(target, results, input_output_aliases=aliases or None,
                              has_side_effect=False)
        out = fn(*operands, ql_call=np.int64(ctypes.addressof(call)))
        return out[0] if len(results) == 1 else tuple(out)

    f.__name__ = f"ql_jax_{kernel.name}"
    return f


def _make_call(kernel, entry, sync, g, b, shared, packed, source, layout):
    if len(packed) > _MAXP:
        raise ValueError(f"ql.jax.op: kernel '{kernel.name}' has more than {_MAXP} parameters")
    block_bytes = kernel._pack(*packed)
    if len(block_bytes) > 4096:
        raise ValueError(f"ql.jax.op: kernel '{kernel.name}' has a parameter block over 4 KiB")
    buf = (ctypes.c_ubyte * (ctypes.sizeof(_Layout) + 64))()
    base = (ctypes.addressof(buf) + 63) & ~63
    call = _Layout.from_address(base)
    call._keep = buf
    call.launch, call.sync, call.func = entry, sync or None, kernel.handle
    call.grid[:], call.block[:] = g, b
    call.shared, call.nparams, call.block_bytes = shared, len(packed), len(block_bytes)
    for i, (s, row) in enumerate(zip(source, layout)):
        call.source[i], call.offset[i] = s, row[2]
    ctypes.memmove(call.params, block_bytes, len(block_bytes))
    return call


class _Layout(ctypes.Structure):
    """jax_ffi.cc's QlCall, with its 64-byte aligned parameter block."""
    _fields_ = [("launch", ctypes.c_void_p), ("sync", ctypes.c_void_p),
                ("func", ctypes.c_void_p), ("grid", ctypes.c_uint32 * 3),
                ("block", ctypes.c_uint32 * 3), ("shared", ctypes.c_uint32),
                ("nparams", ctypes.c_uint32), ("block_bytes", ctypes.c_uint32),
                ("source", ctypes.c_int32 * _MAXP), ("offset", ctypes.c_uint32 * _MAXP)]


_end = _Layout.offset.offset + _Layout.offset.size  # not sizeof: that is rounded up
_pad = (-_end) % 64
_Layout = type("_Layout", (ctypes.Structure,), {
    "_fields_": _Layout._fields_ + [("_pad", ctypes.c_ubyte * _pad),
                                    ("params", ctypes.c_ubyte * 4096)],
    "__doc__": _Layout.__doc__})

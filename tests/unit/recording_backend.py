"""A cuLaunchKernel-shaped recording backend for launcher tests: KernelCores
built by hand, no compiler needed."""
import ctypes
import threading
from typing import NamedTuple

import quicklaunch as ql  # registers the error classes with the launcher
from quicklaunch import _launch

PTR, CPTR, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, BOOL, STRUCT = range(1, 17)
NATURAL = {PTR: 8, CPTR: 8, I8: 1, I16: 2, I32: 4, I64: 8, U8: 1, U16: 2, U32: 4, U64: 8,
           F16: 2, BF16: 2, F32: 4, F64: 8, BOOL: 1}
LIMITS = dict(max_block=(1024, 1024, 64), max_grid=(2**31 - 1, 65535, 65535),
              max_threads=1024, max_shared=49152)
LAUNCH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)


class Call(NamedTuple):
    func: int
    grid: tuple
    block: tuple
    shared: int
    stream: int
    params: tuple   # each parameter's bytes
    addrs: tuple    # each parameter's address


class Recorder:
    """A cuLaunchKernel-shaped backend that records every launch."""

    def __init__(self, sizes, status=0, record=True):
        self.sizes, self.status, self.record = list(sizes), status, record
        self.calls, self.lock = [], threading.Lock()
        self.fn = LAUNCH_FN(self._launch)  # kept alive as long as the recorder

    def _launch(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.record:
            call = Call(f or 0, (gx, gy, gz), (bx, by, bz), shared, stream or 0,
                        tuple(ctypes.string_at(params[i], n) for i, n in enumerate(self.sizes)),
                        tuple(params[i] for i in range(len(self.sizes))))
            with self.lock:
                self.calls.append(call)
        return self.status

    def pop(self):
        return self.calls.pop()


class Core(_launch.KernelCore):
    """A Python subclass: holds its backend and can be weakly referenced."""


def make_kernel(codes, sizes=None, aligns=None, names=None, status=0, record=True, **kw):
    sizes = list(sizes or [NATURAL[c] for c in codes])
    aligns = list(aligns or [min(s, 8) or 1 for s in sizes])
    rec = Recorder(sizes, status, record)
    args = dict(name="kern", param_names=tuple(names or (f"p{i}" for i in range(len(codes)))),
                codes=bytes(codes), sizes=sizes, aligns=aligns,
                launch=ctypes.cast(rec.fn, ctypes.c_void_p).value, func=0x1000, device_id=0,
                device_name="cpu", host_memory=True, inline_threads=2**40,
                error_hook=lambda k, s: ql.LaunchError(f"status {s}"), **LIMITS)
    args.update(kw)
    k = Core(**args)
    k.backend = rec
    return k

"""quicklaunch under MPI: helpers around mpi4py, which does the communication.

``import quicklaunch.mpi`` is cheap; mpi4py is imported (and MPI
initialised) on the first call that needs it. Install both with
``pip install 'quicklaunch[mpi]'`` (mpi4py and MPICH from the registries).

* ``ql.device()`` under ``mpiexec`` picks the node-local rank's device
  (mpi/local.py); ``local_rank()``, ``device_choice()`` say what it chose.
* Buffers go to mpi4py as they are: ``ql`` buffers on the CPU through the
  buffer protocol (``buffer(b)`` is the zero-copy NumPy view), GPU buffers
  through ``__cuda_array_interface__`` (and DLPack) for a CUDA-aware MPI.
  ``buffer(b, offset, count)`` is a zero-copy window (a halo row).
* **The stream rule.** MPI knows nothing of quicklaunch's streams: a buffer
  written by a launch must have that launch finished before it is handed to
  MPI (``stream.synchronize()``, an event, or ``dev.synchronize()``; the
  CPU device's default stream is finished when a launch returns). The
  helpers here take the ``streams`` that wrote the buffer and, in debug mode
  (``QUICKLAUNCH_DEBUG=1`` or ``debug=True``), raise ``PendingStreamError``
  when one of them, or the device's default stream, still has work queued.
  (Debug-mode launches are themselves synchronous, so what the check catches
  is work from fast-path modules compiled with ``debug=False``, graph
  replays, and other libraries' streams passed in ``streams``.)
* ``comm()`` installs an excepthook that names the failing rank and its
  error and calls ``MPI_Abort``, so one rank's failure ends the job instead
  of leaving the others blocked in a collective (``QUICKLAUNCH_MPI_ABORT=0``
  leaves the hook out).
"""
from __future__ import annotations

import os
import sys

from ..errors import QuicklaunchError
from . import local

__all__ = ["PendingStreamError", "comm", "local_rank", "device_choice", "buffer", "ready",
           "allreduce", "sendrecv", "abort_on_error"]


class PendingStreamError(QuicklaunchError):
    """A buffer handed to MPI while a stream still has work queued on it."""


def local_rank() -> int | None:
    """The node-local rank (None when not under MPI)."""
    where = local.node_rank()
    return None if where is None else where[0]


def device_choice() -> dict:
    """What ``ql.device()`` chose for this rank and why (after its first call)."""
    return local.choice()


_hooked: list = []


def abort_on_error() -> None:
    """An uncaught exception prints ``rank N: <error>`` and aborts the whole
    job (``MPI_Abort``) instead of leaving the other ranks waiting."""
    if _hooked:
        return
    from mpi4py import MPI
    previous = sys.excepthook

    def hook(kind, value, tb):
        rank = MPI.COMM_WORLD.Get_rank()
        sys.stderr.write(f"quicklaunch.mpi: rank {rank} failed: {kind.__name__}: {value}\n")
        previous(kind, value, tb)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = hook
    _hooked.append(hook)


def comm():
    """``MPI.COMM_WORLD`` (imports mpi4py, which initialises MPI), with
    ``abort_on_error`` in force unless $QUICKLAUNCH_MPI_ABORT=0."""
    from mpi4py import MPI
    if os.environ.get("QUICKLAUNCH_MPI_ABORT", "1") not in ("0", ""):
        abort_on_error()
    return MPI.COMM_WORLD


class _DeviceWindow:
    """A zero-copy window of GPU memory for mpi4py (``__cuda_array_interface__``)."""

    def __init__(self, ptr: int, count: int, dtype, readonly: bool, owner):
        self._cai = {"shape": (count,), "typestr": dtype.str, "descr": dtype.descr,
                     "data": (ptr, readonly), "strides": None, "version": 3,
                     "stream": None}   # synchronised by the caller: the stream rule
        self._owner = owner

    @property
    def __cuda_array_interface__(self) -> dict:
        return self._cai


def _debug(debug) -> bool:
    if debug is not None:
        return bool(debug)
    return os.environ.get("QUICKLAUNCH_DEBUG", "") not in ("", "0")


def ready(buf, streams=(), debug=None) -> None:
    """Checks the stream rule for ``buf`` (in debug mode; a no-op otherwise):
    raises PendingStreamError when one of ``streams`` (a ql.Stream or a
    sequence of them) or the buffer's device's default stream has work queued."""
    if not _debug(debug):
        return
    if streams is None:
        streams = ()
    elif not isinstance(streams, (list, tuple)):
        streams = (streams,)
    for s in streams:
        if not s.query():
            raise PendingStreamError(
                f"a buffer ({_describe(buf)}) was handed to MPI while {s!r} still has work "
                f"queued; MPI does not wait for quicklaunch streams: call "
                f"stream.synchronize() (or wait on an event) first")
    dev = getattr(buf, "device", None)
    ops = getattr(getattr(dev, "backend", None), "stream_ops", None)
    if ops is not None and not _default_stream_done(ops()):
        raise PendingStreamError(
            f"a buffer ({_describe(buf)}) was handed to MPI while the default stream of "
            f"{dev.name} still has work queued; call {dev.name!r} device.synchronize() first")


def _default_stream_done(ops) -> bool:
    """Whether the default stream (handle 0) is idle; a device whose default
    stream has no handle (the CPU: a launch on it returns finished) is."""
    try:
        return bool(ops.stream_query(0))
    except QuicklaunchError:
        return True


def _describe(buf) -> str:
    shape, dtype = getattr(buf, "shape", None), getattr(buf, "dtype", None)
    return f"shape {shape}, dtype {dtype}" if shape is not None else type(buf).__name__


def buffer(buf, offset: int = 0, count: int | None = None):
    """What to hand mpi4py for ``buf`` (elements ``[offset, offset + count)``
    of its flat contents): a zero-copy NumPy view of host memory (ql buffers
    on the CPU, NumPy arrays), or for GPU memory an object with
    ``__cuda_array_interface__`` (CUDA-aware MPI reads device pointers)."""
    import numpy as np
    from ..memory import Buffer
    if isinstance(buf, Buffer) and not buf.device.host_memory:
        n = buf.size - offset if count is None else count
        if offset < 0 or n < 0 or offset + n > buf.size:
            raise ValueError(f"window [{offset}, {offset + n}) outside a buffer of {buf.size}")
        if offset == 0 and n == buf.size:
            return buf
        return _DeviceWindow(buf.ptr + offset * buf.dtype.itemsize, n, buf.dtype,
                             bool(buf.readonly), buf)
    arr = buf.numpy() if isinstance(buf, Buffer) else np.asarray(buf)
    if not arr.flags.c_contiguous:
        raise ValueError("MPI needs contiguous memory; pass a C-contiguous array or ql buffer "
                         "(a copy would hide what MPI wrote)")
    flat = arr.reshape(-1)   # a view
    return flat[offset:] if count is None else flat[offset:offset + count]


def allreduce(buf, op=None, comm_=None, streams=(), debug=None):
    """In-place ``Allreduce`` of ``buf`` (default: sum over COMM_WORLD),
    after the stream rule's check. Returns ``buf``."""
    from mpi4py import MPI
    ready(buf, streams, debug)
    c = comm_ or comm()
    c.Allreduce(MPI.IN_PLACE, buffer(buf), op=op or MPI.SUM)
    return buf


def sendrecv(send, dest: int, recv, source: int, tag: int = 0, comm_=None, streams=(),
             debug=None):
    """``Sendrecv`` of ``send`` to ``dest`` and ``recv`` from ``source``
    (``MPI.PROC_NULL`` for none), after the stream rule's check of both."""
    ready(send, streams, debug)
    ready(recv, streams, debug)
    c = comm_ or comm()
    c.Sendrecv(buffer(send), dest, tag, buffer(recv), source, tag)
    return recv

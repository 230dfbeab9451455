"""The node-local rank, and what it chooses, without importing mpi4py.

``ql.device()`` asks this module under MPI (devices.py): a GPU device is
``kind:{local_rank % devices}``; the CPU device gets the local rank's share
of the cores (``os.sched_getaffinity``, split into disjoint contiguous
slices), the process pinned to it and the worker pool sized to it, so ranks
on one node never oversubscribe it. An explicit device (an argument,
``$QUICKLAUNCH_DEVICE``) always wins.

Where the rank comes from, first hit wins:

1. mpi4py, when the program has already imported and initialised it
   (``COMM_WORLD.Split_type(COMM_TYPE_SHARED)``); importing it here would
   initialise MPI in programs that never asked for it, so this never does;
2. the launcher's environment: ``OMPI_COMM_WORLD_LOCAL_RANK``/``_SIZE``
   (Open MPI), ``MPI_LOCALRANKID``/``MPI_LOCALNRANKS`` (MPICH's Hydra, Intel
   MPI), ``PMI_LOCAL_RANK``/``PMI_LOCAL_SIZE`` (PMIx, Cray PALS),
   ``SLURM_LOCALID`` (srun; the size from ``SLURM_NTASKS_PER_NODE``),
   ``MV2_COMM_WORLD_LOCAL_RANK``/``_SIZE`` (MVAPICH).

``QUICKLAUNCH_MPI_PIN=0`` keeps the CPU device unpinned. When the launcher
has already bound the process to fewer CPUs than the machine has
(``mpiexec --bind-to core``, ``srun --cpu-bind``), that binding is the
share and is left as it is.
"""
from __future__ import annotations

import os
import sys

__all__ = ["node_rank", "cpu_share", "pin_cpu_share", "choice"]

_ENV = (("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
        ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
        ("PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"),
        ("MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"),
        ("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"))

_choice: dict = {}   # what default_device chose, for `quicklaunch info`


def _int(text: str | None) -> int | None:
    if not text:
        return None
    head = text.split("(")[0].split(",")[0].strip()   # SLURM's "4(x2)"
    return int(head) if head.isdigit() else None


def node_rank() -> tuple[int, int | None, str] | None:
    """(local rank, local size or None, where it came from), or None when
    this process is not an MPI rank that says so."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                node = mpi.COMM_WORLD.Split_type(mpi.COMM_TYPE_SHARED)
                try:
                    return node.Get_rank(), node.Get_size(), "mpi4py COMM_TYPE_SHARED"
                finally:
                    node.Free()
        except Exception:   # a broken MPI here must not break ql.device(): use the env
            pass
    for rank_var, size_var in _ENV:
        rank = _int(os.environ.get(rank_var))
        if rank is not None:
            return rank, _int(os.environ.get(size_var)), rank_var
    return None


def cpu_share(rank: int, size: int | None) -> tuple[list[int], str]:
    """The CPUs of local rank ``rank`` of ``size``, and why."""
    mine = sorted(os.sched_getaffinity(0))
    total = os.cpu_count() or len(mine)
    if len(mine) < total:
        return mine, "bound by the launcher"
    if not size or size < 1:
        return mine, "local size unknown: all CPUs"
    if size > len(mine):   # more ranks than CPUs: one each, shared
        return [mine[rank % len(mine)]], f"{size} ranks on {len(mine)} CPUs: oversubscribed"
    lo, hi = rank * len(mine) // size, (rank + 1) * len(mine) // size
    return mine[lo:hi], f"local rank {rank} of {size}"


def pin_cpu_share(cpus: list[int]) -> None:
    """Pins every thread of the process to ``cpus`` (threads started later
    inherit it) and sizes the CPU device's pool to them, unless
    $QUICKLAUNCH_CPU_THREADS says otherwise (the pool reads it when it
    starts, at the first launch)."""
    want = set(cpus)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, want)
        except OSError:   # a thread that has just exited
            pass
    os.environ.setdefault("QUICKLAUNCH_CPU_THREADS", str(len(cpus)))


def choose(kind: str, single: bool, module) -> str:
    """The device spec of this rank for the default ``kind`` (recorded for
    ``choice()``); pins the process when the device is split by cores."""
    where = node_rank()
    if where is None:
        return kind
    rank, size, source = where
    _choice.update(local_rank=rank, local_size=size, source=source)
    if single:
        if os.environ.get("QUICKLAUNCH_MPI_PIN", "1") not in ("0", ""):
            cpus, why = cpu_share(rank, size)
            pin_cpu_share(cpus)
            _choice.update(cpus=cpus, why=why)
        return kind
    count = getattr(module, "count", None)
    n = count() if count is not None else 1
    _choice.update(devices=n)
    return f"{kind}:{rank % max(n, 1)}"


def choice() -> dict:
    """What the default device choice saw and did under MPI ({} when not
    under MPI or not yet chosen)."""
    return dict(_choice)

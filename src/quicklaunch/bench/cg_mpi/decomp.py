"""The row-block decomposition: which rows a rank owns, its neighbours, the
local right-hand side, and gathering the solution back."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Block:
    """Rank ``rank`` of ``size`` owns interior rows [y0, y1) of an N x N grid."""
    N: int
    rank: int
    size: int
    y0: int
    y1: int

    @property
    def m(self) -> int:
        return self.y1 - self.y0

    @property
    def W(self) -> int:
        return self.N + 2

    @property
    def up(self) -> int | None:      # the rank holding the rows above (smaller y)
        return self.rank - 1 if self.rank > 0 else None

    @property
    def down(self) -> int | None:
        return self.rank + 1 if self.rank < self.size - 1 else None

    def padded_f(self, f: np.ndarray) -> np.ndarray:
        """The local (m + 2) x (N + 2) right-hand side with zero ghosts."""
        out = np.zeros((self.m + 2, self.W), np.float32)
        out[1:-1, 1:-1] = f[self.y0:self.y1]
        return out


def block_of(N: int, rank: int, size: int) -> Block:
    """Rows split as evenly as they go (the first N % size ranks one more)."""
    if size > N:
        raise ValueError(f"{size} ranks for {N} rows: every rank needs at least one row")
    base, extra = divmod(N, size)
    y0 = rank * base + min(rank, extra)
    return Block(N, rank, size, y0, y0 + base + (rank < extra))


def gather(comm, block: Block, interior: np.ndarray) -> np.ndarray | None:
    """The (N, N) solution on rank 0 (None elsewhere) from each rank's
    (m, N) interior rows."""
    from mpi4py import MPI
    counts = comm.allgather(interior.size)
    out = np.empty((block.N, block.N), np.float32) if block.rank == 0 else None
    comm.Gatherv(np.ascontiguousarray(interior, np.float32),
                 [out, counts, None, MPI.FLOAT] if out is not None else None, root=0)
    return out

"""The CG benchmark's problem: -Δu = f on an N x N interior grid.

Dirichlet zero boundary, the matrix-free 5-point stencil
``(A u)[i, j] = 4 u[i, j] - u[i-1, j] - u[i+1, j] - u[i, j-1] - u[i, j+1]``
(neighbours outside the grid are the zero boundary; the h² scaling is folded
into f), f uniform in [-1, 1) from ``np.random.default_rng(seed)``, stored as
float32 in C order (``u[y, x]`` at ``y * N + x``).

Every implementation runs the same unpreconditioned CG from u = 0 for a fixed
number of iterations (no convergence test):

    r = f; p = r; rr = r.r
    repeat: ap = A p; alpha = rr / (p.ap); u += alpha p; r -= alpha ap
            rr' = r.r; beta = rr' / rr; p = r + beta p; rr = rr'

with alpha (beta) taken as 0 when its divisor is 0, so a solve that has
converged exactly stays finite. The result is judged by ``residual``: the
relative residual ||f - A u|| / ||f|| computed in float64 on the host.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_SEED = 20261130


@dataclass(frozen=True)
class Problem:
    """The right-hand side of one grid size; ``f`` is (N, N) float32."""
    N: int
    f: np.ndarray

    @property
    def n(self) -> int:
        return self.N * self.N

    def residual(self, u) -> float:
        """||f - A u|| / ||f|| in float64, for a (N, N) or flat result."""
        u64 = np.asarray(u, dtype=np.float64).reshape(self.N, self.N)
        f64 = self.f.astype(np.float64)
        norm_f = float(np.linalg.norm(f64))
        res = float(np.linalg.norm(f64 - apply_stencil(u64)))
        return res / norm_f if norm_f else res


def make_problem(N: int, seed: int = DEFAULT_SEED) -> Problem:
    if N < 1:
        raise ValueError(f"the grid size must be at least 1, not {N}")
    rng = np.random.default_rng(seed)
    f = rng.uniform(-1.0, 1.0, size=(N, N)).astype(np.float32)
    f.flags.writeable = False
    return Problem(N, f)


def apply_stencil(u: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A u for a (N, N) array, vectorised with slices, in u's dtype."""
    if out is None:
        out = np.empty_like(u)
    np.multiply(u, 4, out=out)
    out[1:, :] -= u[:-1, :]
    out[:-1, :] -= u[1:, :]
    out[:, 1:] -= u[:, :-1]
    out[:, :-1] -= u[:, 1:]
    return out


def safe_div(a, b):
    """a / b, or 0 when b is 0 (the guard every implementation uses)."""
    return a / b if b != 0 else a * 0

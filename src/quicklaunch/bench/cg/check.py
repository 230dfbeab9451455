"""Is a CG result right? Compared with the NumPy float32 reference.

Every implementation runs the same float32 CG for the same number of
iterations from the same f, but sums its dot products in its own order, so
results drift apart by rounding. The checks are sized from measurement
(seed 20261130, 50 iterations, N = 16 ... 2048):

* rounding alone moves the relative residual by at most 4e-4 of itself
  (NumPy float32 against a float64 CG, and quicklaunch against NumPy, both
  at N = 2048) and the field u by at most 1.5e-4 (relative 2-norm);
* one iteration more or less moves the relative residual by 1.3-2.4 % (N
  >= 64; 16 % at N = 33) and u by 1.2-2.7 % (N >= 64).

So ``RESIDUAL_RTOL`` = 5e-3 and ``FIELD_RTOL`` = 5e-3 sit about ten times
above rounding and below what an off-by-one iteration, a wrong stencil
coefficient or a wrong scalar would do. ``RESIDUAL_ATOL`` = 2e-5 covers
solves that have converged to float32's floor (N = 16: a relative residual
of about 7e-7, where rounding decides the last digits).
"""
from __future__ import annotations

import numpy as np

RESIDUAL_RTOL = 5e-3
RESIDUAL_ATOL = 2e-5
FIELD_RTOL = 5e-3


def field_difference(u, ref) -> float:
    u = np.asarray(u, dtype=np.float64).ravel()
    ref = np.asarray(ref, dtype=np.float64).ravel()
    scale = float(np.linalg.norm(ref))
    diff = float(np.linalg.norm(u - ref))
    return diff / scale if scale else diff


def compare(u, residual: float, ref_u, ref_residual: float) -> str | None:
    """None when the result matches the reference, else the reason."""
    u = np.asarray(u)
    if u.size != np.asarray(ref_u).size:
        return f"wrong result: {u.size} values, expected {np.asarray(ref_u).size}"
    if not np.isfinite(residual) or not np.all(np.isfinite(u)):
        return "wrong result: not finite"
    if abs(residual - ref_residual) > RESIDUAL_RTOL * ref_residual + RESIDUAL_ATOL:
        return (f"wrong result: residual {residual:.6g}, NumPy reference {ref_residual:.6g} "
                f"(tolerance {RESIDUAL_RTOL:g} relative + {RESIDUAL_ATOL:g})")
    d = field_difference(u, ref_u)
    if d > FIELD_RTOL:
        return f"wrong result: u differs from the NumPy reference by {d:.3g} (tolerance {FIELD_RTOL:g})"
    return None

"""The Numba CG (imported only when the Numba row runs).

One ``@njit(parallel=True)`` function runs all the iterations: each step is
a ``prange`` loop (a parallel region on Numba's thread pool), so no Python
runs between steps. Dot products sum chunks of CHUNK elements in float32 in
parallel, then add the chunk sums in float32, like the other rows.
"""
import numpy as np
from numba import njit, prange

CHUNK = 4096


@njit(parallel=True, cache=True)
def _dot(a, b, part):
    n = a.size
    for c in prange(part.size):
        lo = c * CHUNK
        hi = min(lo + CHUNK, n)
        acc = np.float32(0.0)
        for i in range(lo, hi):
            acc += a[i] * b[i]
        part[c] = acc
    total = np.float32(0.0)
    for c in range(part.size):
        total += part[c]
    return total


@njit(parallel=True, cache=True)
def cg_iterations(x, r, p, ap, part, N, iterations, rr):
    """``iterations`` CG steps on flat float32 vectors; returns the new rr."""
    n = N * N
    zero = np.float32(0.0)
    four = np.float32(4.0)
    for _ in range(iterations):
        for y in prange(N):
            for xx in range(N):
                i = y * N + xx
                v = four * p[i]
                if y > 0:
                    v -= p[i - N]
                if y < N - 1:
                    v -= p[i + N]
                if xx > 0:
                    v -= p[i - 1]
                if xx < N - 1:
                    v -= p[i + 1]
                ap[i] = v
        pap = _dot(p, ap, part)
        alpha = rr / pap if pap != zero else zero
        for i in prange(n):
            x[i] += alpha * p[i]
            r[i] -= alpha * ap[i]
        rr_new = _dot(r, r, part)
        beta = rr_new / rr if rr != zero else zero
        for i in prange(n):
            p[i] = r[i] + beta * p[i]
        rr = rr_new
    return rr


def dot(a, b, part):
    return _dot(a, b, part)

"""The host rows: NumPy (the reference every other row is checked against)
and scipy.sparse.

NumPy applies the stencil with slices (``problem.apply_stencil``) and takes
float32 dot products with ``np.dot`` (BLAS sdot); the updates work in place
through one scratch vector, so the loop allocates nothing. The scipy.sparse
row is the same loop with ``A @ p``, A the 5-point matrix in CSR form
(float32). Both run on the host whatever the device.
"""
from __future__ import annotations

import numpy as np

from .impl import Implementation, Solver
from .problem import apply_stencil


class NumpySolver(Solver):
    def __init__(self, problem, matvec=None):
        self.N, self.f = problem.N, problem.f
        shape = (problem.N, problem.N)
        self.x, self.r, self.p, self.ap, self.tmp = (np.empty(shape, np.float32)
                                                      for _ in range(5))
        self.matvec = matvec
        self.rr = np.float32(0)

    def reset(self) -> None:
        self.x.fill(0)
        np.copyto(self.r, self.f)
        np.copyto(self.p, self.f)
        r = self.r.ravel()
        self.rr = np.dot(r, r)

    def solve(self, iterations: int) -> None:
        x, r, p, ap, tmp = self.x, self.r, self.p, self.ap, self.tmp
        xf, rf, pf, apf, tf = x.ravel(), r.ravel(), p.ravel(), ap.ravel(), tmp.ravel()
        matvec, zero = self.matvec, np.float32(0)
        rr = self.rr
        for _ in range(iterations):
            if matvec is None:
                apply_stencil(p, out=ap)
            else:
                apf[...] = matvec(pf)
            pap = np.dot(pf, apf)
            alpha = rr / pap if pap != 0 else zero
            np.multiply(pf, alpha, out=tf)
            xf += tf
            np.multiply(apf, alpha, out=tf)
            rf -= tf
            rr_new = np.dot(rf, rf)
            beta = rr_new / rr if rr != 0 else zero
            pf *= beta
            pf += rf
            rr = rr_new
        self.rr = rr

    def result(self) -> np.ndarray:
        return self.x.copy()


class NumpyCG(Implementation):
    name = "numpy"
    distribution = "numpy"

    def solver(self, problem) -> NumpySolver:
        return NumpySolver(problem)


def poisson_csr(N: int):
    """The N*N x N*N 5-point matrix as float32 CSR: kron(I, T) + kron(T, I)
    with T = tridiag(-1, 2, -1)."""
    import scipy.sparse as sp
    T = sp.diags([-np.ones(N - 1), 2 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1],
                 dtype=np.float32)
    eye = sp.identity(N, dtype=np.float32, format="csr")
    return (sp.kron(eye, T) + sp.kron(T, eye)).tocsr().astype(np.float32)


class ScipySparseCG(Implementation):
    name = "scipy.sparse"
    module = "scipy.sparse"
    distribution = "scipy"

    def solver(self, problem) -> NumpySolver:
        A = poisson_csr(problem.N)
        return NumpySolver(problem, matvec=A.__matmul__)

"""Distributed CG on the bench's 2D Poisson problem (bench/cg), under MPI.

    mpiexec -n R python -m quicklaunch.bench.cg_mpi [--N 512] [--weak-N 256]
    python -m quicklaunch.bench.cg_mpi --sweep 1,2,4      # runs mpiexec per R

Row-block decomposition (decomp.py): rank k of R owns a contiguous block of
the N interior rows, stored (m + 2) x (N + 2) with one ghost row above and
below (the neighbours' rows, or the zero boundary) and the zero ghost
columns of the single-rank layout. The kernels are bench/cg's, unchanged
(solver.py); the NumPy version (numpy_solver.py) is the same decomposition
as users write it today with mpi4py. report.py runs both at a strong and a
weak size and prints the table.
"""
from .decomp import Block, block_of
from .numpy_solver import NumpyMPISolver
from .solver import QuicklaunchMPISolver

__all__ = ["Block", "block_of", "QuicklaunchMPISolver", "NumpyMPISolver"]

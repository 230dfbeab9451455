"""Runs the distributed rows at one rank count and formats the tables.

Per-iteration time (the slowest rank's, best of ``repeats`` timed solves)
is split three ways:

    comm     wall time inside MPI calls (halo Sendrecv/Isend-Irecv-Waitall,
             the two Allreduce), measured around each call; with the
             interior stencil on a second stream, that stream's work runs
             during the halo exchange and is not counted twice
    launch   launches per iteration x the host cost of one launch of the
             solver's own configured kernel with no work (launch_cost())
    compute  the rest: kernel execution and the host's scalar steps

NumPy has no launches; its column is blank and compute is the rest.
"""
from __future__ import annotations

import time

import numpy as np

from ..cg.problem import make_problem
from .decomp import block_of, gather

# A distributed solve and the single-rank one differ only in the order of
# float32 sums (per-rank partial dot products, summed in float64); over the
# bench's iteration counts the relative residuals agree to well within this.
RESIDUAL_RTOL = 1e-3


def single_rank_residual(dev, N: int, iterations: int) -> float:
    """bench/cg's single-rank quicklaunch CG (host scalars), its residual."""
    from ..cg.ql_impl import QuicklaunchSolver
    problem = make_problem(N)
    s = QuicklaunchSolver(dev, problem, graph=False)
    s.reset()
    s.solve(iterations)
    return problem.residual(s.result())


def _timed(comm, solver, iterations: int, warmup: int, repeats: int):
    solver.reset()
    solver.solve(warmup)
    best = None
    for _ in range(repeats):
        solver.reset()
        comm.Barrier()
        t = time.perf_counter()
        solver.solve(iterations)
        total = time.perf_counter() - t
        vals = np.array([total, solver.t_comm])
        worst = np.empty_like(vals)
        from mpi4py import MPI
        comm.Allreduce(vals, worst, op=MPI.MAX)
        if best is None or worst[0] < best[0]:
            best = worst
    return best[0] / iterations, best[1] / iterations


def run_case(comm, dev, N: int, iterations: int, warmup: int = 3, repeats: int = 3,
             impls=("quicklaunch", "numpy"), overlap: str = "auto",
             reference: bool = True) -> dict:
    """One grid size at this communicator's size: a row per implementation."""
    from .numpy_solver import NumpyMPISolver
    from .solver import QuicklaunchMPISolver
    rank, size = comm.Get_rank(), comm.Get_size()
    problem = make_problem(N)
    block = block_of(N, rank, size)
    out = {"N": N, "ranks": size, "iterations": iterations, "rows": {}}
    ref = None
    for name in impls:
        if name == "quicklaunch":
            solver = QuicklaunchMPISolver(dev, comm, block, problem.f, overlap)
        else:
            solver = NumpyMPISolver(comm, block, problem.f)
        per_iter, comm_t = _timed(comm, solver, iterations, warmup, repeats)
        solver.reset()
        solver.solve(iterations)
        x = gather(comm, block, solver.interior_rows())
        row = {"time_us": per_iter * 1e6, "comm_us": comm_t * 1e6,
               "launches": solver.launches}
        if name == "quicklaunch":
            cost = comm.allreduce(solver.launch_cost(), op=_max())
            row["launch_us"] = solver.launches * cost * 1e6
            row["launch_each_us"] = cost * 1e6
            row["overlap"] = solver.overlap
        row["compute_us"] = max(0.0, row["time_us"] - row["comm_us"] - row.get("launch_us", 0))
        if rank == 0:
            row["residual"] = problem.residual(x)
        out["rows"][name] = row
    if rank == 0 and reference and "quicklaunch" in impls:
        ref = single_rank_residual(dev, N, iterations)
        out["single_rank_residual"] = ref
        for row in out["rows"].values():
            row["residual_rel_diff"] = abs(row["residual"] - ref) / ref
            row["within_tolerance"] = row["residual_rel_diff"] <= RESIDUAL_RTOL
    return comm.bcast(out if rank == 0 else None, root=0)


def _max():
    from mpi4py import MPI
    return MPI.MAX


def table(cases: list[dict], title: str) -> str:
    """Rows of (scaling, R, N, implementation, per-iteration split, residual)."""
    head = (f"{title}\n{'R':>4} {'N':>6} {'impl':<12} {'us/iter':>9} {'compute':>9} "
            f"{'comm':>9} {'launch':>9} {'speedup':>8} {'residual':>11} {'vs 1-rank':>10}")
    lines = [head]
    base = {}
    for c in cases:
        for name, row in c["rows"].items():
            base.setdefault(name, row["time_us"] * (1 if "weak" in title else 1))
            speed = base[name] / row["time_us"]
            launch = f"{row['launch_us']:9.1f}" if "launch_us" in row else f"{'-':>9}"
            diff = row.get("residual_rel_diff")
            lines.append(f"{c['ranks']:>4} {c['N']:>6} {name:<12} {row['time_us']:9.1f} "
                         f"{row['compute_us']:9.1f} {row['comm_us']:9.1f} {launch} "
                         f"{speed:8.2f} {row.get('residual', float('nan')):11.4e} "
                         f"{'' if diff is None else f'{diff:10.1e}'}")
    return "\n".join(lines)

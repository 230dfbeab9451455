"""The per-iteration model of the distributed CG, fitted here and
extrapolated on published interconnect figures (docs/scale-out.md).

    mpiexec -n 2 python -m quicklaunch.bench.cg_mpi.model [--json out.json]

measures on this machine: the host cost of one quicklaunch launch
(``t_launch``), a halo message's latency and bandwidth (Sendrecv ping-pong
over 8 B .. 1 MiB, best of 3: ``alpha`` the 8-byte time, ``1 / beta`` the
slope from 256 KiB to 1 MiB), an 8-byte
Allreduce, and the CG kernels' time per grid point on one rank
(``t_point``). The model of one iteration at R ranks, N x N grid:

    T(R) = max(t_interior, t_halo) + t_edges + t_rest + L * t_launch + 2 * t_allreduce(R)
    t_halo = 2 * (alpha + 4 (N + 2) / beta)        two neighbour rows, in turn
    t_allreduce(R) = ceil(log2 R) * (alpha + 8 / beta)    recursive doubling
    compute = t_point * N^2 / R   (split: interior rows overlap the halo)

with L = 7 launches an iteration (the interior stencil on a second stream).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

# Published figures (vendor data sheets and OSU micro-benchmark reports;
# approximate, not measured here): MPI half round-trip latency of a small
# message between nodes and the per-direction bandwidth of one link.
NETWORKS = {
    "InfiniBand NDR (ConnectX-7, 400 Gb/s)": {"alpha_us": 1.0, "beta_GBs": 50.0},
    "HPE Slingshot-11 (200 Gb/s)": {"alpha_us": 2.0, "beta_GBs": 25.0},
    "100 GbE RoCE": {"alpha_us": 3.0, "beta_GBs": 12.5},
}
# One H200 (HBM3e, 4.8 TB/s): a CG iteration streams about 44 bytes a grid point
# (stencil 2 reads + 1 write, 2 dots 4 reads, 2 updates 5 reads + 3 writes: 11 floats)
GPU = {"name": "H200, bandwidth-bound", "t_point_ns": 44 / 4.8e12 * 1e9,
       "t_launch_driver_us": 2.0}
LAUNCHES = 7


def _pingpong(comm, nbytes: int, reps: int) -> float:
    buf = np.zeros(max(1, nbytes), np.uint8)
    other = 1 - comm.Get_rank()
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(reps):
        comm.Sendrecv(buf, other, 3, buf, other, 3)
    return (time.perf_counter() - t) / reps


def measure(comm, dev, N: int = 512) -> dict:
    """The fitted parameters on this machine (ranks 0 and 1 exchange)."""
    from .decomp import block_of
    from .solver import QuicklaunchMPISolver
    from ..cg.problem import make_problem
    sizes = [8, 1 << 10, 1 << 13, 1 << 16, 1 << 18, 1 << 20]
    times = []
    for s in sizes:
        _pingpong(comm, s, 20)
        times.append(min(_pingpong(comm, s, 300 if s < 1 << 16 else 60) for _ in range(5)))
    # latency: the 8-byte time; bandwidth: the slope between 256 KiB and 1 MiB (on a
    # shared machine a least-squares line over all sizes is pulled about by noise)
    alpha = times[0]
    inv_beta = max(1e-15, (times[-1] - times[-2]) / (sizes[-1] - sizes[-2]))
    small = np.zeros(1, np.float64)
    from mpi4py import MPI
    for _ in range(50):
        comm.Allreduce(MPI.IN_PLACE, small)
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(2000):
        comm.Allreduce(MPI.IN_PLACE, small)
    t_ar = (time.perf_counter() - t) / 2000
    # kernels' time per point, one rank's share, no communication in the way
    self_comm = MPI.COMM_SELF
    problem = make_problem(N)
    s = QuicklaunchMPISolver(dev, self_comm, block_of(N, 0, 1), problem.f, overlap="none")
    s.reset()
    s.solve(5)
    best = math.inf
    for _ in range(3):
        s.reset()
        t = time.perf_counter()
        s.solve(30)
        best = min(best, (time.perf_counter() - t) / 30)
    t_launch = s.launch_cost()
    return {"alpha_us": alpha * 1e6, "beta_GBs": 1 / inv_beta / 1e9 if inv_beta > 0 else math.inf,
            "allreduce_us": t_ar * 1e6, "ranks": comm.Get_size(),
            "t_launch_us": t_launch * 1e6,
            "t_point_ns": (best - 5 * t_launch) / (N * N) * 1e9, "N": N,
            "pingpong": {str(k): v * 1e6 for k, v in zip(sizes, times)}}


def predict(N: int, R: int, t_point_ns: float, t_launch_us: float, alpha_us: float,
            beta_GBs: float, launches: int = LAUNCHES) -> dict:
    """Per-iteration time (us) and its parts at R ranks."""
    compute = t_point_ns * N * N / R / 1e3
    rows = N / R
    edges = compute * min(1.0, 2 / rows)
    interior = compute - edges
    halo = 2 * (alpha_us + 4 * (N + 2) / (beta_GBs * 1e3)) if R > 1 else 0.0
    allreduce = 2 * math.ceil(math.log2(R)) * (alpha_us + 8 / (beta_GBs * 1e3)) if R > 1 else 0
    launch = launches * t_launch_us
    total = max(interior, halo) + edges + launch + allreduce
    return {"R": R, "total_us": total, "compute_us": compute, "halo_us": halo,
            "allreduce_us": allreduce, "launch_us": launch,
            "launch_share": launch / total}


def table(title: str, N: int, t_point_ns: float, t_launch_us: float, slower_us: float = 1.0,
          ranks=(8, 64, 512, 4096)) -> str:
    """Predictions on NETWORKS; ``+1us`` is T with a launcher ``slower_us``
    slower per launch over T; ``*`` marks rows where launches cost more than
    the kernels' compute (launch overhead dominates the work)."""
    out = [f"{title}: {N} x {N}, t_point {t_point_ns:.3g} ns, t_launch {t_launch_us:.2f} us",
           f"{'network':<38} {'R':>5} {'rows':>5} {'T us':>8} {'compute':>8} {'halo':>6} "
           f"{'allred':>6} {'launch':>6} {'+1us':>6}  largest"]
    for net, p in NETWORKS.items():
        for R in ranks:
            a = predict(N, R, t_point_ns, t_launch_us, p["alpha_us"], p["beta_GBs"])
            b = predict(N, R, t_point_ns, t_launch_us + slower_us, p["alpha_us"], p["beta_GBs"])
            parts = {"compute": a["compute_us"], "halo": a["halo_us"],
                     "allreduce": a["allreduce_us"], "launch": a["launch_us"]}
            mark = "*" if a["launch_us"] > a["compute_us"] else " "
            out.append(f"{net[:38]:<38} {R:>5} {N / R:>5.0f} {a['total_us']:>8.1f} "
                       f"{a['compute_us']:>8.1f} {a['halo_us']:>6.1f} {a['allreduce_us']:>6.1f} "
                       f"{a['launch_us']:>6.1f} {b['total_us'] / a['total_us']:>5.2f}x "
                       f"{mark}{max(parts, key=parts.get)}")
    return "\n".join(out)


def predictions(fit: dict) -> str:
    """The tables of docs/scale-out.md from a fit (measure())."""
    return "\n\n".join([
        table("CPU ranks, one core each (this machine's fit)", 8192, fit["t_point_ns"],
              fit["t_launch_us"]),
        table("H200 ranks, bandwidth-bound, 2.0 us driver + quicklaunch's launch", 16384,
              GPU["t_point_ns"], GPU["t_launch_driver_us"] + QL_GPU_LAUNCH_US),
        table("H200 ranks, a smaller problem", 4096, GPU["t_point_ns"],
              GPU["t_launch_driver_us"] + QL_GPU_LAUNCH_US)])


# quicklaunch's own host cost over a C caller of cuLaunchKernel, configured launcher,
# 4 arguments (benchmarks/results/null-driver.json: 137 ns)
QL_GPU_LAUNCH_US = 0.14


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mpiexec -n 2 python -m quicklaunch.bench.cg_mpi.model")
    ap.add_argument("--N", type=int, default=512)
    ap.add_argument("--json", default=None)
    ap.add_argument("--predict", default=None, metavar="FIT.json",
                    help="print the predictions from a saved fit (no MPI needed)")
    args = ap.parse_args(argv)
    if args.predict:
        with open(args.predict) as f:
            print(predictions(json.load(f)))
        return 0
    import quicklaunch as ql
    from quicklaunch import mpi as qlmpi
    comm = qlmpi.comm()
    if comm.Get_size() != 2:
        print("run with mpiexec -n 2", file=sys.stderr)
        return 2
    fit = measure(comm, ql.device(), args.N)
    if comm.Get_rank() == 0:
        print(json.dumps(fit, indent=1))
        print(predictions(fit))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(fit, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

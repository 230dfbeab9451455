"""``mpiexec -n R python -m quicklaunch.bench.cg_mpi``: the distributed CG at
R ranks, a strong-scaling size (fixed N) and a weak-scaling size (N = weak-N
x sqrt(R): a fixed share per rank), quicklaunch beside NumPy.

``python -m quicklaunch.bench.cg_mpi --sweep 1,2,4`` runs mpiexec once per
rank count and prints the strong and weak tables (speedup: vs the first R;
for weak scaling, 1.0 is perfect)."""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile


def _args(argv):
    ap = argparse.ArgumentParser(prog="python -m quicklaunch.bench.cg_mpi", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--N", type=int, default=512, help="strong-scaling grid (default 512)")
    ap.add_argument("--weak-N", type=int, default=256,
                    help="weak scaling: the grid at one rank (default 256)")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default=None, help="default: ql.device() (per local rank)")
    ap.add_argument("--overlap", default="auto", choices=("auto", "stream", "none"))
    ap.add_argument("--impl", default="quicklaunch,numpy")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the single-rank reference solve")
    ap.add_argument("--json", default=None, help="write the results here (rank 0)")
    ap.add_argument("--sweep", default=None, help="rank counts, e.g. 1,2,4: runs mpiexec")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every residual is within tolerance of 1 rank's")
    return ap.parse_args(argv)


def _sweep(args, argv) -> int:
    mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable),
                                                       "mpiexec")
    rest = [a for a in argv if not a.startswith("--sweep")]
    skip = argv[argv.index("--sweep") + 1] if "--sweep" in argv else None
    rest = [a for a in rest if a != skip]
    results = []
    with tempfile.TemporaryDirectory() as d:
        for R in [int(v) for v in args.sweep.split(",")]:
            out = os.path.join(d, f"{R}.json")
            cmd = [mpiexec, "-n", str(R), sys.executable, "-m", "quicklaunch.bench.cg_mpi",
                   *rest, "--json", out]
            print("$", " ".join(cmd[:3]), "python -m quicklaunch.bench.cg_mpi", *rest,
                  file=sys.stderr, flush=True)
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
            if rc:
                return rc
            with open(out) as f:
                results.append(json.load(f))
    from .report import table
    print(table([r["strong"] for r in results], "strong scaling (fixed N)"))
    print()
    print(table([r["weak"] for r in results], "weak scaling (fixed N^2 / R)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    ok = all(row.get("within_tolerance", True) for r in results
             for case in (r["strong"], r["weak"]) for row in case["rows"].values())
    return 0 if ok or not args.check else 1


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _args(argv)
    if args.sweep:
        return _sweep(args, argv)
    import quicklaunch as ql
    from quicklaunch import mpi as qlmpi
    comm = qlmpi.comm()                    # a failing rank aborts the job, named
    dev = ql.device(args.device)
    from .report import table, run_case
    impls = tuple(args.impl.split(","))
    R = comm.Get_size()
    weak_N = max(R, round(args.weak_N * math.sqrt(R)))
    res = {"ranks": R, "device": dev.name, "choice": qlmpi.device_choice(),
           "strong": run_case(comm, dev, args.N, args.iterations, repeats=args.repeats,
                              impls=impls, overlap=args.overlap,
                              reference=not args.no_reference),
           "weak": run_case(comm, dev, weak_N, args.iterations, repeats=args.repeats,
                            impls=impls, overlap=args.overlap,
                            reference=not args.no_reference)}
    if comm.Get_rank() == 0:
        print(f"{R} ranks on {dev.name}; {args.iterations} CG iterations")
        print(table([res["strong"]], "strong"))
        print(table([res["weak"]], "weak"))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
    ok = all(row.get("within_tolerance", True) for case in (res["strong"], res["weak"])
             for row in case["rows"].values())
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())

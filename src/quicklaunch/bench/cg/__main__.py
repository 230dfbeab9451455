"""``python -m quicklaunch.bench.cg [--device D] [--quick]``: runs the CG
benchmark (runner.run) and prints the table (report.py)."""
from __future__ import annotations

import argparse
import json
import sys
import time

from ...errors import QuicklaunchError
from .report import residual_table, table
from .runner import DEFAULT_SIZES, run


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.cg",
                                description="CG on the 2D Poisson equation: quicklaunch, "
                                            "NumPy and the peers that are installed.")
    p.add_argument("--device", default=None, help="quicklaunch device (default: ql.device())")
    p.add_argument("--quick", action="store_true", help="N <= 128, one repeat (seconds)")
    p.add_argument("--sizes", default=None, help="comma-separated grid sizes N "
                                                 f"(default {','.join(map(str, DEFAULT_SIZES))})")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default=None, help="comma-separated implementations")
    p.add_argument("--residuals", action="store_true", help="also print the residuals")
    p.add_argument("--json", default=None, help="write the result as JSON to this file")
    a = p.parse_args(argv)
    sizes = tuple(int(s) for s in a.sizes.split(",")) if a.sizes else DEFAULT_SIZES
    only = [s.strip() for s in a.only.split(",")] if a.only else None
    t0 = time.monotonic()

    def progress(done, total, what):
        print(f"[{done}/{total} {time.monotonic() - t0:6.1f}s] {what}", file=sys.stderr,
              flush=True)

    try:
        result = run(device=a.device, sizes=sizes, implementations=only,
                     iterations=a.iterations, repeats=a.repeats, quick=a.quick,
                     progress=progress)
    except (QuicklaunchError, ValueError) as exc:   # a device that is not there, a bad size
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(table(result))
    if a.residuals:
        print()
        print(residual_table(result))
    print(f"\n({time.monotonic() - t0:.0f} s in all)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

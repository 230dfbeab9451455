"""Launch overhead: quicklaunch's three launch paths side by side with a C
loop calling the same backend entry and with the C-extension floor.

    python benchmarks/launch.py [--device cpu] [--iters 200000] [--repeats 9]

Prints the table and writes benchmarks/results/launch-<device>.json.
Method and latest figures: benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from quicklaunch.bench.launch import measure, table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--iters", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args()
    result = measure(args.device, iters=args.iters, repeats=args.repeats)
    result["machine"] = f"{platform.machine()}, {platform.processor() or 'cpu'}, " \
                        f"python {platform.python_version()}"
    print(table(result))
    out = Path(__file__).with_name("results") / f"launch-{result['device']}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()

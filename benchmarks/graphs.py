"""Graph replay against individual launches, and a heat-equation time loop.

    python benchmarks/graphs.py [--device cpu] [--repeats 9] [--out FILE]

Prints the table and writes benchmarks/results/graphs-<device>.json. The
benchmark: quicklaunch.bench.graphs. Figures: benchmarks/README.md.
"""
import sys
from pathlib import Path

from quicklaunch.bench.graphs import main

if __name__ == "__main__":
    sys.exit(main(results_dir=Path(__file__).resolve().with_name("results")))

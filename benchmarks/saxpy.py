"""saxpy on the CPU device at N = 1e3, 1e5, 1e7, beside NumPy and a C loop.

    python benchmarks/saxpy.py [--repeats 15]

Prints the rows and writes benchmarks/results/saxpy-cpu.json. The
benchmark: quicklaunch.bench.cpu.saxpy. Figures: benchmarks/README.md.
"""
import sys
from pathlib import Path

from quicklaunch.bench.cpu.saxpy import main

if __name__ == "__main__":
    sys.exit(main(results_dir=Path(__file__).resolve().with_name("results")))

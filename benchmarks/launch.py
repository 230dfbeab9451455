"""Launch overhead: quicklaunch's launch paths side by side with a C loop
calling the same launch entry and with the C-extension floor.

    python benchmarks/launch.py [--device cpu] [--iters 200000] [--repeats 9]

Prints the table and writes benchmarks/results/launch-<device>.json. The
benchmark: quicklaunch.bench.launch. Method and latest figures:
benchmarks/README.md.
"""
import sys
from pathlib import Path

from quicklaunch.bench.launch import main

if __name__ == "__main__":
    sys.exit(main(results_dir=Path(__file__).resolve().with_name("results")))

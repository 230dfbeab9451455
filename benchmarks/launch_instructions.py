"""Launch overhead counted: instructions per step of the launch benchmark's
loop (valgrind's callgrind), for the floor and every quicklaunch launch path.

    python benchmarks/launch_instructions.py [--device cpu] [--quick]

Prints the table and writes benchmarks/results/launch-instructions-<device>.json.
The benchmark: quicklaunch.bench.instructions. Method and latest figures:
benchmarks/README.md.
"""
import sys
from pathlib import Path

from quicklaunch.bench.instructions import main

if __name__ == "__main__":
    sys.exit(main(results_dir=Path(__file__).resolve().with_name("results")))

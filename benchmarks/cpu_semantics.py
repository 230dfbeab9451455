"""CUDA semantics on the CPU device: what barriers and warp functions cost.

    python benchmarks/cpu_semantics.py

Prints the rows and writes benchmarks/results/cpu-semantics.json. The
benchmark: quicklaunch.bench.cpu.semantics. Figures: benchmarks/README.md.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy: no BLAS threads spinning
from quicklaunch.bench.cpu.semantics import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(results_dir=Path(__file__).resolve().with_name("results")))

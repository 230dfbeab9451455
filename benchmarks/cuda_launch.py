"""CUDA launch overhead: quicklaunch's three launch paths, a C loop calling
cuLaunchKernel with the same kernel handle, and every peer that is installed
(cuda.core, CuPy, torch, Numba-CUDA, Triton, Warp), side by side in one run.

    python benchmarks/cuda_launch.py [--quick] [--out DIR] [--only quicklaunch,cupy]

Prints a Markdown table and writes DIR/results.json and DIR/results.md
(default DIR: benchmarks/results/gpu). A peer that is missing, fails or
crashes is a row that says why. Exit status 0 when quicklaunch's own rows
were measured. Method: benchmarks/README.md ("CUDA launch overhead");
machinery: src/quicklaunch/bench/cuda/launch.py (its docstring maps the modules);
the one-call check for a fresh GPU machine: benchmarks/gpu_check.sh.
"""
import sys
from pathlib import Path

from quicklaunch.bench.cuda.launch import main

if __name__ == "__main__":
    sys.exit(main(default_out=Path(__file__).resolve().parent / "results" / "gpu"))

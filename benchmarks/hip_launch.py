"""HIP launch overhead: quicklaunch's launch paths against a C loop calling
hipModuleLaunchKernel with the same kernel handle, and CuPy-ROCm and
torch-ROCm when they are installed.

    python benchmarks/hip_launch.py [--device hip:0] [--quick] [--out DIR]

Writes DIR/hip_results.json and DIR/hip_results.md (default DIR:
benchmarks/results/hip). The benchmark: quicklaunch.bench.hip.launch;
the one-call check for a machine with an AMD GPU: benchmarks/hip_check.sh.
"""
import sys
from pathlib import Path

from quicklaunch.bench.hip.launch import main

if __name__ == "__main__":
    sys.exit(main(default_out=Path(__file__).resolve().parent / "results" / "hip"))

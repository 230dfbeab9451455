"""The benchmarks that ship with the package, by device, over one harness.

    suite.py, suite_report.py, plots.py   ``quicklaunch bench``: the main job
    launch.py     launch overhead beside C and the floors, on any device
    graphs.py     graph replay against individual launches, on any device
    harness/      what they all share: sources and rows, timers, the
                  benchmark kernels, measuring, child processes, machine
                  facts, JSON results, and the C baseline (baseline.c) on
                  a device's launch entry
    cpu/          the CPU peers, saxpy, barriers and warp functions
    cuda/         the CUDA launch benchmark and its peers
    hip/          the HIP launch benchmark
    cg/           conjugate gradient on 2D Poisson, every implementation

Each command runs as ``python -m quicklaunch.bench.<name>``; benchmarks/
holds thin scripts that write their results to benchmarks/results/. The
benchmarks reach a device through the public API and the backend interface
only (``ql.device(...).backend.launch_entry`` and ``.entry_library``).
``_floor.c`` is the C-extension floor (quicklaunch.bench._floor).
"""

"""The sources of the CUDA launch benchmark, in table order.

``SOURCES`` (the default ``--sources``, quicklaunch.bench.gpu_sources:SOURCES)
is quicklaunch with its C baseline (gpu_quicklaunch.py), then every peer:
cuda.core, CuPy and torch (gpu_peers.py), Numba-CUDA, Triton and Warp
(gpu_peers_jit.py), then the reference rows. Each is a Source (gpu_model.py)
whose setup imports its library, compiles the empty kernels and returns
timers; no peer library is imported until its setup runs.
"""
from .peers import LIBRARY_PEERS
from .peers_jit import JIT_PEERS
from .quicklaunch import QUICKLAUNCH, REFERENCE

PEERS = [*LIBRARY_PEERS, *JIT_PEERS]

SOURCES = [QUICKLAUNCH, *PEERS, REFERENCE]

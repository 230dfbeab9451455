"""The sources of the CUDA launch benchmark, in table order.

``SOURCES`` (the default ``--sources``, quicklaunch.bench.cuda.sources:SOURCES)
is quicklaunch with its C baseline (quicklaunch.py), then every peer:
cuda.core, CuPy and torch (peers.py), Numba-CUDA, Triton and Warp
(peers_jit.py), then the reference rows. Each is a Source (harness/model.py)
whose setup imports its library, compiles the empty kernels and returns
timers; no peer library is imported until its setup runs.
"""
from .peers import LIBRARY_PEERS
from .peers_jit import JIT_PEERS
from .quicklaunch import QUICKLAUNCH, REFERENCE

PEERS = [*LIBRARY_PEERS, *JIT_PEERS]

SOURCES = [QUICKLAUNCH, *PEERS, REFERENCE]

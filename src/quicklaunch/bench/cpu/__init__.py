"""Benchmarks of the CPU device: its peers in ``quicklaunch bench``
(peers.py, peers_interp.py), saxpy against NumPy and C (saxpy.py), barriers
and warp functions (semantics.py)."""

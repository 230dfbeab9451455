"""The CUDA launch benchmark: quicklaunch, a C loop on the same launch entry
and the peers (launch.py maps the modules)."""

"""``python -m quicklaunch.bench.cuda``: the CUDA launch benchmark (launch.py)."""
import sys

from .launch import main

sys.exit(main())

"""``python -m quicklaunch.bench.hip``: the HIP launch benchmark (launch.py)."""
import sys

from .launch import main

sys.exit(main())

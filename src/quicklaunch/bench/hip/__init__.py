"""The HIP launch benchmark (launch.py)."""

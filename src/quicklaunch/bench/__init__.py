"""Launch benchmarks that ship with the package (``quicklaunch bench``)."""

"""What every benchmark of ``quicklaunch.bench`` shares: the vocabulary of
sources and rows (model.py), timers (timing.py), the benchmark kernels and
each library's arguments (kernels.py), round-robin measurement (measure.py),
child processes (workers.py), a whole run (run.py), machine facts
(facts.py) and the C baseline (baseline.py, baseline.c)."""

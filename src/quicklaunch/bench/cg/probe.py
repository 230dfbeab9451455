"""Child-process probes for the peers: a crash costs a row, not the run.

Warp, Numba and PyOpenCL load native code (a JIT, an OpenCL driver) that can
kill the interpreter rather than raise. Before ``run`` imports one, it runs
``probe.main([DEVICE, NAME, ...])`` in a child process
for each library (all its rows): import, ``prepare`` (compiling, so the
child also fills the on-disk caches the parent then loads from) and a
two-iteration solve on an 8 x 8 grid. The libraries are probed in parallel. A child that dies by a signal, hangs past
``TIMEOUT`` seconds or exits without an answer gives its rows that reason;
one that raised reports the row status the parent would have written.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from ..harness.workers import child_env, crash_name

TIMEOUT = 180.0
# the rows probed first, by library: one child per library
LIBRARIES = {"warp": ("warp", "warp graph"), "numba": ("numba",), "pyopencl": ("pyopencl",)}
PROBED = {row for rows in LIBRARIES.values() for row in rows}


def command(device: str, names) -> list[str]:
    code = "import sys; from quicklaunch.bench.cg.probe import main; sys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", code, device, *names]


def _verdicts(names, proc, out: str, timed_out: bool, timeout: float) -> dict:
    """{name: None (works) or the reason} from one child's end."""
    if timed_out:
        why = f"failed: the probe gave no answer in {timeout:.0f} s (hung?)"
    elif proc.returncode < 0:
        why = (f"failed: crashed ({crash_name(proc.returncode)}) in a probe (import, compile, "
               f"8x8 solve)")
    else:
        for line in reversed(out.splitlines()):
            if line.startswith("{"):
                try:
                    status = json.loads(line)["status"]
                    return {n: None if status.get(n) == "ok" else str(status.get(n, "?"))
                            for n in names}
                except (ValueError, KeyError, TypeError, AttributeError):
                    break
        tail = " ".join(out.split())[-160:]
        why = f"failed: the probe exited with status {proc.returncode} ({tail})"
    return {n: why for n in names}


def probe_all(groups: dict, timeout: float = TIMEOUT) -> dict:
    """{library: (row names, command)} -> {row name: None (works) or the
    reason}; the children run in parallel."""
    procs = {lib: (names, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=child_env(), text=True))
             for lib, (names, cmd) in groups.items()}
    deadline = time.monotonic() + timeout
    verdicts = {}
    for names, proc in procs.values():
        try:
            out, _ = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            timed_out = True
        verdicts.update(_verdicts(names, proc, out or "", timed_out, timeout))
    return verdicts


def main(argv) -> int:
    """The child: prints one JSON line {"status": {name: "ok" | reason}}."""
    device, names = argv[0], argv[1:]
    from .impl import describe
    from .problem import make_problem
    from .registry import registry
    status = {}
    for name in names:
        try:
            import quicklaunch as ql
            impl = registry()[name]
            impl.prepare(ql.device(device))
            solver = impl.solver(make_problem(8))
            solver.reset()
            solver.solve(2)
            solver.result()
            status[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - the status is the answer
            status[name] = describe(exc)
    print(json.dumps({"status": status}), flush=True)
    return 0

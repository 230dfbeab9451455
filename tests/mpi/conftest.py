"""MPI tests: each runs ``mpiexec -n R`` on a small script in a subprocess,
with a timeout, so a hang fails the test instead of the suite. Skipped,
with the reason, when mpiexec or mpi4py is missing (pip install
'quicklaunch[mpi]')."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _mpiexec() -> str | None:
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()


def _why_not() -> str | None:
    if MPIEXEC is None:
        return "no mpiexec on PATH or beside the interpreter (pip install 'quicklaunch[mpi]')"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install 'quicklaunch[mpi]')"
    return None


PRELUDE = """\
import json as _json, os as _os, itertools as _it
_emitted = _it.count()
def emit(obj):
    name = _os.path.join({out!r}, f"{{_os.getpid()}}-{{next(_emitted)}}.json")
    with open(name + ".tmp", "w") as f:
        _json.dump(obj, f)
    _os.replace(name + ".tmp", name)
"""


@pytest.fixture
def mpirun(tmp_path):
    """mpirun(n, script_text, timeout=..., env=...) -> CompletedProcess;
    what each rank passes to ``emit(obj)`` comes back in ``.records`` (one
    file per call: ranks' stdout lines can interleave)."""
    why = _why_not()
    if why:
        pytest.skip(why)

    def run(n: int, script: str, timeout: float = 30, env=None, args=()):
        path = tmp_path / "script.py"
        out = tmp_path / "records"
        out.mkdir(exist_ok=True)
        path.write_text(PRELUDE.format(out=str(out)) + textwrap.dedent(script))
        full = dict(os.environ)
        full.pop("QUICKLAUNCH_DEVICE", None)
        full.update(env or {})
        cmd = [MPIEXEC, "-n", str(n), sys.executable, str(path), *args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=full, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"mpiexec -n {n} hung past {timeout} s; output so far:\n"
                        f"{exc.stdout}\n{exc.stderr}")
        proc.records = [json.loads(f.read_text()) for f in sorted(out.glob("*.json"))]
        return proc

    return run

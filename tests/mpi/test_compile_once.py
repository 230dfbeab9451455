"""One compile per node: 4 ranks, an empty cache, one compiler run
(counted by a $CXX wrapper that logs every compile and passes it on)."""
import os
import shutil
import stat

import pytest

SCRIPT = """
import numpy as np
import quicklaunch as ql
from quicklaunch import mpi as qm
comm = qm.comm()
m = ql.compile('extern "C" __global__ void once(float *a) { a[threadIdx.x] += 1.0f; }')
a = np.zeros(8, np.float32)
m.once[1, 8](a)
assert a.sum() == 8
comm.Barrier()
print("done", comm.Get_rank())
"""


def test_four_ranks_compile_a_module_once(mpirun, tmp_path):
    real = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if real is None:
        pytest.skip("no host C++ compiler")
    log = tmp_path / "compiles.log"
    wrapper = tmp_path / "cxx"
    wrapper.write_text(f"""#!/bin/sh
case " $* " in *" -E "*|*" --version "*|*" -dumpversion "*) ;;
  *) echo "$$ $*" >> "{log}";; esac
exec {real} "$@"
""")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    proc = mpirun(4, SCRIPT, timeout=60,
                  env={"CXX": str(wrapper), "QUICKLAUNCH_CACHE_DIR": str(cache)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("done") == 4
    runs = log.read_text().splitlines() if log.exists() else []
    # each process probes its compiler's flags once (-fsyntax-only on /dev/null);
    # what is counted is the module's compile
    runs = [r for r in runs if "/dev/null" not in r]
    assert len(runs) == 1, runs

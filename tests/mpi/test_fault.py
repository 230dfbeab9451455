"""A rank whose kernel faults ends the whole job, with the error named,
instead of leaving the other ranks blocked in a collective."""
import pytest

SCRIPT = """
import numpy as np
import quicklaunch as ql
from quicklaunch import mpi as qm
comm = qm.comm()
m = ql.compile('extern "C" __global__ void faulty_kernel(int *flag, int *bad)'
               '{ if (flag[0]) { if (flag[0] == 2) *bad = 1; else __trap(); } }')
flag = np.array([MODE if comm.Get_rank() == 1 else 0], np.int32)
m.faulty_kernel[1, 1](flag, 16)          # rank 1 faults
comm.Barrier()                           # rank 0 waits here: must not hang
print("SURVIVED", comm.Get_rank())
"""


@pytest.mark.parametrize("mode, what", [(1, "__trap()"), (2, "")])
def test_a_faulting_rank_aborts_the_job_naming_the_error(mpirun, mode, what):
    proc = mpirun(2, SCRIPT.replace("MODE", str(mode)), timeout=30)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "SURVIVED" not in proc.stdout
    assert "rank 1 failed: LaunchError" in out and "faulty_kernel" in out, out
    assert what in out

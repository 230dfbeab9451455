"""ql buffers straight into mpi4py: Sendrecv and Allreduce round trips, no
copies, and the stream rule in debug mode."""

SCRIPT = """
import numpy as np
import quicklaunch as ql
from quicklaunch import mpi as qm
comm = qm.comm()
rank, size = comm.Get_rank(), comm.Get_size()
dev = ql.device()
send = ql.asarray(np.arange(8, dtype=np.float32) + 100 * rank, device=dev)
recv = ql.zeros(8, np.float32, device=dev)
other = (rank + 1) % size
qm.sendrecv(send, other, recv, other)
# a window (a halo row): elements 2..5 of send into 4..7 of recv
comm.Sendrecv(qm.buffer(send, 2, 3), other, 7, qm.buffer(recv, 4, 3), other, 7)
acc = ql.asarray(np.full(4, rank + 1, np.float64), device=dev)
qm.allreduce(acc)
view = qm.buffer(send)
emit({
    "rank": rank, "recv": recv.numpy().tolist(), "sum": acc.numpy().tolist(),
    "zero_copy": bool(np.shares_memory(view, send.numpy())),
    "window_zero_copy": bool(np.shares_memory(qm.buffer(send, 2, 3), send.numpy()))})
"""


def test_sendrecv_and_allreduce_round_trip_without_copies(mpirun):
    proc = mpirun(2, SCRIPT)
    assert proc.returncode == 0, proc.stderr
    by = {r["rank"]: r for r in proc.records}
    for rank in (0, 1):
        peer = 100 * (1 - rank)
        want = [float(v + peer) for v in range(8)]
        want[4:7] = [float(v + peer) for v in (2, 3, 4)]
        assert by[rank]["recv"] == want
        assert by[rank]["sum"] == [3.0] * 4
        assert by[rank]["zero_copy"] and by[rank]["window_zero_copy"]


PENDING = """
import numpy as np
import quicklaunch as ql
from quicklaunch import mpi as qm
comm = qm.comm()
dev = ql.device()
# a fast-path module (debug launches are synchronous: they cannot break the rule)
m = ql.compile('extern "C" __global__ void spin(float *a, int n)'
               '{ for (int i = 0; i < n; ++i) a[0] = a[0] * 0.5f + 1.0f; }', device=dev,
               debug=False)
buf = ql.zeros(4, np.float32, device=dev)
s = ql.Stream(device=dev)
m.spin[1, 1, 0, s](buf, 1 << 28)        # a second of work, queued
try:
    qm.allreduce(buf, streams=s)
    print("NOT RAISED")
except qm.PendingStreamError as exc:
    print("RAISED", exc)
s.synchronize()
qm.allreduce(buf, streams=s)             # the rule kept: fine
print("OK", comm.Get_rank())
"""


def test_debug_mode_raises_on_a_buffer_with_pending_stream_work(mpirun):
    proc = mpirun(2, PENDING, env={"QUICKLAUNCH_DEBUG": "1"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("RAISED") == 2 and "NOT RAISED" not in proc.stdout, proc.stdout
    assert "still has work queued" in proc.stdout
    assert proc.stdout.count("OK") == 2

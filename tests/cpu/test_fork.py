"""fork() with streams: the child's copies of the parent's streams, events
and pool work (recreated on first use); work queued in the parent at fork
time did not run in the child, and the stream's next synchronisation says
so. Never a hang: each case runs in a child process with a timeout."""
import pytest

from . import _runaway


@pytest.fixture(scope="module", autouse=True)
def warm(cpu):
    _runaway.warm_cache()


CHILD = """
flag = np.zeros(4, np.int32)
s = ql.Stream()
e = ql.Event()
o = np.zeros(64 * 1024, np.int32)
m.one[64, 1024](o)       # the pool has started
m.spin[1, 1, 0, s](flag)  # running on the stream's thread at fork time
m.one[1, 1, 0, s](o)      # and queued behind it
e.record(s)
pid = os.fork()
if pid == 0:
    code = 1
    try:
        try:
            s.synchronize()
            print("child: synchronize returned", flush=True)
        except ql.LaunchError as exc:
            print("child:", exc, flush=True)
        e.synchronize()  # its record was dropped: does not wait for ever
        o2 = np.zeros(64 * 1024, np.int32)
        m.one[64, 1024](o2)                  # the pool, recreated
        m.one[1, 32](o2)                     # inline
        m.one[64, 1024, 0, s](o2)            # the inherited stream, with a new thread
        s.synchronize()
        s2 = ql.Stream()
        m.one[1, 32, 0, s2](o2)
        e.record(s2)
        e.synchronize()
        ql.device("cpu").synchronize()
        s.close()
        s2.close()
        print("child ok", int(o2.sum()), flush=True)
        code = 0
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
flag[0] = 1
s.synchronize()
print("parent ok", os.waitstatus_to_exitcode(status), int(o[0]), int(o[1]), flush=True)
"""


def test_fork_with_a_busy_stream():
    rc, out, err = _runaway.run(CHILD, timeout=60)
    assert rc == 0, (out, err)
    lines = out.splitlines()
    assert any("Stream.synchronize(): 3 pieces of work queued on this stream in the parent "
               "process did not run in this fork() child" in s for s in lines), out
    assert "child ok 131136" in lines, (out, err)
    assert "parent ok 0 2 1" in lines, (out, err)

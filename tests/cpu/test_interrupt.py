"""Runaway kernels can be stopped: Ctrl-C (SIGINT) raises KeyboardInterrupt
at the launch, whether the kernel runs inline on the calling thread, over the
pool or on a stream, and the process launches again; a timeout
(QUICKLAUNCH_CPU_TIMEOUT, runtime.set_timeout, Stream(timeout=...)) is a
LaunchError naming the kernel and the blocks still running, in every tier,
graph replays and cooperative launches included. Each case runs in
a child process, so a failure cannot hang the suite."""
import mmap
import os
import signal
import time

import numpy as np
import pytest

from . import _runaway


@pytest.fixture(scope="module", autouse=True)
def warm(cpu):
    _runaway.warm_cache()


SIGINT_CHILD = """
flag = np.memmap(sys.argv[1] if len(sys.argv) > 1 else os.environ["QL_TEST_FLAG"], np.int32,
                 "r+", shape=(4,))
s = ql.Stream()
cases = [("inline", lambda: m.spin[1, 1](flag)),
         ("pooled", lambda: m.spin[64, 1024](flag)),
         ("stream", lambda: (m.spin[2, 1, 0, s](flag), m.spin[2, 1, 0, s](flag), s.synchronize()))]
for what, launch in cases:
    flag[1] = 0
    print("ready", what, flush=True)
    try:
        launch()
        print("returned", what, flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", what, flush=True)
    o = np.zeros(64, np.int32)
    m.one[2, 32](o)
    m.one[2, 32, 0, s](o)
    s.synchronize()
    print("alive", what, int(o.sum()), flush=True)
"""


def wait_started(view, timeout=20.0):
    deadline = time.monotonic() + timeout
    while np.frombuffer(view, np.int32, 4)[1] == 0:
        assert time.monotonic() < deadline, "the kernel never started"
        time.sleep(0.005)


def test_sigint_stops_inline_pooled_and_stream_kernels(tmp_path):
    path = tmp_path / "flag"
    path.write_bytes(bytes(16))
    p = _runaway.child(SIGINT_CHILD, QL_TEST_FLAG=path)
    lines = []
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 16) as view:
        try:
            for line in p.stdout:
                lines.append(line.strip())
                if line.startswith("ready"):
                    wait_started(view)
                    time.sleep(0.05)  # the launch is inside the kernel's loop
                    p.send_signal(signal.SIGINT)
            p.wait(timeout=20)
        finally:
            if p.poll() is None:
                p.kill()
            del view  # noqa: F821 - the mapping closes with the block
    err = p.stderr.read()
    for what in ("inline", "pooled", "stream"):
        assert f"KeyboardInterrupt {what}" in lines, (lines, err)
        assert f"alive {what} 128" in lines, (lines, err)
    assert p.returncode == 0, err


TIMEOUT_CHILD = """
from quicklaunch.backends.cpu import runtime
flag = np.zeros(4, np.int32)
def attempt(what, launch):
    t = time.monotonic()
    try:
        launch()
        print(what, "returned")
    except ql.LaunchError as e:
        print(what, round(time.monotonic() - t, 1), e, flush=True)
attempt("inline", lambda: m.spin[1, 1](flag))
attempt("pair", lambda: m.pair[2, 1](flag))
attempt("pooled", lambda: m.spin[64, 1024](flag))
s = ql.Stream()
m.spin[1, 1, 0, s](flag)
attempt("stream", s.synchronize)
attempt("fiber", lambda: m.fiber_spin[2, 64](flag))
run = m.spin.configure(1, 1)
with ql.graph() as g:
    run(flag)
attempt("graph", g.replay)
attempt("grid", lambda: m.grid_spin.configure(3, 32, cooperative=True)(flag))
runtime.set_timeout(0)
s2 = ql.Stream(timeout=0.2)
m.spin[3, 1, 0, s2](flag)
attempt("own", s2.synchronize)
o = np.zeros(64, np.int32)
m.one[2, 32](o)
m.one[2, 32, 0, s2](o)
s2.synchronize()
print("alive", int(o.sum()), runtime.timeout())
"""


def test_timeouts_name_the_kernel_and_the_blocks_still_running():
    rc, out, err = _runaway.run(TIMEOUT_CHILD, timeout=60, QUICKLAUNCH_CPU_TIMEOUT="0.2")
    assert rc == 0, err
    lines = {line.split()[0]: line for line in out.splitlines()}
    env = "timed out after 0.200 s (QUICKLAUNCH_CPU_TIMEOUT)"
    assert "kernel 'spin'" in lines["inline"] and env in lines["inline"]
    assert "with 1 block still running: block (0, 0, 0)" in lines["inline"]
    # block 0 waits for block 1, which never ran: both run on the caller
    assert "kernel 'pair'" in lines["pair"] and "block (0, 0, 0)" in lines["pair"]
    assert "kernel 'spin'" in lines["pooled"] and "blocks still running" in lines["pooled"]
    assert "Stream.synchronize()" in lines["stream"] and env in lines["stream"]
    assert "kernel 'fiber_spin'" in lines["fiber"] and "block (0, 0, 0)" in lines["fiber"]
    assert "Graph.replay()" in lines["graph"] and env in lines["graph"]
    assert "kernel 'grid_spin'" in lines["grid"] and "block (1, 0, 0)" in lines["grid"]
    assert "timed out after 0.200 s (the stream's timeout)" in lines["own"]
    assert "with 3 blocks still running" not in lines["own"]  # one thread: one at a time
    assert lines["alive"] == "alive 128 0.0"
    # about the timeout, not the suite's patience (a loaded machine is slow)
    assert float(lines["inline"].split()[1]) < 10


def test_no_timeout_by_default(cpu):
    from quicklaunch.backends.cpu import runtime
    assert runtime.timeout() == 0.0 or os.environ.get("QUICKLAUNCH_CPU_TIMEOUT")

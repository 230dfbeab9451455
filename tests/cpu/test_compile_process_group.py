"""A CPU compile runs in a process group of its own, and every way it can
end (timeout, Ctrl-C, an error, success) leaves none of its processes
behind: not the driver, not cc1plus (issue 14, item 2).

The compile is made to hang deterministically, without burning CPU: the
source includes a FIFO no one writes, so cc1plus blocks opening it."""
import os
import signal
import subprocess
import time

import pytest

import quicklaunch as ql
from quicklaunch.backends.cpu import toolchain

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")

KERNEL = "__global__ void k(int *x) { x[0] = 1; }\n"


def _members(pgid: int) -> list[str]:
    """'pid (comm) state' of the live (not zombie) processes in group pgid."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm_end = stat.rindex(")")
        fields = stat[comm_end + 2:].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            out.append(f"{entry} {stat[stat.index('('):comm_end + 1]} {state}")
    return out


@pytest.fixture
def groups(monkeypatch):
    """The process group of each compiler run (its leader's pid)."""
    started: list[int] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        started.append(proc.pid)
        return proc
    monkeypatch.setattr(toolchain.subprocess, "Popen", popen)
    return started


def _gone(pgid: int, wait: float = 5.0) -> list[str]:
    deadline = time.monotonic() + wait
    while True:
        left = _members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _hung_compile(tmp_path, in_scan: bool):
    fifo = tmp_path / "never_written.h"
    os.mkfifo(fifo)
    if in_scan:     # the preprocessing scan hangs
        return KERNEL, [f"-include{fifo}", "-DX=1"]
    # The scan passes; the real build (no QL_SCAN_KERNELS) hangs.
    return f'#ifndef QL_SCAN_KERNELS\n#include "{fifo}"\n#endif\n{KERNEL}', ["-DX=2"]


def _need_gcc():
    if "clang" in toolchain.find_compiler().version.lower():
        pytest.skip("cc1plus is g++'s (clang++ runs its -cc1 in one process)")


def _seen_hanging(pgid: int) -> None:
    """The run's cc1plus really started (and so was a child to be ended)."""
    deadline = time.monotonic() + 20
    while not any("cc1" in m for m in _members(pgid)):
        assert time.monotonic() < deadline, "cc1plus never started"
        time.sleep(0.05)


@pytest.mark.parametrize("in_scan", [True, False], ids=["scan", "build"])
def test_timeout_ends_the_whole_group(cpu, tmp_path, monkeypatch, groups, in_scan):
    _need_gcc()
    source, options = _hung_compile(tmp_path, in_scan)
    monkeypatch.setenv("QUICKLAUNCH_COMPILE_TIMEOUT", "3")
    with pytest.raises(ql.CompileError, match=r"ran for more than 3 s and was stopped"):
        ql.compile(source, device=cpu, options=options)
    assert groups, "no compiler run was started"
    pgid = groups[-1]
    assert pgid != os.getpgrp()        # a group of its own
    assert _gone(pgid) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_ctrl_c_ends_the_whole_group(cpu, tmp_path, groups):
    _need_gcc()
    source, options = _hung_compile(tmp_path, in_scan=True)
    seen = {}

    def interrupt(signum, frame):
        seen["members"] = _members(groups[-1]) if groups else []
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        with pytest.raises(KeyboardInterrupt):
            ql.compile(source, device=cpu, options=options)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    pgid = groups[-1]
    assert any("cc1" in m for m in seen["members"]), seen   # it was running
    assert _gone(pgid) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_failed_and_successful_compiles_leave_nothing(cpu, groups):
    with pytest.raises(ql.CompileError):
        ql.compile("__global__ void k(int *x) { x[0] = ; }", device=cpu, options=["-DX=3"])
    ql.compile(KERNEL, device=cpu, options=["-DX=4"])
    assert len(groups) >= 2
    for pgid in groups:
        assert _gone(pgid) == []


def test_timeout_must_be_a_positive_number(monkeypatch):
    monkeypatch.setenv("QUICKLAUNCH_COMPILE_TIMEOUT", "soon")
    with pytest.raises(ql.CompileError, match="QUICKLAUNCH_COMPILE_TIMEOUT"):
        toolchain.compile_timeout()
    monkeypatch.setenv("QUICKLAUNCH_COMPILE_TIMEOUT", "0")
    with pytest.raises(ql.CompileError, match="positive"):
        toolchain.compile_timeout()
    monkeypatch.setenv("QUICKLAUNCH_COMPILE_TIMEOUT", "2.5")
    assert toolchain.compile_timeout() == 2.5

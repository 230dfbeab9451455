"""abort(), exit(), _Exit() and quick_exit() in a kernel are a LaunchError
naming the CUDA thread, as __trap() is, and the process lives on; a fault
through a non-canonical pointer says so instead of reporting address 0x0."""
import platform

import pytest

from . import _runaway


@pytest.fixture(scope="module", autouse=True)
def warm(cpu):
    _runaway.warm_cache()


CHILD = """
o = np.zeros(64, np.int32)
for how in range(4):
    try:
        m.ends[2, 32](o, how, 40)
        print("returned", how)
    except ql.LaunchError as e:
        print("caught", how, e)
try:
    m.ends_fiber[2, 64](np.zeros(128, np.int32), 70)
except ql.LaunchError as e:
    print("caught fiber", e)
try:
    m.wild[1, 4](np.zeros(4, np.float32))
except ql.LaunchError as e:
    print("caught wild", e)
o[:] = 0
m.ends[2, 32](o, 0, 1000)
print("alive", int(o.sum()), flush=True)
"""


def test_abort_and_exit_in_a_kernel_fail_the_launch():
    rc, out, err = _runaway.run(CHILD)
    assert rc == 0, (out, err)
    lines = out.splitlines()
    expect = ["abort() called", "exit(3) called", "_Exit(4) called", "quick_exit(5) called"]
    for how, what in enumerate(expect):
        line = next((s for s in lines if s.startswith(f"caught {how} ")), "")
        assert f"kernel 'ends' failed on the CPU device: {what} in block (1, 0, 0)" in line, out
    fiber = next(s for s in lines if s.startswith("caught fiber"))
    assert "exit(7) called in block (1, 0, 0), thread (6, 0, 0)" in fiber
    assert "alive 64" in lines


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 addresses")
def test_non_canonical_address_is_named():
    rc, out, err = _runaway.run(CHILD)
    wild = next(s for s in out.splitlines() if s.startswith("caught wild"))
    assert "non-canonical address" in wild and "0x0 " not in wild
    assert "block (0, 0, 0)" in wild


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 addresses")
def test_non_canonical_address_is_named_for_every_launch_shape():
    # The compiler may reach the wild address through RBP (a one-block
    # launch here): then the CPU raises a stack-segment fault, which Linux
    # delivers as SIGBUS, not SIGSEGV; both are named for what they are.
    rc, out, err = _runaway.run("""
for grid, block in ((1, 1), (1, 4), (2, 4), (1, 32), (3, 64)):
    try:
        m.wild[grid, block](np.zeros(4, np.float32))
    except ql.LaunchError as e:
        print("caught", grid, block, e)
""")
    caught = [s for s in out.splitlines() if s.startswith("caught")]
    assert len(caught) == 5, (out, err)
    for line in caught:
        assert "non-canonical address" in line and "0x0 " not in line, line


def test_exit_ends_the_process_when_faults_are_not_caught():
    rc, out, err = _runaway.run("m.ends[1, 32](np.zeros(32, np.int32), 1, 3)\nprint('after')",
                                QUICKLAUNCH_CPU_CATCH_FAULTS="0")
    assert rc == 3 and "after" not in out

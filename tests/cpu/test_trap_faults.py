"""SIGTRAP from a kernel (issue 24 item 3): __builtin_trap() is brk on
aarch64 and int3 / __builtin_debugtrap() traps on x86-64 too; each is a
LaunchError like SIGILL, not the end of the process (exit 133). Run in a
child process, so that an uncaught trap fails this test instead of killing
the suite; and the aarch64 fault record (ESR) compiled in where an aarch64
cross compiler is installed."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import numpy as np, quicklaunch as ql
SOURCE = r'''
extern "C" __global__ void bkpt(int *out, int at) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__x86_64__)
    if (i == at) asm volatile("int3");
#elif defined(__aarch64__)
    if (i == at) asm volatile("brk #0x3e8");
#else
    if (i == at) __builtin_trap();
#endif
    out[i] = i;
}
'''
m = ql.compile(SOURCE, device="cpu")
out = np.zeros(64, np.int32)
try:
    m.bkpt[2, 32](out, 35)
    print("NO ERROR")
except ql.LaunchError as e:
    print("LAUNCHERROR", e)
m.bkpt[2, 32](out, -1)
assert (out == np.arange(64)).all()
print("RECOVERED")
"""


def test_sigtrap_is_a_launch_error():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit {proc.returncode}: {text[-2000:]}"
    assert "LAUNCHERROR kernel 'bkpt' failed on the CPU device: trap instruction (SIGTRAP) at 0x" \
        in text, text
    assert "in block (1, 0, 0), thread (?, 0, 0)" in text and "RECOVERED" in text


FAULT_C = Path(__file__).parents[2] / "src/quicklaunch/backends/cpu/fault.c"


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None,
                    reason="no aarch64 cross compiler (Debian: apt-get install gcc-aarch64-linux-gnu)")
def test_fault_handler_builds_for_aarch64(tmp_path):
    # The ESR-reading classification is under #ifdef __aarch64__: at least
    # compile it (the emulated run is .ci/aarch64's).
    out = subprocess.run(["aarch64-linux-gnu-gcc", "-std=gnu11", "-O2", "-Wall", "-Werror",
                          "-c", str(FAULT_C), "-o", str(tmp_path / "fault.o")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


DIVIDE = r"""
extern "C" __global__ void divide(int *out, const int *x, int d, int at) {
    int i = threadIdx.x;
    out[i] = x[i] / (i == at ? d : 1);
}
"""


def test_divide_check_off_x86_only():
    from quicklaunch.backends.cpu import toolchain
    c = toolchain.find_compiler()
    assert toolchain.debug_flags(c, "x86_64") == toolchain.DEBUG_FLAGS   # the CPU traps
    arm = toolchain.debug_flags(c, "aarch64")
    assert "-fsanitize=integer-divide-by-zero" in arm and toolchain.accepts(c, *arm[3:])


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_debug_build_divide_by_zero_is_a_launch_error(monkeypatch, machine):
    """A debug build's x / 0 is a LaunchError on every host: x86-64's own
    SIGFPE, aarch64's (no trap: the instruction gives 0) the compiler's check,
    here forced on as it is there."""
    import numpy as np
    import quicklaunch as ql
    from quicklaunch.backends.cpu import toolchain
    if machine in toolchain.TRAPPING_DIVIDE and toolchain._machine() not in toolchain.TRAPPING_DIVIDE:
        pytest.skip("x86-64's trapping divide instruction is not this host's")
    monkeypatch.setattr(toolchain, "_machine", lambda: machine)
    mod = ql.compile(DIVIDE, device="cpu", debug=True)
    x = np.arange(1, 33, dtype=np.int32)
    out = np.zeros(32, np.int32)
    with pytest.raises(ql.LaunchError, match=r"kernel 'divide'.*(SIGFPE|SIGILL|SIGTRAP)"):
        mod.divide[1, 32](out, x, 0, 5)
    mod.divide[1, 32](out, x, 3, 5)
    expected = x.copy()
    expected[5] = x[5] // 3
    np.testing.assert_array_equal(out, expected)

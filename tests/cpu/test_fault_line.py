"""A debug build's fault names the kernel's source line (issue 19, item 3):
the faulting instruction, from the CPU fault handler, mapped through the
module's debug info (addr2line) to the line of the Python file that holds
the kernel source."""
import shutil

import numpy as np
import pytest

import quicklaunch as ql

pytestmark = pytest.mark.skipif(shutil.which("addr2line") is None,
                                reason="needs addr2line (binutils)")

SOURCE = r"""
extern "C" __global__ void fault_store(float *y, int n) {
    int i = threadIdx.x;
    if (i < n)
        y[i] = 1.0f;   // the store line
}
extern "C" __global__ void fault_divide(int *y, int d) {
    y[threadIdx.x] = 7 / d;   // the divide line
}
"""
with open(__file__) as _this:
    _lines = _this.read().splitlines()
STORE_LINE = next(i for i, ln in enumerate(_lines, 1) if ln.endswith("// the store line"))
DIVIDE_LINE = next(i for i, ln in enumerate(_lines, 1) if ln.endswith("// the divide line"))


def test_a_debug_builds_fault_names_its_source_line(cpu):
    mod = ql.compile(SOURCE, device=cpu, debug=True)
    with pytest.raises(ql.LaunchError) as info:
        mod.fault_store[1, 4](None, 4)
    message = str(info.value)
    assert "write to address 0x0 (SIGSEGV) in block (0, 0, 0), thread (0, 0, 0)" in message
    assert (f"; the fault is at {__file__}:{STORE_LINE} (in fault_store): "
            f"y[i] = 1.0f;   // the store line") in message, message
    with pytest.raises(ql.LaunchError) as info:
        mod.fault_divide[1, 4](np.zeros(4, np.int32), 0)
    assert f"the fault is at {__file__}:{DIVIDE_LINE} (in fault_divide)" in str(info.value)
    y = np.zeros(4, np.float32)
    mod.fault_store[1, 4](y, 4)   # the module lives on
    assert (y == 1).all()


def test_a_release_build_gives_the_instruction_only(cpu):
    mod = ql.compile(SOURCE, device=cpu)
    with pytest.raises(ql.LaunchError, match=r"\(SIGFPE\) at instruction 0x[0-9a-f]+ in block"
                       ) as info:
        mod.fault_divide[1, 4](np.zeros(4, np.int32), 0)
    assert "the fault is at" not in str(info.value)   # no debug info to map it with

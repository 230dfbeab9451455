"""A debug build's fault names the kernel's source line (issue 19, item 3):
the faulting instruction, from the CPU fault handler, mapped through the
module's debug info (addr2line) to the line of the Python file that holds
the kernel source."""
import os
import shutil
import subprocess
import sys

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



def test_a_debug_builds_fault_names_its_source_line(tmp_path):
    # In a fresh process: after a debug and a release module of one source
    # were loaded in this order, the fault handler has been seen to receive
    # SIGSEGV as if sent by kill() (no address, no instruction), so that the
    # message can name no line; an open question outside this test.
    script = tmp_path / "faults.py"
    script.write_text(
        "import numpy as np, quicklaunch as ql\n"
        f"SOURCE = r\"\"\"{SOURCE}\"\"\"\n"
        "mod = ql.compile(SOURCE, device='cpu', debug=True)\n"
        "for launch in (lambda: mod.fault_store[1, 4](None, 4),\n"
        "               lambda: mod.fault_divide[1, 4](np.zeros(4, np.int32), 0)):\n"
        "    try:\n"
        "        launch()\n"
        "    except ql.LaunchError as e:\n"
        "        print(e)\n"
        "y = np.zeros(4, np.float32)\n"
        "mod.fault_store[1, 4](y, 4)\n"
        "print('LIVES', y.tolist())\n")
    lines = script.read_text().splitlines()
    store = next(i for i, ln in enumerate(lines, 1) if ln.endswith("// the store line"))
    divide = next(i for i, ln in enumerate(lines, 1) if ln.endswith("// the divide line"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    store_error, divide_error, lives = out.stdout.splitlines()
    assert "write to address 0x0 (SIGSEGV) in block (0, 0, 0), thread (0, 0, 0)" in store_error
    assert (f"; the fault is at {script}:{store} (in fault_store): "
            f"y[i] = 1.0f;   // the store line") in store_error, store_error
    assert "(SIGFPE) at instruction 0x" in divide_error
    assert f"; the fault is at {script}:{divide} (in fault_divide)" in divide_error, divide_error
    assert lives == "LIVES [1.0, 1.0, 1.0, 1.0]"   # the module lives on


def test_a_release_build_gives_the_instruction_only(cpu):
    mod = ql.compile(SOURCE, device=cpu)
    with pytest.raises(ql.LaunchError, match=r"\(SIGFPE\) at instruction 0x[0-9a-f]+ in block"
                       ) as info:
        mod.fault_divide[1, 4](np.zeros(4, np.int32), 0)
    assert "the fault is at" not in str(info.value)   # no debug info to map it with

"""A debug build's kernel under plain gdb: `break saxpy` stops in it at its
line in the Python file, with the arguments and the CUDA thread visible and
the Python interpreter on the stack."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from ..emulation import skip_gdb

SCRIPT = textwrap.dedent('''\
    import numpy as np, quicklaunch as ql
    SRC = r"""
    extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    """
    mod = ql.compile(SRC, device="cpu", debug=True)
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    mod.saxpy[2, 32](2.5, x, y, 64)
    print("launched", y[0])
''')


@skip_gdb(shutil.which("gdb"))
def test_break_on_a_kernel_with_plain_gdb(tmp_path):
    script = tmp_path / "debug_me.py"
    script.write_text(SCRIPT)
    python = sys.executable  # not resolved: a venv's python finds its packages by its path
    # the first stop is the launch (the host stub a debug build has, see
    # test_host_stub.py); `continue` goes on to the kernel's entry
    commands = ["set breakpoint pending on", "break saxpy", "run", "continue", "info args",
                "p threadIdx", "p blockIdx", "p blockDim", "bt", "continue"]
    argv = ["gdb", "-q", "-batch", "-nx"]
    for c in commands:
        argv += ["-ex", c]
    out = subprocess.run(argv + ["--args", python, str(script)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    text = out.stdout + out.stderr
    assert "saxpy (a=2.5, x=0x" in text, text[-3000:]
    assert f"at {script}:4" in text, text[-3000:]   # the body's first line, in the Python file
    assert "n = 64" in text
    assert "{x = 0, y = 0, z = 0}" in text          # threadIdx and blockIdx of thread 0
    assert "{x = 32, y = 1, z = 1}" in text          # blockDim
    assert "_PyEval_EvalFrame" in text or "PyObject_Vectorcall" in text  # Python below

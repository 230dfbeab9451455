"""pdb and tracebacks in debug builds (issue 19, items 2 and 3): pdb stops in
a debug launch's stub by ``break mod.saxpy`` and by a breakpoint on the
kernel's declaration line, and a failing launch's traceback shows that line."""
import os
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import quicklaunch as ql

SCRIPT = textwrap.dedent('''\
    import numpy as np
    import quicklaunch as ql

    SOURCE = r"""
    extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    """
    mod = ql.compile(SOURCE, device="cpu", debug=True)
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    mod.saxpy[1, 64](2.0, x, y, 64)
    print("LAUNCHED", y[0])
''')
DECL_LINE = 5      # the `extern "C" __global__ void saxpy` line of SCRIPT
LAUNCH_LINE = 13   # the launch


def _pdb(tmp_path, commands):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    assert SCRIPT.splitlines()[DECL_LINE - 1].startswith('extern "C" __global__ void saxpy')
    assert SCRIPT.splitlines()[LAUNCH_LINE - 1].startswith("mod.saxpy[1, 64]")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "pdb", str(script)], cwd=tmp_path, env=env,
                         input="\n".join(commands) + "\nquit\n", capture_output=True,
                         text=True, timeout=300)
    return str(script), out.stdout + out.stderr


def test_break_on_the_kernel_object_stops_in_the_stub(tmp_path):
    # pdb evaluates `mod.saxpy` in the current frame: it must be there first.
    script, out = _pdb(tmp_path, [f"break {LAUNCH_LINE}", "continue", "break mod.saxpy",
                                  "continue", "p (a, n)", "continue"])
    assert f"Breakpoint 2 at {script}:{DECL_LINE}" in out, out
    assert f"{script}({DECL_LINE})saxpy()" in out, out
    assert "(2.0, 64)" in out, out
    assert "LAUNCHED 2.0" in out, out


def test_break_on_the_declaration_line_stops_in_the_stub(tmp_path):
    script, out = _pdb(tmp_path, [f"break {DECL_LINE}", "continue", "where", "p (a, n)",
                                  "continue"])
    assert f"Breakpoint 1 at {script}:{DECL_LINE}" in out, out
    assert f"{script}({DECL_LINE})saxpy()" in out, out
    assert "(2.0, 64)" in out, out
    assert "LAUNCHED 2.0" in out, out


def test_a_bound_name_works_too(tmp_path):
    # `break saxpy` finds the kernel only where the user bound that name
    script, out = _pdb(tmp_path, [f"break {LAUNCH_LINE}", "continue", "saxpy = mod.saxpy",
                                  "break saxpy", "continue", "continue"])
    assert f"{script}({DECL_LINE})saxpy()" in out, out


SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *in, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * in[i] + y[i];
}
"""
with open(__file__) as _this:
    KERNEL_LINE = next(i for i, line in enumerate(_this, 1)
                       if line.startswith('extern "C" __global__ void saxpy'))


def test_a_failing_launch_names_the_declaration_line(cpu):
    mod = ql.compile(SOURCE, device=cpu, debug=True)
    x = np.ones(8, np.float32)
    with pytest.raises(ql.LaunchTypeError) as info:
        mod.saxpy[1, 8](2.0, x, "not an array", 8)
    frame = traceback.extract_tb(info.tb)[-1]
    assert frame.name == "saxpy"
    assert (frame.filename, frame.lineno) == (__file__, KERNEL_LINE)
    assert frame.line.startswith('extern "C" __global__ void saxpy')
    # every instruction of the stub is on that one line
    import dis
    code = mod.saxpy[1, 8].__code__
    assert {ln for _, ln in dis.findlinestarts(code) if ln is not None} == {KERNEL_LINE}
    assert mod.saxpy.__code__.co_name == "saxpy"
    assert mod.saxpy.__code__.co_firstlineno == KERNEL_LINE

"""The C host stub (quicklaunch/host_stub.py, issue 20) on the CUDA device,
against the fake driver: a stub launch hands cuLaunchKernel the very
parameter bytes the fast path does, for every parameter kind; a stub launch
inside a graph recording is recorded; plain gdb breaks on the stub of a
plain and of a template kernel with the launch's arguments; no host
compiler is a clear error."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch
from ..emulation import skip_gdb

KINDS = r"""
#include <cuda_fp16.h>
struct Affine { float scale; int shift; double bias; };
extern "C" __global__ void every(signed char i8, short i16, int i32, long long i64,
                                 unsigned char u8, unsigned short u16, unsigned u32,
                                 unsigned long long u64, __half h, float f, double d, bool b,
                                 const float *cp, int *p, Affine s, float4 v, double2 w,
                                 char3 c3) {}
template <typename T> __global__ void add(T *x, T v, int n) {}
namespace ns { template <typename T> __global__ void scale(T *x, T a) {} }
"""
EXPRS = ["add<float>", "add<double>", "ns::scale<int>"]


def _args(gpu):
    affine = np.array([(0.5, -3, 2.25)], dtype=[("scale", "<f4"), ("shift", "<i4"),
                                             ("bias", "<f8")])[0]
    xs = ql.zeros(4, np.float32, device=gpu)
    ys = ql.zeros(4, np.int32, device=gpu)
    return (-7, -1234, -2**31, -2**40, 250, 65535, 2**32 - 1, 2**64 - 1, 1.5, 2.5, -3.25,
            True, xs, ys, affine, np.array([1, 2, 3, 4], np.float32).tobytes(),
            np.array([5, 6], np.float64).tobytes(), b"abc")


def test_stub_and_fast_path_hand_over_the_same_parameter_block(ql_fake):
    gpu = ql.device("cuda")
    fast = ql.compile(KINDS, device=gpu, name_expressions=EXPRS)
    stub = ql.compile(KINDS, device=gpu, name_expressions=EXPRS, stub=True)
    assert fast._stub_library is None and stub._stub_library is not None
    args = _args(gpu)
    xs, ys = args[12], args[13]
    launches = [("every", args), ("add<float>", (xs, 2.5, 4)),
                ("add<double>", (ql.zeros(2, np.float64, device=gpu), -1e300, 3)), ("ns::scale<int>", (ys, -5))]
    for name, a in launches:
        got = []
        for mod in (fast, stub):
            k = mod.get_kernel(name)
            k[(2, 3), (32, 2), 64](*a)
            got.append(last_launch(ql_fake))
            k.launch(1, 1, *a)
            got.append(last_launch(ql_fake))
            k.configure(4, 8)(*a)
            got.append(last_launch(ql_fake))
        assert got[0]["params"] and got[0]["nparams"] == len(a), name
        for i in range(3):
            assert got[i] == got[i + 3], (name, i)


def test_a_stub_launch_inside_a_graph_is_recorded(ql_fake):
    gpu = ql.device("cuda")
    mod = ql.compile(KINDS, device=gpu, name_expressions=EXPRS, stub=True)
    x = ql.zeros(4, np.float32, device=gpu)
    k = mod.get_kernel("add<float>")
    before = last_launch(ql_fake)
    with ql.graph(device=gpu) as g:
        k[1, 4](x, 1.0, 4)
        k[1, 4](x, 2.0, 4)
    assert last_launch(ql_fake) == before      # recorded, not run
    g.replay()
    gpu.synchronize()


def test_debug_builds_have_the_stub(ql_fake):
    mod = ql.compile(KINDS, device="cuda", name_expressions=EXPRS, debug=True)
    assert mod._stub_library is not None
    assert ql.compile(KINDS, device="cuda", name_expressions=EXPRS, debug=True,
                      stub=False)._stub_library is None


def test_no_host_compiler_is_a_clear_error(ql_fake, monkeypatch):
    from quicklaunch.backends.cpu import toolchain
    monkeypatch.setenv("CXX", "/nonexistent/no-such-c++")
    toolchain._probe.cache_clear()
    try:
        with pytest.raises(ql.CompileError, match=r"host stub.*host C\+\+ compiler.*"
                                                  r"apt-get install g\+\+"):
            ql.compile(KINDS, device="cuda", name_expressions=EXPRS, stub=True)
        monkeypatch.setenv("QUICKLAUNCH_STUB", "1")
        with pytest.raises(ql.CompileError, match="apt-get install g"):
            ql.compile(KINDS, device="cuda", name_expressions=EXPRS)
        monkeypatch.delenv("QUICKLAUNCH_STUB")
        # nothing else changes: without the stub, compiling works; debug
        # builds keep their Python stub, with a warning
        assert ql.compile(KINDS, device="cuda", name_expressions=EXPRS)._stub_library is None
        with pytest.warns(ql.CompileWarning, match="without the C host stub"):
            mod = ql.compile(KINDS, device="cuda", name_expressions=EXPRS, debug=True)
        assert mod._stub_library is None
    finally:
        toolchain._probe.cache_clear()


SCRIPT = textwrap.dedent('''\
    import numpy as np, quicklaunch as ql
    SRC = r"""
    extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    template <typename T> __global__ void add(T *x, T v, int n) {}
    """
    mod = ql.compile(SRC, device=ql.device("@DEVICE@"), name_expressions=["add<float>"],
                     stub=True)
    x = ql.zeros(1000, np.float32, device=mod.device)
    y = ql.zeros(1000, np.float32, device=mod.device)
    print("x at", hex(x.ptr), flush=True)
    mod.saxpy[4, 256](2.5, x, y, 1000)
    mod.get_kernel("add<float>")[1, 32](x, np.float32(0.75), 7)
    mod.device.synchronize()
    print("launched", flush=True)
''')


def run_gdb(script_text, tmp_path, env):
    script = tmp_path / "debug_me.py"
    script.write_text(script_text)
    commands = ["set breakpoint pending on", "break saxpy", "break add<float>", "run",
                "info args", "bt 3", "py-bt", "finish", "continue", "info args", "continue"]
    # -iex: let gdb load Python's own gdb extension (py-bt) where installed
    argv = ["gdb", "-q", "-batch", "-nx", "-iex", "set auto-load safe-path /"]
    for c in commands:
        argv += ["-ex", c]
    out = subprocess.run(argv + ["--args", sys.executable, str(script)], capture_output=True,
                         text=True, timeout=300,
                         env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
    return out.stdout + out.stderr


def check_gdb_text(text):
    """What the gdb session of SCRIPT must show, on any GPU device."""
    import re
    assert "launched" in text, text[-3000:]
    m = re.search(r"x at (0x[0-9a-f]+)", text)
    assert m, text[-3000:]
    assert re.search(r"Breakpoint 1(\.\d+)?, saxpy \(a=2\.5, x=0x", text), text[-3000:]
    assert "a = 2.5" in text and f"x = {m[1]}" in text and "n = 1000" in text, text[-3000:]
    assert "ql_stub_trampoline_" in text            # bt: the stub, then the launcher
    assert "Value returned is $1 = 0" in text      # finish: back in the trampoline, status 0
    if 'Undefined command: "py-bt"' not in text:   # Python's gdb extension is installed
        assert "debug_me.py" in text and "mod.saxpy[4, 256]" in text, text[-3000:]
    assert re.search(r"Breakpoint 2, add<float> \(x=0x[0-9a-f]+, v=0\.75, n=7\)", text), \
        text[-3000:]
    assert "v = 0.75" in text and "n = 7" in text
    assert "exited normally" in text, text[-3000:]


@skip_gdb(shutil.which("gdb"))
def test_plain_gdb_breaks_on_the_stub_of_a_gpu_kernel(ql_fake, tmp_path):
    text = run_gdb(SCRIPT.replace("@DEVICE@", "cuda"), tmp_path,
                   {"QUICKLAUNCH_LIBCUDA": os.environ["QUICKLAUNCH_LIBCUDA"]})
    check_gdb_text(text)

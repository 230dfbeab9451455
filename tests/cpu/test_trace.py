"""ql.trace: every launch recorded as a Chrome/Perfetto trace event."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void scale(float a, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_every_launch_path_is_recorded(mod, tmp_path):
    y = np.ones(100, np.float32)
    path = tmp_path / "run.json"
    with ql.trace(path) as t:
        mod.scale[4, 32](2.0, y, 100)
        mod.scale.configure(4, 32, shared_mem=64)(2.0, y, 100)
        mod.scale.launch((2, 2), 32, 2.0, y, 100)
    mod.scale[4, 32](2.0, y, 100)  # after the block: not recorded
    assert len(t.events) == 3
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    assert [e["name"] for e in events] == ["scale"] * 3
    first = events[0]
    assert first["ph"] == "X" and first["dur"] >= 0 and first["args"]["grid"] == [4, 1, 1]
    assert first["args"]["block"] == [32, 1, 1]
    assert first["args"]["arguments"] == {"a": "2.0", "y": "ndarray float32 (100,)",
                                          "n": "100"}
    assert events[1]["args"]["shared_mem"] == 64
    assert events[2]["args"]["grid"] == [2, 2, 1]
    assert events[0]["ts"] <= events[1]["ts"] <= events[2]["ts"]
    # the (2, 2) grid covers y[:64] twice (two rows of blocks)
    np.testing.assert_array_equal(y, np.where(np.arange(100) < 64, 32.0, 8.0))


def test_failed_launches_are_not_traced_twice_and_errors_still_raise(mod):
    with ql.trace() as t:
        with pytest.raises(ql.LaunchTypeError):
            mod.scale[1, 1](2.0, "y", 1)
    assert t.events == []  # refused before any launch


def test_trace_from_the_environment(tmp_path):
    path = tmp_path / "env.json"
    code = ("import numpy as np, quicklaunch as ql\n"
            "m = ql.compile('extern \"C\" __global__ void k(int *x) { x[0] = 1; }', device='cpu')\n"
            "x = np.zeros(1, np.int32)\n"
            "for _ in range(5): m.k[1, 1](x)\n")
    env = {**os.environ, "QUICKLAUNCH_TRACE": str(path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    events = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in events] == ["k"] * 5

"""ql.load of a HIP code object on the fake HIP runtime: parameters from the
code object's metadata (sizes, pointer or value), typed by a signature
checked against them; launches carry the exact parameter bytes."""
import struct

import numpy as np
import pytest

import quicklaunch as ql

from .test_fake_runtime import expect, fake, fake_lib, last  # noqa: F401 - fixtures

SRC = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_load_code_object(fake, tmp_path):  # noqa: F811
    code = ql.compile(SRC, device="hip")._program.code_object
    path = tmp_path / "saxpy.hsaco"
    path.write_bytes(code)
    raw = ql.load(path, device="hip").saxpy
    assert [(p.size, p.kind) for p in raw.params] == [(4, "struct"), (8, "pointer"),
                                                       (8, "pointer"), (4, "struct")]
    k = ql.load(path, device="hip", signature="saxpy(float a, const float* x, float* y, int n)")
    k = k.saxpy
    assert [p.kind for p in k.params] == ["float32", "const pointer", "pointer", "int32"]
    x = ql.zeros(8, np.float32, device="hip")
    y = ql.zeros(8, np.float32, device="hip")
    expect(fake, k)
    k[1, 8](2.0, x, y, 8)
    got = last(fake)
    assert got.name == b"saxpy"
    assert bytes(got.bytes[:24]) == struct.pack("<fQQi", 2.0, x.ptr, y.ptr, 8)  # the fake packs them
    with pytest.raises(ValueError, match="'double' is 8 bytes"):
        ql.load(code, device="hip", signature="saxpy(float, float*, float*, double)")
    with pytest.raises(ql.QuicklaunchError, match="cannot be loaded on hip"):
        ql.load(b".version 8.0\n.target sm_90\n", device="hip")

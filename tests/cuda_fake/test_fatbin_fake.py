"""ql.load of nvcc 13 fatbins (tests/unit/fatbins) on the fake CUDA driver,
which loads the entry a driver would pick among the uncompressed ones: the
default fatbin's PTX is zstd-compressed, and quicklaunch reads the kernels'
parameters from it (decompressed) while the driver runs the GPU's cubin;
launches carry the exact parameter bytes."""
import struct
from pathlib import Path

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch
from .test_load_fake import fake  # noqa: F401 - the fixture

FATBINS = Path(__file__).resolve().parents[1] / "unit" / "fatbins"
SIG = ["saxpy(float a, const float* x, float* y, int n)", "fill(int* out, int n)"]


@pytest.mark.parametrize("cc", ["9.0", "8.6"])
def test_default_fatbin_with_compressed_ptx(fake, monkeypatch, cc):  # noqa: F811
    monkeypatch.setenv("FAKE_CUDA_CC", cc)
    data = (FATBINS / "default.fatbin").read_bytes()
    raw = ql.load(data, device="cuda")
    # the types come from the decompressed PTX (nvcc writes no .ptr: pointers are 64-bit ints)
    assert [p.kind for p in raw.saxpy.params] == ["float32", "int64", "int64", "int32"]
    mod = ql.load(data, device="cuda", signature=SIG)
    assert [p.kind for p in mod.saxpy.params] == ["float32", "const pointer", "pointer",
                                                  "int32"]
    x = ql.asarray(np.random.default_rng(3).random(31, np.float32), device="cuda")
    y = ql.zeros(31, np.float32, device="cuda")
    mod.saxpy[1, 32](0.75, x, y, 31)
    got = last_launch(fake)
    assert got["name"] == "saxpy"
    assert got["params"][:28] == struct.pack("<f4xQQi", 0.75, x.ptr, y.ptr, 31)
    out = ql.zeros(5, np.int32, device="cuda")
    mod.fill[1, 8](out, 5)
    got = last_launch(fake)
    assert got["name"] == "_Z4fillPii" and got["params"][:12] == struct.pack("<Qi", out.ptr, 5)
    with pytest.raises(ql.LaunchTypeError):
        mod.saxpy[1, 32](0.75, out, y, 31)   # int32 elements for a const float*


def test_plain_fatbin_ptx_on_a_newer_gpu(fake, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_CUDA_CC", "10.0")   # no cubin runs: the PTX entry is JIT-compiled
    mod = ql.load(FATBINS / "plain.fatbin", device="cuda", signature=SIG)
    y = ql.zeros(4, np.float32, device="cuda")
    mod.saxpy[1, 4](1.0, y, y, 4)
    assert last_launch(fake)["name"] == "saxpy"

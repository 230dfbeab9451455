"""Bundles on the fake HIP runtime: one bundle built with hiprtc for gfx90a
(wave64) and gfx1030 (wave32) loads the code object of the GPU's own
architecture; a GPU of another architecture gets an error that lists what
the bundle holds and what the device is."""
import struct

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.bundles import BundleError

from .test_fake_runtime import expect, fake, fake_lib, last  # noqa: F401 - fixtures

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return ql.build(SOURCE, ["gfx90a", "gfx1030"], tmp_path_factory.mktemp("b") / "k.qlb")


@pytest.mark.parametrize("arch, wave", [("gfx90a:sramecc+:xnack-", 64), ("gfx1030", 32)])
def test_the_gpu_s_own_code_object(fake, bundle, monkeypatch, arch, wave):  # noqa: F811
    monkeypatch.setenv("FAKE_HIP_ARCH", arch)
    monkeypatch.setenv("FAKE_HIP_WAVE", str(wave))
    mod = ql.load(bundle, device="hip")
    assert mod.bundle_entry == arch.split(":")[0]
    k = mod.saxpy
    assert [p.kind for p in k.params] == ["float32", "const pointer", "pointer", "int32"]
    x = ql.zeros(31, np.float32, device="hip")
    y = ql.zeros(31, np.float32, device="hip")
    expect(fake, k)
    k[1, 32](1.5, x, y, 31)
    got = last(fake)
    assert got.name == b"saxpy"
    assert bytes(got.bytes[:24]) == struct.pack("<fQQi", 1.5, x.ptr, y.ptr, 31)


def test_another_architecture_is_refused(fake, bundle, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FAKE_HIP_ARCH", "gfx942")
    with pytest.raises(BundleError, match=r"nothing in it runs on hip:0 \(gfx942, wave64\): it "
                                          r"holds gfx90a \(hsaco\), gfx1030 \(hsaco\).*add "
                                          r"gfx942"):
        ql.load(bundle, device="hip")

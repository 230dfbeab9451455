"""Bundles on the fake CUDA driver: one bundle built with NVRTC for sm_80,
sm_90, compute_80 and compute_90, loaded on GPUs of several compute
capabilities (FAKE_CUDA_CC): the exact SASS, else SASS of the same major
architecture, else the newest PTX the GPU runs (which the driver
JIT-compiles), else a clear error listing the bundle's entries and the
device. Launches reach cuLaunchKernel with the exact parameter bytes; a
corrupt entry and a PTX the driver cannot JIT are clear errors."""
import json
import struct
import zipfile

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.bundles import BundleError

from .api import last_launch

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T> __global__ void fill(T *out, T value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""
TARGETS = ["sm_80", "sm_90", "compute_80", "compute_90"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from quicklaunch.backends.cuda import nvrtc
    try:
        nvrtc.load()
    except ql.CompileError as exc:
        pytest.skip(f"NVRTC is not installed: {exc}")
    path = tmp_path_factory.mktemp("bundle") / "saxpy.qlb"
    ql.build(SOURCE, TARGETS, path, name_expressions=["fill<double>"])
    return path


def _launch_saxpy(fake, mod, rng):
    n = 31
    x = ql.asarray(rng.random(n, np.float32), device="cuda")
    y = ql.asarray(rng.random(n, np.float32), device="cuda")
    mod.saxpy[1, 32](2.5, x, y, n)
    got = last_launch(fake)
    assert got["name"] == "saxpy" and got["grid"] == (1, 1, 1) and got["block"] == (32, 1, 1)
    assert got["params"][:28] == struct.pack("<f4xQQi", 2.5, x.ptr, y.ptr, n)
    f = mod["fill<double>"]
    assert [p.kind for p in f.params] == ["pointer", "float64", "int32"]
    out = ql.zeros(7, np.float64, device="cuda")
    f[1, 8](out, -1.25, 7)
    assert last_launch(fake)["params"][:20] == struct.pack("<Qdi", out.ptr, -1.25, 7)
    with pytest.raises(ql.LaunchTypeError):
        mod.saxpy[1, 32](2.5, out, y, n)     # a const float* takes float32 elements only


@pytest.mark.parametrize("cc, entry", [("9.0", "sm_90"), ("8.6", "sm_80"),
                                       ("8.0", "sm_80"), ("10.0", "compute_90"),
                                       ("8.9", "sm_80")])
def test_best_entry_for_the_gpu(ql_fake, bundle, monkeypatch, rng, cc, entry):
    monkeypatch.setenv("FAKE_CUDA_CC", cc)
    mod = ql.load(bundle, device="cuda")
    assert mod.bundle_entry == entry
    assert mod.compile_log == "" or isinstance(mod.compile_log, str)
    _launch_saxpy(ql_fake, mod, rng)


def test_ptx_only_bundle_is_jit_compiled(ql_fake, monkeypatch, rng, tmp_path):
    path = ql.build(SOURCE, ["compute_80", "sm_90"], tmp_path / "b.qlb",
                    name_expressions=["fill<double>"])
    monkeypatch.setenv("FAKE_CUDA_CC", "8.6")
    mod = ql.load(path, device="cuda")
    assert mod.bundle_entry == "compute_80"
    _launch_saxpy(ql_fake, mod, rng)


def test_no_entry_for_an_older_gpu(ql_fake, bundle, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_CC", "7.5")
    with pytest.raises(BundleError) as info:
        ql.load(bundle, device="cuda")
    text = str(info.value)
    assert "nothing in it runs on cuda:0 (sm_75" in text
    assert ("it holds sm_80 (cubin), sm_90 (cubin), compute_80 (ptx), compute_90 (ptx)"
            in text)
    assert "compute_80: PTX for compute_80 needs an sm_80 GPU or newer" in text
    assert "add sm_75, or compute_XX no newer than compute_75" in text


def test_driver_that_cannot_jit_the_ptx(ql_fake, bundle, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_CC", "10.0")
    monkeypatch.setenv("FAKE_CUDA_PTX_ISA_MAX", "6.0")
    with pytest.raises(BundleError, match=r"entry compute_90: the driver could not JIT-compile "
                                          r"its PTX \(ISA \d+\.\d+, from NVRTC"):
        ql.load(bundle, device="cuda")


def test_corrupt_cubin_is_refused(ql_fake, bundle, tmp_path):
    folder = tmp_path / "b"
    zipfile.ZipFile(bundle).extractall(folder)
    cubin = folder / "cuda" / "sm_90.cubin"
    data = bytearray(cubin.read_bytes())
    data[100] ^= 1
    cubin.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"entry sm_90: the file 'cuda/sm_90.cubin' does not "
                                          r"match its SHA-256"):
        ql.load(folder, device="cuda")
    m = json.loads((folder / "manifest.json").read_text())
    assert {e["target"]: e["kind"] for e in m["entries"]} == {
        "sm_80": "cubin", "sm_90": "cubin", "compute_80": "ptx", "compute_90": "ptx"}
    assert m["compilers"]["cuda"].startswith("NVRTC ")


def test_bundle_module_pickles(ql_fake, bundle):
    import pickle
    mod = ql.load(bundle, device="cuda")
    k = pickle.loads(pickle.dumps(mod.saxpy))
    assert k.name == "saxpy" and k.module.bundle_entry == "sm_90"
    assert [p.kind for p in k.params] == [p.kind for p in mod.saxpy.params]

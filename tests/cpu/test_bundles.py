"""Bundles on the CPU device: ql.build / quicklaunch build of a source for the
host CPU (native and a portable x86-64 level), ql.load of the file, folder
or bytes with no compiler, the entry chosen for this host, hashes checked
(corrupt, truncated, missing entries refused with the file and the entry
named), a newer bundle ABI and a bundle for another machine refused, and
bundle modules pickled into a spawned process."""
import json
import multiprocessing
import os
import pickle
import platform
import shutil
import zipfile

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.bundles import BundleError

from .conftest import poisoned

SOURCE = r"""
__device__ int calls = 0;

extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
    if (i == 0) atomicAdd(&calls, 1);
}

template <typename T>
__global__ void fill(T *out, T value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value + (T)i;
}

__global__ void block_sum(const int *x, int *out, int n) {
    __shared__ int part[64];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}
"""
X86 = platform.machine().lower() in ("x86_64", "amd64")
TARGETS = ["cpu", "cpu:x86-64-v2"] if X86 else ["cpu"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """One bundle file, built once for the module's tests."""
    path = tmp_path_factory.mktemp("bundle") / "kernels.qlb"
    assert ql.build(SOURCE, TARGETS, path, name_expressions=["fill<float>", "fill<int>"]) \
        == str(path)
    return path


@pytest.fixture
def folder(bundle, tmp_path):
    """The bundle unpacked into a folder (a bundle too), to damage."""
    out = tmp_path / "kernels"
    zipfile.ZipFile(bundle).extractall(out)
    return out


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def _rewrite(folder, manifest):
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _check_kernels(mod, rng):
    for n in (1, 31, 1000):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        want = np.float32(1.5) * x + y
        mod.saxpy[(n + 63) // 64, 64](1.5, x, y, n)
        np.testing.assert_allclose(y, want, rtol=1e-6)
        out = poisoned(n, np.float32)
        mod["fill<float>"][(n + 31) // 32, 32](out, np.float32(-2.5), n)
        np.testing.assert_array_equal(out, np.float32(-2.5) + np.arange(n, dtype=np.float32))
        xs = rng.integers(-1000, 1000, n).astype(np.int32)
        blocks = (n + 63) // 64
        sums = poisoned(blocks, np.int32)
        mod.block_sum[blocks, 64](xs, sums, n)
        padded = np.zeros(blocks * 64, np.int32)
        padded[:n] = xs
        np.testing.assert_array_equal(sums, padded.reshape(blocks, 64).sum(axis=1))


def test_bundle_loads_and_launches(bundle, rng):
    mod = ql.load(bundle, device="cpu")
    assert mod.bundle_entry == "cpu"     # native code for this CPU beats a portable level
    assert sorted(mod.kernels) == ["block_sum", "fill<float>", "fill<int>", "saxpy"]
    assert [(p.name, p.ctype, p.kind) for p in mod.saxpy.params] == [
        ("a", "float", "float32"), ("x", "const float *", "const pointer"),
        ("y", "float *", "pointer"), ("n", "int", "int32")]
    _check_kernels(mod, rng)
    assert mod.block_sum.tier in ("fission", "fibers")    # what the compiler chose travels
    assert mod.saxpy.attributes["tier"] == "loop"
    with pytest.raises(ql.LaunchTypeError):
        mod.saxpy[1, 32](1.0, np.zeros(4, np.int32), np.zeros(4, np.float32), 4)
    assert mod.get_global("calls").numpy()[()] > 0     # globals of the loaded object


@pytest.mark.skipif(not X86, reason="x86-64 levels")
def test_portable_entry_is_chosen_when_native_cannot_run(folder, rng):
    m = _manifest(folder)
    native = next(e for e in m["entries"] if e["target"] == "cpu")
    native["cpu_flags"] = native["cpu_flags"] + ["ql_imaginary_feature"]
    _rewrite(folder, m)
    mod = ql.load(folder, device="cpu")
    assert mod.bundle_entry == "cpu:x86-64-v2"
    _check_kernels(mod, rng)


def test_bytes_and_folder_bundles(tmp_path, rng):
    data = ql.build(SOURCE, ["cpu"], name_expressions=["fill<float>"])
    assert data[:4] == b"PK\x03\x04"
    from_bytes = ql.load(data, device="cpu")
    _check_kernels_subset(from_bytes, rng)
    _check_kernels_subset(pickle.loads(pickle.dumps(from_bytes)), rng)   # travels as bytes
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("hello.txt", "not a bundle")
    with pytest.raises(BundleError, match=r"the manifest: the file 'manifest.json' is "
                                          r"missing"):
        ql.load(other, device="cpu")
    out = ql.build(SOURCE, ["cpu"], str(tmp_path / "dir") + "/",
                   name_expressions=["fill<float>"], include_source=False)
    assert sorted(os.listdir(out)) == ["cpu", "manifest.json"]
    mod = ql.load(out, device="cpu")
    assert mod.source == "" and _manifest(tmp_path / "dir")["source"] is None
    _check_kernels_subset(mod, rng)


def _check_kernels_subset(mod, rng):
    n = 31
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    want = np.float32(3) * x + y
    mod.saxpy[1, 32](3.0, x, y, n)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_loading_runs_no_compiler(bundle, monkeypatch, rng):
    from quicklaunch.backends.cpu import compiler, toolchain

    def refuse(*args, **kwargs):
        raise AssertionError("a compiler was asked for while loading a bundle")
    monkeypatch.setattr(toolchain, "find_compiler", refuse)
    monkeypatch.setattr(toolchain, "run_compiler", refuse)
    monkeypatch.setattr(compiler, "build", refuse)
    monkeypatch.setattr("quicklaunch.backends.cpu.bundle._loaded", {})   # a fresh load
    _check_kernels(ql.load(bundle, device="cpu"), rng)


def test_corrupt_truncated_and_missing_entries(folder, bundle, tmp_path):
    so = folder / "cpu" / "cpu.so"
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0x5A
    so.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"entry cpu: the file 'cpu/cpu.so' does not match "
                                          r"its SHA-256"):
        ql.load(folder, device="cpu")
    so.write_bytes(bytes(data[:1000]))
    with pytest.raises(BundleError, match=r"entry cpu: the file 'cpu/cpu.so' is 1000 bytes, "
                                          r"the manifest says \d+ \(truncated"):
        ql.load(folder, device="cpu")
    so.unlink()
    with pytest.raises(BundleError, match=r"entry cpu: the file 'cpu/cpu.so' is missing"):
        ql.load(folder, device="cpu")
    cut = tmp_path / "cut.qlb"
    cut.write_bytes(bundle.read_bytes()[:2000])
    with pytest.raises(BundleError, match=f"bundle {cut}: not a quicklaunch bundle, or a "
                                          f"truncated one"):
        ql.load(cut, device="cpu")
    with pytest.raises(BundleError, match="cannot read the file"):
        ql.load(tmp_path / "missing.qlb", device="cpu")


def test_altered_source_and_damaged_manifest(folder):
    (folder / "source.cu").write_text(SOURCE.replace("1)", "2)"))
    with pytest.raises(BundleError, match="the source 'source.cu' does not match"):
        ql.load(folder, device="cpu")
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match="damaged manifest"):
        ql.load(folder, device="cpu")
    (folder / "manifest.json").write_text(json.dumps({"format": "quicklaunch-bundle",
                                                      "abi": 1, "entries": []}))
    with pytest.raises(BundleError, match="damaged manifest: the manifest has no valid"):
        ql.load(folder, device="cpu")


def test_newer_abi_is_refused(folder):
    m = _manifest(folder)
    m["abi"], m["quicklaunch"] = 99, "9.0"
    _rewrite(folder, m)
    with pytest.raises(BundleError, match=r"made by quicklaunch 9.0 with bundle ABI 99; this "
                                          r"quicklaunch reads ABI 1 and older"):
        ql.load(folder, device="cpu")


def test_no_entry_for_this_device(folder):
    m = _manifest(folder)
    for e in m["entries"]:
        e["machine"] = "riscv64"
    gpu = dict(m["entries"][0], target="sm_90", device="cuda", kind="cubin", arch="sm_90")
    m["entries"].append(gpu)
    _rewrite(folder, m)
    with pytest.raises(BundleError) as info:
        ql.load(folder, device="cpu")
    text = str(info.value)
    assert "nothing in it runs on cpu (" in text
    assert "it holds cpu (shared-object, riscv64)" in text and "sm_90 (cubin" in text
    assert "cpu: built for machine 'riscv64', this host is" in text
    assert "add target cpu" in text


def test_missing_cpu_feature_is_named(folder):
    m = _manifest(folder)
    m["entries"] = [e for e in m["entries"] if e["target"] == "cpu"]
    m["entries"][0]["cpu_flags"] = m["entries"][0]["cpu_flags"] + ["ql_imaginary_feature"]
    _rewrite(folder, m)
    with pytest.raises(BundleError, match=r"cpu: built with -march=native on a CPU that has "
                                          r"ql_imaginary_feature, which this CPU lacks"):
        ql.load(folder, device="cpu")


def test_kernel_table_mismatch_is_refused(folder):
    m = _manifest(folder)
    for e in m["entries"]:
        for k in e["kernels"]:
            if k["name"] == "saxpy":
                k["params"][3][2] = 8     # int n claimed to be 8 bytes
    _rewrite(folder, m)
    monkey = __import__("quicklaunch.backends.cpu.bundle", fromlist=["_loaded"])
    monkey._loaded.clear()
    with pytest.raises(BundleError, match=r"kernel saxpy: the shared object's parameters"):
        ql.load(folder, device="cpu")


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown bundle target 'sm9'"):
        ql.build(SOURCE, ["sm9"])
    with pytest.raises(ValueError, match="at least one target"):
        ql.build(SOURCE, "")
    with pytest.raises(ql.CompileError, match="bundle target cpu: kernel source failed"):
        ql.build("__global__ void k(int *x) { x[0] = nope; }", ["cpu"])


def test_load_of_a_bundle_takes_no_signature(bundle):
    with pytest.raises(ValueError, match="takes no signature"):
        ql.load(bundle, device="cpu", signature="saxpy(float, float*, float*, int)")


def test_cli_build(tmp_path, rng, capsys):
    from quicklaunch.cli import main
    src = tmp_path / "k.cu"
    src.write_text(SOURCE)
    assert main(["build", str(src), "-t", "cpu", "-e", "fill<float>"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'k.qlb'}" in out and "shared-object" in out
    _check_kernels_subset(ql.load(tmp_path / "k.qlb", device="cpu"), rng)
    assert main(["build", str(src), "-t", "nope"]) == 2
    assert "unknown bundle target 'nope'" in capsys.readouterr().err


def _child(launch, n, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    want = np.float32(2) * x + y
    launch(2.0, x, y, n)
    return bool(np.allclose(y, want)), launch.__self__.kernel.module.bundle_entry


def test_bundle_kernels_pickle_into_a_spawned_process(bundle, tmp_path):
    copy = tmp_path / "copy.qlb"
    shutil.copyfile(bundle, copy)
    mod = ql.load(copy, device="cpu")
    launch = mod.saxpy[1, 64]
    assert pickle.loads(pickle.dumps(launch)).__self__.kernel.name == "saxpy"
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_child, (launch, 37, 5)) == (True, "cpu")
    m = _manifest_of_zip(copy)
    m["options"] = ["-DALTERED"]
    with zipfile.ZipFile(copy, "a") as z:    # a newer manifest appended: the file changed
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z.writestr("manifest.json", json.dumps(m))
    from quicklaunch.module import Module
    Module._unpickled.pop(mod._pickle_state, None)   # forget the copy unpickled above
    with pytest.raises(BundleError, match="it changed since the module was pickled"):
        pickle.loads(pickle.dumps(mod))


def _manifest_of_zip(path):
    return json.loads(zipfile.ZipFile(path).read("manifest.json"))

"""Devices and CPU memory, without a compiler: naming, the default device,
buffers and their NumPy views."""
import os
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql


def test_cpu_device():
    cpu = ql.device("cpu")
    assert cpu is ql.device("CPU") is ql.device(cpu)
    assert cpu.kind == "cpu" and cpu.name == "cpu" and cpu.host_memory
    assert cpu.limits.max_threads_per_block == 1024
    assert cpu.limits.max_block_dims == (1024, 1024, 64)
    assert cpu.limits.max_grid_dims == (2**31 - 1, 65535, 65535)
    assert cpu.limits.warp_size == 32
    cpu.synchronize()
    assert "cpu" in repr(cpu)


@pytest.mark.parametrize("spec, pattern", [
    ("hip:9", r"HIP runtime|this machine has \d+ AMD GPU"),
    ("tpu", r"unknown device 'tpu'"),
    ("cpu:1", r"there is one CPU device"),
    ("cuda:x", r"ordinal after ':' must be a non-negative int"),
])
def test_bad_device_names(spec, pattern):
    with pytest.raises(ql.DeviceError, match=pattern):
        ql.device(spec)


def test_cuda_without_a_driver_falls_back_to_cpu(monkeypatch, tmp_path):
    from quicklaunch import devices
    from quicklaunch.backends.cuda import driver
    monkeypatch.setenv("QUICKLAUNCH_LIBCUDA", str(tmp_path / "libcuda.so.1"))
    monkeypatch.delenv("QUICKLAUNCH_DEVICE", raising=False)
    monkeypatch.setattr(devices, "_default_probe", [])
    driver._reset_for_tests()
    try:
        with pytest.raises(ql.DeviceError, match=r"the CUDA driver could not be opened .*"
                                                 r"install the NVIDIA driver, or use "
                                                 r"device='cpu'"):
            ql.device("cuda:1")
        assert ql.device().kind == "cpu"
        assert not driver.available()
    finally:
        driver._reset_for_tests()


def test_device_name_must_be_a_string():
    with pytest.raises(ql.DeviceError, match="named by a string"):
        ql.device(3)


def test_default_device_is_cpu_without_gpu_and_env_overrides():
    env = {k: v for k, v in os.environ.items() if k != "QUICKLAUNCH_DEVICE"}
    code = "import quicklaunch as ql; print(ql.device().name)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == "cpu", out.stderr
    out = subprocess.run([sys.executable, "-c", code], env={**env, "QUICKLAUNCH_DEVICE": "tpu"},
                         capture_output=True, text=True, timeout=60)
    assert "unknown device 'tpu'" in out.stderr


@pytest.mark.parametrize("shape, dtype", [(1, np.float32), ((3, 5), np.int16),
                                          ((2, 3, 4), np.float64), (0, np.uint8)])
def test_empty_and_zeros(shape, dtype):
    b = ql.empty(shape, dtype, device="cpu")
    shp = (shape,) if isinstance(shape, int) else shape
    assert b.shape == shp and b.dtype == np.dtype(dtype) and b.device is ql.device("cpu")
    assert b.ptr % 64 == 0 and b.nbytes == int(np.prod(shp)) * np.dtype(dtype).itemsize
    assert b.numpy().shape == shp and b.numpy().ctypes.data == b.ptr
    z = ql.zeros(shape, dtype, device="cpu")
    assert not z.numpy().any()


def test_numpy_view_is_zero_copy(rng):
    b = ql.empty(10, np.float32, device="cpu")
    values = rng.standard_normal(10).astype(np.float32)
    b.numpy()[:] = values
    np.testing.assert_array_equal(np.asarray(b), values)
    assert b.__array_interface__["data"] == (b.ptr, False)


def test_asarray(rng):
    a = rng.standard_normal((4, 4))
    b = ql.asarray(a, device="cpu")
    assert b.ptr == a.ctypes.data  # aligned and contiguous: no copy
    assert ql.asarray(b, device="cpu") is b
    strided = a[:, ::2]
    c = ql.asarray(strided, device="cpu")
    assert c.ptr != a.ctypes.data and c.shape == (4, 2)
    np.testing.assert_array_equal(c.numpy(), strided)
    d = ql.asarray([1, 2, 3], device="cpu", dtype=np.int32)
    assert d.dtype == np.int32 and list(d.numpy()) == [1, 2, 3]
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert ql.asarray(ro, device="cpu").readonly


def test_negative_shape():
    with pytest.raises(ValueError, match="negative"):
        ql.empty((2, -1), device="cpu")

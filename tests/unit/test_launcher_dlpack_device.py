"""A GPU kernel's pointer arguments from other libraries' arrays are checked
against the DLPack device its KernelCore was given (``dlpack_device=(type,
ordinal)``), never against a decoding of ``device_id``, which is only the
opaque tag ql buffers carry.

No GPU and no compiler: KernelCores on the recording backend, and DLPack
capsules made by the launcher's own exporter."""
import struct

import pytest

import quicklaunch as ql  # registers the error classes with the launcher
from quicklaunch import _launch

from .recording_backend import CPTR, PTR, make_kernel

DL_CPU, DL_CUDA, DL_ROCM, DL_CUDA_MANAGED = 1, 2, 10, 13
ADDRESS = 0x7F00_1234_5600


def gpu_kernel(dlpack_device, device_id=0x5A5A, **kw):
    """A one-pointer kernel of a device that is not host memory; device_id is
    deliberately nothing the old id scheme could decode."""
    return make_kernel([PTR], host_memory=False, device_id=device_id, device_name="gpu:x",
                       dlpack_device=dlpack_device, **kw)


def address(k, arg):
    k[1, 1](arg)
    return struct.unpack("<Q", k.backend.pop().params[0])[0]


def dlpack_array(device_type, ordinal, ptr=ADDRESS):
    """A fresh type per call: the launcher remembers each type's protocol."""
    def __dlpack__(self, stream=None):
        return _launch._dlpack_capsule(ptr, (4,), 2, 32, device_type, ordinal, self)
    return type("DLArray", (), {"__dlpack__": __dlpack__})()


def torch_like(ordinal, ptr=ADDRESS):
    """The data_ptr() protocol: what the launcher asks a torch tensor."""
    ns = {"is_cuda": True, "is_contiguous": lambda self: True,
          "get_device": lambda self: ordinal, "data_ptr": lambda self: ptr}
    return type("TensorLike", (), ns)()


@pytest.mark.parametrize("dev,arr", [
    ((DL_CUDA, 0), (DL_CUDA, 0)), ((DL_CUDA, 3), (DL_CUDA, 3)),
    ((DL_CUDA, 1), (DL_CUDA_MANAGED, 1)), ((DL_ROCM, 2), (DL_ROCM, 2))])
def test_dlpack_array_on_the_kernels_device_passes_its_address(dev, arr):
    assert address(gpu_kernel(dev), dlpack_array(*arr)) == ADDRESS


@pytest.mark.parametrize("dev,arr", [
    ((DL_CUDA, 1), (DL_CUDA, 0)),        # another ordinal
    ((DL_CUDA, 0), (DL_ROCM, 0)),        # another device type
    ((DL_ROCM, 0), (DL_CUDA, 0)),
    ((DL_ROCM, 0), (DL_CUDA_MANAGED, 0)),  # managed memory is CUDA's, not ROCm's
    ((DL_CUDA, 0), (DL_CPU, 0))])
def test_dlpack_array_elsewhere_is_refused(dev, arr):
    k = gpu_kernel(dev)
    with pytest.raises(ql.LaunchValueError) as e:
        k[1, 1](dlpack_array(*arr))
    assert str(e.value) == (f"kernel 'kern', parameter 1 'p0': the DLArray lives on DLPack "
                            f"device ({arr[0]}, {arr[1]}), not on the kernel's device gpu:x; "
                            f"move it there first")
    assert not k.backend.calls


def test_the_ordinal_comes_from_dlpack_device_not_device_id():
    # 0x101 would have decoded as cuda:1; the DLPack device says ordinal 4
    k = gpu_kernel((DL_CUDA, 4), device_id=0x101)
    assert address(k, dlpack_array(DL_CUDA, 4)) == ADDRESS
    assert address(k, torch_like(4)) == ADDRESS
    with pytest.raises(ql.LaunchValueError, match=r"DLPack device \(2, 1\)"):
        k[1, 1](dlpack_array(DL_CUDA, 1))
    with pytest.raises(ql.LaunchValueError, match="lives on cuda:1, the kernel on gpu:x"):
        k[1, 1](torch_like(1))


def test_data_ptr_compares_the_ordinal():
    k = gpu_kernel((DL_CUDA, 2))
    assert address(k, torch_like(2)) == ADDRESS
    with pytest.raises(ql.LaunchValueError) as e:
        k[1, 1](torch_like(0))
    assert str(e.value) == ("kernel 'kern', parameter 1 'p0': the TensorLike lives on cuda:0, "
                            "the kernel on gpu:x; move it to the kernel's device")


def test_ql_buffers_are_still_matched_by_device_id():
    k = make_kernel([CPTR], host_memory=False, device_id=0x5A5A, device_name="gpu:x",
                    dlpack_device=(DL_CUDA, 0))
    assert address(k, _launch.Buffer(ADDRESS, 16, 0x5A5A)) == ADDRESS
    with pytest.raises(ql.LaunchValueError, match="lives on another device"):
        k[1, 1](_launch.Buffer(ADDRESS, 16, 0x100))


def test_dlpack_device_defaults_to_the_cpu():
    k = make_kernel([PTR])                       # no dlpack_device: (kDLCPU, 0)
    assert address(k, ADDRESS) == ADDRESS


@pytest.mark.parametrize("bad,exc", [
    ((0, 0), ValueError), ((DL_CUDA, -1), ValueError), ((-2, 0), ValueError),
    ((DL_CUDA,), TypeError), ("cuda", TypeError), ((DL_CUDA, 0, 0), TypeError),
    ((2.0, 0), TypeError)])
def test_dlpack_device_is_checked(bad, exc):
    with pytest.raises(exc):
        gpu_kernel(bad)


def test_dlpack_device_is_keyword_only_and_optional():
    given = ("k", (), b"", [], [], 1, 0, 0, "cpu", True, 0, (1, 1, 1), (1, 1, 1), 1, 0,
             lambda k, s: None)
    _launch.KernelCore(*given)                   # as before: no dlpack_device
    _launch.KernelCore(*given, dlpack_device=(DL_CUDA, 1))
    with pytest.raises(TypeError, match="at most 16 positional"):
        _launch.KernelCore(*given, (DL_CUDA, 1))

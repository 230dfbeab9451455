"""Pointer element types on the CUDA device (fake driver, real NVRTC): ql
buffers, __cuda_array_interface__, DLPack and torch-style tensors of the
wrong element type are refused before cuLaunchKernel; the right ones and
explicit reinterpretations reach it."""
import struct

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch
from .test_quicklaunch_on_fake import CaiOnly, DlpackOnly, SOURCE, TorchLike, fake_gpu, gpu  # noqa: F401


@pytest.fixture
def mod(gpu):  # noqa: F811
    return ql.compile(SOURCE, device=gpu)


class TorchTyped(TorchLike):
    def __init__(self, buf, dtype):
        super().__init__(buf)
        self.dtype = dtype


@pytest.mark.parametrize("wrap", [lambda b: b, CaiOnly, DlpackOnly,
                                  lambda b: TorchTyped(b, "torch.float64")],
                         ids=["buffer", "cai", "dlpack", "data_ptr"])
def test_float64_for_float_is_refused_from_every_source(mod, gpu, fake_gpu, wrap):  # noqa: F811
    x = ql.zeros(8, np.float32, device=gpu)
    y = ql.zeros(8, np.float64, device=gpu)
    with pytest.raises(ql.LaunchTypeError, match=r"kernel 'saxpy', parameter 3 'y': expects "
                                                 r"float32 elements \(C type float \*\), got "
                                                 r"(an array of float64|a __cuda_array_"
                                                 r"interface__ of typestr '<f8'|DLPack dtype "
                                                 r"\(code 2, 64 bits|a tensor of torch.float64)"):
        mod.saxpy[1, 8](1.0, x, wrap(y), 8)


@pytest.mark.parametrize("wrap", [lambda b: b, CaiOnly, DlpackOnly,
                                  lambda b: TorchTyped(b, "torch.float32"),
                                  lambda b: ql.reinterpret(CaiOnly(b))],
                         ids=["buffer", "cai", "dlpack", "data_ptr", "reinterpret"])
def test_matching_sources_reach_the_driver(mod, gpu, fake_gpu, wrap):  # noqa: F811
    x, y = ql.zeros(8, np.float32, device=gpu), ql.zeros(8, np.float32, device=gpu)
    mod.saxpy[1, 8](1.0, wrap(x), wrap(y), 8)
    assert last_launch(fake_gpu)["params"][8:24] == struct.pack("<QQ", x.ptr, y.ptr)


def test_reinterpret_a_gpu_buffer(mod, gpu, fake_gpu):  # noqa: F811
    x = ql.zeros(8, np.float32, device=gpu)
    bits = ql.zeros(8, np.int32, device=gpu)
    with pytest.raises(ql.LaunchTypeError, match="got an array of int32"):
        mod.saxpy[1, 8](1.0, x, bits, 8)
    mod.saxpy[1, 8](1.0, x, ql.reinterpret(bits), 8)
    assert last_launch(fake_gpu)["params"][16:24] == struct.pack("<Q", bits.ptr)

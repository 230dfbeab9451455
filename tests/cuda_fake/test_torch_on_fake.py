"""torch tensors as arguments of a CUDA kernel (fake driver): the CPU build
of torch has only CPU (and meta) tensors, so this checks the refusals, which
must name the tensor's device and the kernel's; CUDA tensors themselves are
read by the same C accessors as on the CPU device (tests/frameworks)."""
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {}
"""


@pytest.fixture
def setup(ql_fake):
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install "
                                "'.[frameworks]')")
    gpu = ql.device("cuda")
    return torch, gpu, ql.compile(SOURCE, device=gpu), ql.zeros(8, np.float32, device=gpu)


def test_cpu_tensor_refused_by_a_cuda_kernel(setup):
    torch, gpu, mod, x = setup
    with pytest.raises(ql.LaunchTypeError, match=r"kernel 'saxpy', parameter 3 'y': the Tensor "
                       r"lives on cpu, not on a CUDA device: the kernel runs on cuda:0"):
        mod.saxpy[1, 8](1.0, x, torch.zeros(8), 8)


def test_meta_tensor_refused_by_a_cuda_kernel(setup):
    torch, gpu, mod, x = setup
    with pytest.raises(ql.LaunchError, match=r"'y'.*meta.*cuda:0"):
        mod.saxpy[1, 8](1.0, x, torch.zeros(8, device="meta"), 8)

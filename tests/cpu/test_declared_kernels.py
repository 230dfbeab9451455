"""A kernel the source only declares (a prototype of a kernel defined in
another file, as headers carry) is not a kernel of the module on any
device; asking for it says so, with the line."""
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
__global__ void elsewhere(int *p, int n);          // defined in another .cu file
__global__ void here(int *p, int n);
__global__ void here(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 7 * i;
}
"""


def test_only_declared_kernel_is_not_a_kernel_and_the_error_says_why(cpu):
    mod = ql.compile(SOURCE, device=cpu)
    assert mod.kernels == ["here"]
    with pytest.raises(ql.KernelNotFoundError, match=r"'elsewhere' is declared \(line 2\) but "
                                                    r"not defined in this source"):
        mod["elsewhere"]
    p = np.full(100, -1, np.int32)
    mod.here[4, 32](p, 100)
    np.testing.assert_array_equal(p, 7 * np.arange(100))

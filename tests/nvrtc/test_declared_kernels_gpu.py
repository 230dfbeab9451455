"""NVRTC agrees with the CPU device: a kernel the source only declares is not
one of the program's kernels (it used to fail reflection: no .entry)."""
import pytest

import quicklaunch as ql
from tests.cpu.test_declared_kernels import SOURCE


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_only_declared_kernel_is_left_out(arch):
    prog = ql.cuda.compile(SOURCE, arch=arch)
    assert list(prog.kernels) == ["here"]

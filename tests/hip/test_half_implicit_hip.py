"""fp16 / bf16 without an #include on hiprtc, as on the CPU device and NVRTC
(tests/nvrtc/test_half_implicit.py has the source); an explicit include of
cuda_fp16.h / cuda_bf16.h still compiles."""
import pytest

import quicklaunch as ql
from tests.nvrtc.test_half_implicit import HALF_EXPRESSIONS, HALF_SOURCE, KERNELS

ARCHS = ("gfx90a", "gfx1030")


@pytest.mark.parametrize("arch", ARCHS)
def test_half_and_bf16_without_an_include(arch):
    prog = ql.hip.compile(HALF_SOURCE, arch=arch, name_expressions=HALF_EXPRESSIONS)
    assert set(prog.kernels) == KERNELS


@pytest.mark.parametrize("arch", ARCHS)
def test_the_users_own_includes_still_work(arch):
    src = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n" + HALF_SOURCE
    prog = ql.hip.compile(src, arch=arch, name_expressions=HALF_EXPRESSIONS)
    assert set(prog.kernels) == KERNELS

"""<limits> on NVRTC is quicklaunch's stand-in (NVRTC ships no C++ standard
library): std::numeric_limits constexpr in device code, its values checked by
the static_asserts of tests/cpu/test_limits_cpu.py's LIMITS_SOURCE, which the
CPU test runs against NumPy."""
import pytest

import quicklaunch as ql
from tests.cpu.test_limits_cpu import LIMITS_SOURCE, NAME_EXPRESSIONS

ARCHS = ("sm_80", "sm_90")


@pytest.mark.parametrize("arch", ARCHS)
def test_numeric_limits_in_device_code(arch):
    prog = ql.cuda.compile(LIMITS_SOURCE, arch=arch, name_expressions=NAME_EXPRESSIONS)
    assert set(prog.kernels) == {"block_max", *NAME_EXPRESSIONS}


@pytest.mark.parametrize("arch", ARCHS)
def test_limits_is_quicklaunchs(arch):
    src = ("#include <limits>\n#if !defined(QL_LIMITS) || defined(_GLIBCXX_NUMERIC_LIMITS)\n"
           "#error a host <limits> was found\n#endif\n__global__ void k() {}\n")
    ql.cuda.compile(src, arch=arch)


@pytest.mark.parametrize("arch", ARCHS)
def test_limits_with_16_bit_types_and_libcu(arch):
    # with cuda_fp16.h pre-included and libcu++'s own <cuda/std/limits> next to it
    src = ("#include <limits>\n#include <cuda/std/limits>\n"
           "static_assert(std::numeric_limits<int>::max() == "
           "cuda::std::numeric_limits<int>::max(), \"int\");\n"
           "static_assert(std::numeric_limits<float>::epsilon() == "
           "cuda::std::numeric_limits<float>::epsilon(), \"eps\");\n"
           "__global__ void k(__half *x) { x[0] = __float2half(std::numeric_limits<float>::max()); }\n")
    assert "k" in ql.cuda.compile(src, arch=arch).kernels

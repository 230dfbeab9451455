"""<limits> on hiprtc is quicklaunch's stand-in, never the host's libstdc++
header: std::numeric_limits constexpr in device code, its values checked by
the static_asserts of tests/cpu/test_limits_cpu.py's LIMITS_SOURCE."""
import pytest

import quicklaunch as ql
from tests.cpu.test_limits_cpu import LIMITS_SOURCE, NAME_EXPRESSIONS

ARCHS = ("gfx90a", "gfx1030")


@pytest.mark.parametrize("arch", ARCHS)
def test_numeric_limits_in_device_code(arch):
    prog = ql.hip.compile(LIMITS_SOURCE, arch=arch, name_expressions=NAME_EXPRESSIONS)
    assert set(prog.kernels) == {"block_max", *NAME_EXPRESSIONS}


@pytest.mark.parametrize("arch", ARCHS)
def test_limits_is_quicklaunchs(arch):
    src = ("#include <limits>\n#if !defined(QL_LIMITS) || defined(_GLIBCXX_NUMERIC_LIMITS)\n"
           "#error a host <limits> was found\n#endif\n__global__ void k() {}\n")
    ql.hip.compile(src, arch=arch)

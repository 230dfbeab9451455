"""NVRTC: a missing '}' is reported at the user's line (not in the reflection
rows quicklaunch appends), and errors inside NVRTC's bundled headers name
them as <nvrtc>/..., not by their path in the compile cache."""
import pytest

import quicklaunch as ql
from tests.cpu.test_c_headers_diagnostics import MISSING_BRACE_KERNEL, MISSING_BRACE_MESSAGE


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_missing_brace(arch):
    with pytest.raises(ql.CompileError, match=MISSING_BRACE_MESSAGE) as e:
        ql.cuda.compile(MISSING_BRACE_KERNEL, arch=arch)
    assert "with NVRTC" in str(e.value)


def test_bundled_headers_are_named_not_cache_paths():
    src = 'extern "C" {\n#include <cuda/std/cstdint>\n}\n__global__ void k(int *o) { *o = 1; }\n'
    with pytest.raises(ql.CompileError) as e:
        ql.cuda.compile(src, arch="sm_90")
    text = str(e.value)
    assert "<nvrtc>/cuda/std/" in text
    assert ".headers.d" not in text and "/.cache/" not in text

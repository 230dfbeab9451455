"""hiprtc: a missing '}' is reported at the user's line (not in the
reflection rows quicklaunch appends)."""
import pytest

import quicklaunch as ql
from tests.cpu.test_c_headers_diagnostics import MISSING_BRACE_KERNEL, MISSING_BRACE_MESSAGE


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
def test_missing_brace(arch):
    with pytest.raises(ql.CompileError, match=MISSING_BRACE_MESSAGE) as e:
        ql.hip.compile(MISSING_BRACE_KERNEL, arch=arch)
    assert "with hiprtc" in str(e.value)

"""NVRTC needs no shift rewrite: a run-time count goes to PTX shl/shr as it
is (no `and` with 31 or 63 first), and PTX defines those to clamp the count
to the width, the semantics the CPU device reproduces (tests/cpu/test_shifts.py)."""
import re

import pytest

import quicklaunch as ql
from tests.cpu.test_shifts import SHIFTS_SOURCE

RUNTIME_SHIFTS_TEMPLATE = r"""
extern "C" __global__ void k(%(t)s *o, const %(t)s *x, const int *n) {
    o[0] = x[0] << n[0];
    o[1] = x[1] >> n[1];
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("ctype, bits, right", [("unsigned", 32, "u"), ("int", 32, "s"),
                                                ("unsigned long long", 64, "u"),
                                                ("long long", 64, "s")])
def test_runtime_counts_reach_ptx_unmasked(arch, ctype, bits, right):
    ptx = ql.cuda.compile(RUNTIME_SHIFTS_TEMPLATE % {"t": ctype}, arch=arch).ptx
    assert re.search(rf"\bshl\.b{bits}\s+%rd?\d+, %rd?\d+, %r\d+;", ptx), ptx
    assert re.search(rf"\bshr\.{right}{bits}\s+%rd?\d+, %rd?\d+, %r\d+;", ptx), ptx
    assert not re.search(r"\band\.b32\s+%r\d+, %r\d+, (31|63);", ptx), ptx


def test_the_cpu_corpus_kernels_compile_unrewritten():
    # the source NVRTC gets is the user's: no __ql_clamp anywhere
    prog = ql.cuda.compile(SHIFTS_SOURCE, arch="sm_90")
    assert "__ql_clamp" not in prog.ptx and "shl.b64" in prog.ptx

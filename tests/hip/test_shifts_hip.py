"""hiprtc compiles CUDA's shift semantics: AMD's shift instructions take the
count modulo the width (v_lshlrev_b32 reads its low 5 bits), so the source
hiprtc gets has its run-time counts clamped (backends/hip/clamp.py, the CPU
device's rewrite and ql_shift.h). Checked in the code object's ISA: the
shift is followed by a compare of the count with the width and a select."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import quicklaunch as ql
from quicklaunch.backends.hip import clamp

KERNEL_TEMPLATE = r"""
extern "C" __global__ void k(%(t)s *o, const %(t)s *x, const int *n) { o[0] = x[0] << n[0]; }
"""


def _isa(code: bytes, arch: str, tmp_path) -> str:
    tool = shutil.which("llvm-objdump")
    if tool is None:
        pytest.skip("llvm-objdump is not installed")
    path = tmp_path / "k.co"
    path.write_bytes(code)
    out = subprocess.run([tool, "-d", f"--mcpu={arch}", str(path)], capture_output=True,
                         text=True)
    if out.returncode != 0 or "<k>:" not in out.stdout:
        pytest.skip(f"llvm-objdump cannot read {arch} code: {out.stderr.strip()[:200]}")
    return out.stdout.split("<k>:", 1)[1]


@pytest.mark.parametrize("arch", ["gfx90a", "gfx1030"])
@pytest.mark.parametrize("ctype, width", [("unsigned", 32), ("unsigned long long", 64)])
def test_runtime_count_is_clamped(arch, ctype, width, tmp_path):
    prog = ql.hip.compile(KERNEL_TEMPLATE % {"t": ctype}, arch=arch)
    isa = _isa(prog.code_object, arch, tmp_path)
    assert re.search(r"_lshl(rev)?_b(32|64)", isa), isa
    assert re.search(rf"_cmp_(lt|gt)_u32\s+\S+, (\S+, )?{width}\b|_cmp_\w+_u32\s+{width}\b",
                     isa), isa
    assert re.search(r"_cselect_b|_cndmask_b", isa), isa


def test_rewritten_source_and_own_options():
    src = KERNEL_TEMPLATE % {"t": "unsigned"}
    assert "x[0] << __ql_clamp(n[0])" in clamp.clamped(src, ["-DX=1", "-I", "/tmp"])
    assert clamp._parse_options(["-DX=1", "-I", "/inc", "-ffast-math", "-U", "Y"]) == (
        "-DX=1", "-I/inc", "-UY")


def test_one_header_for_cpu_and_hip():
    root = Path(ql.__file__).parent / "backends"
    cpu = (root / "cpu" / "include" / "ql_shift.h").read_bytes()
    assert cpu == (root / "hip" / "include" / "ql_shift.h").read_bytes()

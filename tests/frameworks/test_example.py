"""docs/examples/rmsnorm_torch.py (docs/frameworks.md's example) runs and
gets the right answer, eager and compiled (its own asserts)."""
import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rmsnorm_torch.py"


def test_rmsnorm_example(torch):
    mod = runpy.run_path(str(EXAMPLE))
    rows = mod["main"]("cpu", n=2, compiled_reference=False)
    assert set(rows) >= {"quicklaunch RMSNorm, eager", "quicklaunch RMSNorm, compiled"}

"""The distributed CG reaches the single-rank residual (bench/cg_mpi)."""
import json
import sys

import pytest

from quicklaunch.bench.cg_mpi.report import RESIDUAL_RTOL


@pytest.mark.parametrize("ranks", [2, 3])
def test_distributed_cg_matches_the_single_rank_answer(mpirun, tmp_path, ranks):
    out = tmp_path / "cg.json"
    script = ("import sys\nfrom quicklaunch.bench.cg_mpi.__main__ import main\n"
              "sys.exit(main())\n")
    proc = mpirun(ranks, script, timeout=60,
                  args=["--N", "40", "--weak-N", "24", "--iterations", "30", "--repeats", "1",
                        "--overlap", "stream", "--check", "--json", str(out)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(out.read_text())
    for case in (res["strong"], res["weak"]):
        ref = case["single_rank_residual"]
        assert 0 < ref < 1
        for name, row in case["rows"].items():
            assert row["residual_rel_diff"] <= RESIDUAL_RTOL, (name, row, ref)
        assert case["rows"]["quicklaunch"]["launches"] == 7   # interior on a second stream

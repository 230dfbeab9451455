"""The `quicklaunch` command: info, and the bench's plumbing (never its timings)."""
import json
import subprocess
import sys


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "quicklaunch", *args], capture_output=True,
                          text=True, timeout=600, **kw)


def test_info():
    out = run("info")
    assert out.returncode == 0, out.stderr
    for word in ("quicklaunch", "numpy", "cpu", "C++", "cache"):
        assert word in out.stdout


def test_bench_quick_writes_results(tmp_path):
    """The main job's own rows, end to end; the sections it leaves out run
    for real in their own tests (tests/unit/test_bench_suite.py,
    test_null_driver.py, tests/cpu/test_cg.py), each a minute of the suite's
    time here."""
    out = run("bench", "--quick", "--skip", "peers,null, frameworks,cg",
              "--out", str(tmp_path / "b"))
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "b" / "results.json").read_text())
    assert result["device"] == "cpu"
    rows = result["rows"]
    for row in ("indexed", "configured", "direct", "C baseline", "C-ext floor", "python loop"):
        assert set(rows[row]) == {"4", "16"} and all(v > 0 for v in rows[row].values())
        assert row in out.stdout
    assert result["skipped"] == ["cg", "frameworks", "null", "peers"]
    assert {r["source"] for r in result["launch"]["rows"].values()} == {"quicklaunch",
                                                                         "reference"}
    for section, name in (("cg", "cg"), ("null_driver", "null"), ("frameworks", "frameworks")):
        assert result[section]["status"] == "skipped"
        assert result[section]["reason"] == f"left out (--skip {name})"
    assert "CG workload: skipped: left out (--skip cg)" in out.stdout
    assert "(null driver): skipped: left out (--skip null)" in out.stdout


def test_bench_skip_names_the_sections_it_knows(tmp_path):
    out = run("bench", "--quick", "--skip", "peers,plots", "--out", str(tmp_path))
    assert out.returncode != 0
    assert "no section named 'plots' to skip; the sections are peers, null, frameworks, cg" \
        in out.stderr
    assert not (tmp_path / "results.json").exists()


def test_bench_rejects_unknown_device(tmp_path):
    out = run("bench", "--quick", "--device", "tpu", "--out", str(tmp_path))
    assert out.returncode != 0 and "unknown device 'tpu'" in out.stderr

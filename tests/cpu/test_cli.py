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
    out = run("bench", "--quick", "--out", str(tmp_path / "b"))
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "b" / "results.json").read_text())
    assert result["device"] == "cpu"
    rows = result["rows"]
    for row in ("indexed", "configured", "direct", "C baseline", "C-ext floor", "python loop"):
        assert set(rows[row]) == {"4", "16"} and all(v > 0 for v in rows[row].values())
        assert row in out.stdout


def test_bench_rejects_unknown_device(tmp_path):
    out = run("bench", "--quick", "--device", "tpu", "--out", str(tmp_path))
    assert out.returncode != 0 and "unknown device 'tpu'" in out.stderr

"""`quicklaunch bench`'s plumbing (quicklaunch.bench.suite): sections, peers
that are missing or raise, results.json, plots, --out, the progress bar.
Everything timed is replaced by fakes, so no compiler runs and no timing is
asserted; the one real child process is a fake peer's."""
import io
import json
import sys
import types

import pytest

import quicklaunch.bench as bench_pkg
from quicklaunch import cli
from quicklaunch.bench import plots, suite, suite_report
from quicklaunch.bench.harness import timing
from quicklaunch.bench.harness.kernels import need
from quicklaunch.bench.harness.model import LAUNCH, NotApplicable, RowSpec, Source

HERE = __name__
PNG = b"\x89PNG\r\n\x1a\n"
TINY = {"iters": 10, "repeats": 1, "peer_iters": 5, "peer_repeats": 1, "peer_timeout": 60.0,
        "peers_budget": 60.0}


def _const(value):
    return lambda iters: value


def _working(ctx):
    return {"fake.ok": {n: _const(1000.0 + n) for n in ctx.params},
            "fake.half": {4: _const(50.0), 16: NotApplicable("no 16-argument form")}}


def _missing(ctx):
    need("quicklaunch_no_such_module", "no-such-package")


def _raising(ctx):
    raise RuntimeError("the peer said no\nsecond line")


def _spec(prefix, *names):
    return tuple(RowSpec(f"{prefix}.{n}", f"{prefix} {n}", LAUNCH, f"note {n}") for n in names)


FAKES = [
    Source("working", (RowSpec("fake.ok", "working ok", LAUNCH, "fine"),
                       RowSpec("fake.half", "working half", LAUNCH, "four only")), _working),
    Source("missing", _spec("missing", "x"), _missing, ("no-such-package",)),
    Source("raising", _spec("raising", "x", "y"), _raising),
]


def fake_measure(device, iters, repeats, progress=None, **kw):
    for rep in range(repeats):
        if progress:
            progress(rep + 1, repeats, f"repeat {rep + 1}")
    rows = {row: {4: 10.0 + i, 16: 20.0 + i} for i, row in enumerate(
        ("python loop", "C-ext floor", "C baseline", "indexed", "configured", "direct",
         "graph replay", "debug stub"))}
    return {"device": device, "iters": iters, "repeats": repeats, "rows": rows}


def fake_cg(device=None, sizes=(32, 64, 128), implementations=None, iterations=50, repeats=3,
            quick=False, progress=None):
    for i, n in enumerate(sizes):
        if progress:
            progress(i + 1, len(sizes), f"N={n}")
    rows = {impl: {str(n): {"ms_per_iter": scale * (0.01 + n * n * 1e-6), "residual": 1e-7,
                            "status": "ok"} for n in sizes}
            for impl, scale in (("numpy", 3.0), ("quicklaunch", 1.0))}
    rows["quicklaunch"]["128"] = {"ms_per_iter": None, "residual": None,
                                  "status": "error: out of memory"}
    return {"device": device, "iterations": iterations, "sizes": list(sizes), "rows": rows,
            "versions": {"numpy": "x"}}


def _suite(tmp_path, **kw):
    calls = []
    args = dict(settings=TINY, peers=FAKES, peers_ref=f"{HERE}:FAKES", peer_mode="inprocess",
                cg_runner=fake_cg, measure=fake_measure,
                progress=lambda d, t, w: calls.append((d, t, w)))
    args.update(kw)
    result = suite.run_suite("cpu", tmp_path / "out", quick=True, **args)
    return result, calls


def test_quick_run_sections_schema_and_files(tmp_path):
    result, calls = _suite(tmp_path)
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data == json.loads(json.dumps(result, default=str))
    for key in ("benchmark", "schema", "created", "device", "quick", "machine", "versions",
                "launch", "rows", "cg", "plots", "seconds"):
        assert key in data, key
    assert data["device"] == "cpu" and data["quick"] is True
    assert data["machine"]["cpus"] and data["versions"]["python"]
    rows = data["launch"]["rows"]
    for name in ("quicklaunch indexed", "quicklaunch configured", "quicklaunch direct",
                 "quicklaunch graph replay", "quicklaunch debug stub", "C baseline",
                 "C-ext floor", "python loop", "working ok"):
        assert rows[name]["status"] == "ok" and rows[name]["4"] > 0 and rows[name]["16"] > 0
        assert {"4", "16", "status", "reason", "source", "note"} <= set(rows[name])
    assert rows["working half"]["16"] is None and "n/a" in rows["working half"]["cells"]["16"]
    # the old shape stays: quicklaunch's rows by their short names
    assert set(data["rows"]["configured"]) == {"4", "16"}
    assert data["cg"]["status"] == "ok" and data["cg"]["rows"]["numpy"]["64"]["ms_per_iter"] > 0
    assert data["plots"] == {"launch_overhead.png": "written",
                             "cg_time_per_iteration.png": "written"}
    for name in data["plots"]:
        assert (tmp_path / "out" / name).read_bytes()[:8] == PNG
    # progress: called, on a 0..100 scale, ending at 100
    assert calls and all(t == 100 and 0 <= d <= 100 for d, t, _ in calls)
    assert calls[-1][0] == 100 and [d for d, _, _ in calls] == sorted(d for d, _, _ in calls)
    text = suite_report.table(result)
    for word in ("quicklaunch configured", "working ok", "missing x", "raising y", "N=64"):
        assert word in text


def test_missing_and_raising_peers_are_rows_with_reasons(tmp_path):
    rows = _suite(tmp_path)[0]["launch"]["rows"]
    assert rows["missing x"]["status"] == "skipped"
    assert "no-such-package is not installed" in rows["missing x"]["reason"]
    for name in ("raising x", "raising y"):
        assert rows[name]["status"] == "error" and rows[name]["4"] is None
        assert "RuntimeError: the peer said no second line" in rows[name]["reason"]


def test_peers_in_child_processes(tmp_path):
    """The CPU default: each peer in a child process of its own."""
    result, _ = _suite(tmp_path, peer_mode="isolated", peers=FAKES[1:],
                       peers_ref=f"{HERE}:FAKES")
    rows = result["launch"]["rows"]
    assert "not installed" in rows["missing x"]["reason"]
    assert "the peer said no" in rows["raising x"]["reason"]


def test_quicklaunch_failure_is_a_row_and_the_rest_runs(tmp_path):
    def broken(*a, **kw):
        raise RuntimeError("no compiler")
    result, _ = _suite(tmp_path, measure=broken)
    row = result["launch"]["rows"]["quicklaunch configured"]
    assert row["status"] == "error" and "no compiler" in row["reason"]
    assert result["launch"]["rows"]["working ok"]["status"] == "ok"
    assert result["cg"]["status"] == "ok"


def test_cg_missing_or_raising_says_why(tmp_path, monkeypatch):
    monkeypatch.delattr(bench_pkg, "cg", raising=False)
    monkeypatch.setitem(sys.modules, "quicklaunch.bench.cg", None)
    result, _ = _suite(tmp_path, cg_runner=None)
    assert result["cg"]["status"] == "skipped"
    assert "quicklaunch.bench.cg is not available" in result["cg"]["reason"]
    assert result["plots"]["cg_time_per_iteration.png"].startswith("skipped")
    assert "CG workload: skipped" in suite_report.table(result)

    def raising(**kw):
        raise ValueError("diverged")
    result, _ = _suite(tmp_path, cg_runner=raising)
    assert result["cg"]["status"] == "error" and "ValueError: diverged" in result["cg"]["reason"]
    result, _ = _suite(tmp_path, cg_runner=lambda **kw: [1, 2])
    assert result["cg"]["status"] == "error" and "list" in result["cg"]["reason"]


def test_plots_skipped_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result, _ = _suite(tmp_path)
    assert "plots skipped" in result["plots"]["skipped"]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["plots"] == result["plots"]
    assert not (tmp_path / "out" / "launch_overhead.png").exists()


def test_cli_respects_out_and_prints_the_table(tmp_path, monkeypatch, capsys):
    fake_cg_module = types.ModuleType("quicklaunch.bench.cg")
    fake_cg_module.run = fake_cg
    monkeypatch.setitem(sys.modules, "quicklaunch.bench.cg", fake_cg_module)
    monkeypatch.setattr(bench_pkg, "cg", fake_cg_module, raising=False)
    monkeypatch.setattr(suite.launch_bench, "measure", fake_measure)
    monkeypatch.setitem(suite.PEERS, "cpu", f"{HERE}:FAKES")
    monkeypatch.setattr(suite, "QUICK", {**suite.QUICK, **TINY})
    out = tmp_path / "elsewhere" / "bench"
    assert cli.main(["bench", "--quick", "--device", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert (out / "results.json").exists() and (out / "launch_overhead.png").exists()
    assert str(out / "results.json") in printed.out
    for word in ("indexed", "configured", "direct", "C baseline", "C-ext floor", "python loop",
                 "graph replay", "working ok", "ms per iteration"):
        assert word in printed.out
    assert "%" in printed.err            # the progress bar
    assert json.loads((out / "results.json").read_text())["launch"]["rows"]["working ok"]


def test_text_progress_bar():
    log = io.StringIO()
    bar = suite_report.TextProgress(log)
    for d in range(0, 101, 5):
        bar(d, 100, "launch: x" if d < 50 else "peers: y")
    bar.close()
    lines = log.getvalue().splitlines()
    assert 2 <= len(lines) <= 10 and "100%" in lines[-1] and "#" in lines[-1]

    class Tty(io.StringIO):
        def isatty(self):
            return True
    tty = Tty()
    bar = suite_report.TextProgress(tty)
    bar(30, 100, "launch: repeat 1")
    bar(60, 100, "peers: warp")
    bar.close()
    assert tty.getvalue().count("\r") == 2 and tty.getvalue().endswith("\n")


def test_capped_timer_bounds_a_sample(monkeypatch):
    monkeypatch.setattr(timing, "SAMPLE_NS", 1e6)
    seen = []

    def slow(iters):                     # pretends to cost 100 us per launch
        seen.append(iters)
        return 100_000.0
    timer = timing.capped(slow)
    assert timer(1_000_000) == 100_000.0
    assert seen[:2] == [1, 8] and seen[2] == 10     # 1 ms / 100 us
    assert timer(5) == 100_000.0 and seen[-1] == 5


def test_plots_from_a_saved_result(tmp_path):
    pytest.importorskip("matplotlib")
    result = {"device": "cpu", "quick": False,
              "launch": {"rows": {"a": {"4": 10.0, "16": 20.0, "source": "quicklaunch"},
                                  "b": {"4": 1e6, "16": None, "status": "ok"},
                                  "c": {"4": None, "16": None, "status": "skipped",
                                        "reason": "not installed"}}},
              "cg": fake_cg("cpu") | {"status": "ok"}}
    got = plots.write_plots(result, tmp_path)
    assert got == {"launch_overhead.png": "written", "cg_time_per_iteration.png": "written"}
    assert (tmp_path / "cg_time_per_iteration.png").read_bytes()[:8] == PNG
    empty = plots.write_plots({"launch": {"rows": {}}, "cg": {"status": "ok", "rows": {}}},
                              tmp_path / "none")
    assert all(v.startswith("skipped") for v in empty.values())

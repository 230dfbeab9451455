"""The launch benchmarks' plumbing (quicklaunch.bench.harness and the CUDA
benchmark), without a GPU: rows for peers that are missing, raise, crash or
hang; measurement bookkeeping; JSON and Markdown output; the C baseline
compiling and launching on the CPU device's launch entry; and, where the
tests' fake CUDA driver and NVRTC are at hand, one tiny end-to-end run.
Timings are never asserted."""
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from quicklaunch.bench.cuda import report
from quicklaunch.bench.harness import baseline, facts, kernels, measure, timing, workers
from quicklaunch.bench.harness import run as runner
from quicklaunch.bench.harness.model import (
    ERROR,
    INFLIGHT,
    LAUNCH,
    OK,
    SKIPPED,
    Context,
    NotApplicable,
    Row,
    RowSpec,
    Source,
)

from ..emulation import skip_emulated

ROOT = Path(__file__).resolve().parents[2]
HERE = f"{__name__}:FAKES"
AXPY = r"""
extern "C" __global__ void axpy4(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _const(value, calls=None, tag=None):
    def timer(iters):
        if calls is not None:
            calls.append(tag)
        return value
    return timer


def _missing(ctx):
    kernels.need("quicklaunch_no_such_module", "no-such-package")


def _raising(ctx):
    raise RuntimeError("the driver said no\nsecond line")


def _crashing(ctx):
    os.abort()


def _hanging(ctx):
    time.sleep(60)


def _working(ctx):
    return {"fake.a": {n: _const(100.0 + n) for n in ctx.params},
            "fake.b": {4: _const(7.0), 16: NotApplicable("no 16-argument form")}}


def _spec(prefix, *names):
    return tuple(RowSpec(f"{prefix}.{n}", f"{prefix} {n}", LAUNCH, f"note {n}") for n in names)


FAKES = [
    Source("missing", _spec("missing", "x"), _missing),
    Source("raising", _spec("raising", "x", "y"), _raising),
    Source("crashing", _spec("crashing", "x"), _crashing),
    Source("hanging", _spec("hanging", "x"), _hanging),
    Source("working", _spec("fake", "a", "b"), _working),
]
BY_NAME = {s.name: s for s in FAKES}


def test_missing_peer_is_a_skipped_row_naming_the_package():
    rows = measure.setup_source(BY_NAME["missing"], Context(), iters=10)
    assert [r.status for r in rows] == [SKIPPED]
    assert "no-such-package is not installed" in rows[0].reason


def test_plain_import_error_is_skipped_too():
    def setup(ctx):
        import quicklaunch_no_such_module  # noqa: F401
    rows = measure.setup_source(Source("p", _spec("p", "x"), setup), Context(), iters=10)
    assert rows[0].status == SKIPPED and "not importable" in rows[0].reason


def test_raising_peer_gives_every_declared_row_with_the_reason():
    rows = measure.setup_source(BY_NAME["raising"], Context(), iters=10)
    assert [r.id for r in rows] == ["raising.x", "raising.y"]
    assert {r.status for r in rows} == {ERROR}
    assert rows[0].reason == "RuntimeError: the driver said no second line"


def test_row_without_timer_and_per_cell_failures():
    def setup(ctx):
        return {"p.x": {4: _const(1.0), 16: ValueError("bad 16")},
                "p.y": RuntimeError("only this row")}
    rows = measure.setup_source(Source("p", _spec("p", "x", "y", "z"), setup), Context(),
                                    iters=10)
    x, y, z = rows
    assert x.status == OK and list(x.timers) == [4] and x.cells[16] == "ValueError: bad 16"
    assert y.status == ERROR and y.reason == "RuntimeError: only this row"
    assert z.status == ERROR and "no timer" in z.reason


def test_measure_goes_round_robin_and_takes_medians():
    calls = []
    rows = measure.setup_source(
        Source("p", _spec("p", "x", "y"),
               lambda ctx: {"p.x": {n: _const(float(n), calls, ("x", n)) for n in ctx.params},
                            "p.y": {n: _const(2.0 * n, calls, ("y", n)) for n in ctx.params}}),
        Context(), iters=5)
    done = measure.measure(rows, repeats=3)
    assert done["repeats"] == 3
    one_round = [("x", 4), ("x", 16), ("y", 4), ("y", 16)]
    assert calls == one_round * 4           # a warm-up round, then 3 rounds in the same order
    assert rows[0].median(16) == 16.0 and rows[1].samples[4] == [8.0, 8.0, 8.0]


def test_a_timer_that_fails_later_loses_only_its_cell():
    state = {"n": 0}

    def flaky(iters):
        state["n"] += 1
        if state["n"] == 3:
            raise OSError("device lost")
        return 5.0

    rows = measure.setup_source(
        Source("p", _spec("p", "x", "y"),
               lambda ctx: {"p.x": {4: flaky, 16: _const(3.0)}, "p.y": {4: _const(1.0)}}),
        Context(), iters=5)
    measure.measure(rows, repeats=4)
    x, y = rows
    assert x.status == OK and 4 not in x.timers and x.cells[4] == "OSError: device lost"
    assert len(x.samples[16]) == 4 and len(y.samples[4]) == 4


def test_negative_or_nan_figures_are_failures():
    rows = measure.setup_source(
        Source("p", _spec("p", "x"), lambda ctx: {"p.x": {4: _const(-201.0),
                                                          16: _const(float("nan"))}}),
        Context(), iters=5)
    measure.measure(rows, repeats=2)
    assert rows[0].status == ERROR and not rows[0].samples


def test_budget_cuts_the_rounds():
    def slow(iters):
        time.sleep(0.02)
        return 1.0
    rows = measure.setup_source(Source("p", _spec("p", "x"), lambda ctx: {"p.x": {4: slow}}),
                                    Context(params=(4,)), iters=5)
    done = measure.measure(rows, repeats=50, budget=0.05)
    assert 1 <= done["repeats"] < 50


def test_spelled_loop_calls_with_the_arguments_spelled_out():
    seen = []
    loop = timing.spelled_loop(
        f"f({timing.arglist(3)})",
        {"f": lambda *a: seen.append(a), **timing.argenv((1, "x", 2.5))})
    loop(2)
    assert seen == [(1, "x", 2.5)] * 2


def test_batched_timer_synchronises_after_every_batch():
    log = []
    timer = timing.batched(lambda n: log.append(("launch", n)), lambda: log.append("sync"),
                               4)
    assert timer(10) >= 0
    assert log == ["sync", ("launch", 4), "sync", ("launch", 4), "sync", ("launch", 2), "sync"]


def _run(sources, **kw):
    return runner.run(sources, Context(), iters=10, repeats=2, budget=None, probe=False, **kw)


def test_results_json_and_markdown(tmp_path):
    ctx = Context()
    result = runner.run([BY_NAME["working"], BY_NAME["missing"], BY_NAME["raising"]], ctx,
                         iters=10, repeats=2, budget=None, probe=False)
    data = report.result_json(result, ctx, {"iters": 10, "repeats": 2},
                                  {"machine": facts.machine(), "gpu": {"name": "Test GPU"},
                                   "versions": {"numpy": np.__version__}})
    js, md = report.write(data, tmp_path / "out")
    loaded = json.loads(js.read_text())
    rows = {r["id"]: r for r in loaded["rows"]}
    assert list(rows) == ["fake.a", "fake.b", "missing.x", "raising.x", "raising.y"]
    assert rows["fake.a"]["ns"] == {"4": 104.0, "16": 116.0}
    assert rows["fake.b"]["ns"]["16"] is None and rows["fake.b"]["cells"]["16"].startswith("n/a")
    assert rows["missing.x"]["status"] == SKIPPED
    assert rows["raising.x"]["status"] == ERROR
    assert loaded["config"]["repeats_done"] == 2 and loaded["config"]["params"] == [4, 16]
    text = md.read_text()
    assert "| path | 4 params | 16 params |" in text and "Test GPU" in text
    assert "| fake a | 104.0 | 116.0 |" in text
    assert "| fake b | 7.0 | n/a |" in text
    assert "**skipped**: no-such-package is not installed" in text
    assert "**error**: RuntimeError: the driver said no second line" in text


def test_markdown_differences_against_the_c_baseline():
    rows = [Row("c.launch", "C baseline", "quicklaunch"), Row("ql.configured", "configured",
                                                            "quicklaunch"),
            Row("ql.inflight", "in flight", "quicklaunch", INFLIGHT)]
    rows[0].samples = {4: [1000.0], 16: [1100.0]}
    rows[1].samples = {4: [1040.0], 16: [1150.0]}
    rows[2].samples = {4: [2000.0]}
    result = {"rows": rows, "probes": {}, "mode": "in-process",
              "measured": {"repeats": 1, "seconds": 0}, "seconds": 0}
    data = report.result_json(result, Context(), {"iters": 1}, {"machine": {}, "gpu": {}})
    text = report.markdown(data)
    assert "| configured | 1040.0 | 1150.0 | +40.0 | +50.0 |" in text
    assert "| in flight | 2000.0 | — |" in text


def test_partial_results_are_checkpointed(tmp_path):
    seen = []
    _run([BY_NAME["working"]], checkpoint=lambda r: seen.append(r["measured"]["repeats"]))
    assert seen == [0, 1, 2]


@pytest.fixture
def child_path(monkeypatch):
    """Child processes must import this test module (the fakes) too."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + old if old else ""))


@skip_emulated("each probe is a child Python that must answer within the 6 s "
                "cut-off the hanging one is caught by; an emulated interpreter importing the "
                "harness takes longer than that")
def test_probes_turn_crashes_hangs_and_missing_peers_into_rows(child_path):
    ctx = Context()
    # each probe is a child Python process: on a loaded 2-core machine a
    # healthy one can take a few seconds, so the cut-off is generous
    result = runner.run(FAKES, ctx, iters=10, repeats=1, budget=None, probe=True,
                         probe_timeout=6, sources_ref=HERE)
    rows = {r.id: r for r in result["rows"]}
    assert rows["crashing.x"].status == ERROR and "SIGABRT" in rows["crashing.x"].reason
    assert rows["hanging.x"].status == ERROR and "did not finish within 6 s" in \
        rows["hanging.x"].reason
    assert rows["missing.x"].status == SKIPPED
    assert rows["raising.y"].status == ERROR and "driver said no" in rows["raising.y"].reason
    assert rows["fake.a"].status == OK and rows["fake.a"].median(4) == 104.0
    assert result["probes"]["crashing"]["failure"]


def test_isolated_mode_measures_in_children(child_path):
    result = runner.run([BY_NAME["working"], BY_NAME["crashing"]], Context(), iters=10,
                         repeats=2, budget=1, isolated=True, probe_timeout=10, sources_ref=HERE)
    rows = {r.id: r for r in result["rows"]}
    assert rows["fake.a"].samples[16] == [116.0, 116.0]
    assert "SIGABRT" in rows["crashing.x"].reason


def test_without_a_cuda_driver_quicklaunch_rows_say_why(tmp_path):
    env = dict(os.environ, QUICKLAUNCH_LIBCUDA=str(tmp_path / "no" / "libcuda.so.1"))
    out = tmp_path / "rows.json"
    proc = subprocess.run([sys.executable, "-m", "quicklaunch.bench.harness.workers", "--source",
                           "quicklaunch", "--sources", "quicklaunch.bench.cuda.sources:SOURCES",
                           "--json", str(out)],
                          env=workers.child_env() | env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {r["id"] for r in rows} >= {"ql.configured", "c.launch", "c.inflight"}
    assert all(r["status"] != OK for r in rows)
    assert all("CUDA driver" in r["reason"] for r in rows), rows[0]["reason"]


def test_bench_kernels_follow_the_cpu_benchmark_source():
    kinds = kernels.bench_kernels()[2]
    assert kinds[4] == ["float32", None, None, "int32"]
    assert kinds[16] == ["float32", None, None, "int32", "float32", None, None, "int32",
                         "float64", None, None, "int64", "uint32", None, None, "uint64"]
    made = []
    args = kernels.typed_args(16, lambda a: made.append(a) or object())
    assert args[1] is args[5] and args[2] is args[6]       # x and y given twice, as on the CPU
    assert args[9] is not args[10]                          # d and d.copy()
    assert len(made) == 6 and isinstance(args[8], np.float64) and isinstance(args[15], np.uint64)
    assert kernels.typed_args(4, lambda a: a, "python")[0] == 2.0
    assert type(kernels.typed_args(4, lambda a: a, "python")[3]) is int


def test_c_params_block_holds_each_value_at_its_own_address():
    class P:
        def __init__(self, name, kind):
            self.name, self.kind = name, kind

    class K:
        params = (P("a", "float32"), P("x", "const pointer"), P("y", "pointer"),
                  P("n", "int32"), P("w", "uint64"))

    class Buf:
        def __init__(self, ptr):
            self.ptr = ptr

    class Iface:
        __cuda_array_interface__ = {"data": (0xBEEF00, False)}

    block, _keep = baseline.c_params(K, (2.5, Buf(0x1000), Iface(), -3, 2**64 - 1))
    read = [ctypes.cast(block[i], ctypes.POINTER(t)).contents.value for i, t in
            enumerate((ctypes.c_float, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32,
                       ctypes.c_uint64))]
    assert read == [2.5, 0x1000, 0xBEEF00, -3, 2**64 - 1]

    class S:
        params = (P("s", "struct"),)

    with pytest.raises(TypeError, match="kind struct"):
        baseline.c_params(S, (b"xx",))


@pytest.fixture(scope="module")
def baseline_lib(tmp_path_factory):
    if baseline.find_cc() is None:
        pytest.skip("no C compiler")
    return baseline.load(baseline.build(tmp_path_factory.mktemp("cb"),
                                        extra_flags=("-Wall", "-Wextra", "-Werror")))


def test_c_baseline_without_the_device_library_says_why(baseline_lib, tmp_path):
    missing = tmp_path / "libcuda.so.1"
    dev = SimpleNamespace(backend=SimpleNamespace(launch_entry=0, entry_library=str(missing)))
    with pytest.raises(RuntimeError, match=r"dlopen\(.*libcuda\.so\.1\) failed"):
        baseline.CBaseline(dev, sync="cuCtxSynchronize", lib=baseline_lib)
    libc = SimpleNamespace(backend=SimpleNamespace(launch_entry=0, entry_library="libc.so.6"))
    with pytest.raises(RuntimeError, match="libc.so.6 has no cuCtxSynchronize"):
        baseline.CBaseline(libc, sync="cuCtxSynchronize", lib=baseline_lib)


def test_c_baseline_launches_through_the_cpu_devices_entry(baseline_lib):
    """The C loop calls the backend's launch entry with quicklaunch's kernel
    handle and a parameter block of the kernel's arguments: the kernel runs."""
    import quicklaunch as ql
    dev = ql.device("cpu")
    k = ql.compile(AXPY, device=dev).get_kernel("axpy4")
    x, y = np.arange(32, dtype=np.float32), np.ones(32, np.float32)
    c = baseline.CBaseline(dev, lib=baseline_lib)
    block, _keep = baseline.c_params(k, (2.0, x, y, 32))
    c.launch_once(k, block, 1, 32)
    np.testing.assert_array_equal(y, 2 * np.arange(32, dtype=np.float32) + 1)
    assert c.launch_ns(k, block, 10) > 0 and c.launch_ns(k, block, 10, batch=3) > 0
    with pytest.raises(RuntimeError, match="no synchronise function"):
        c.sync_ns(5)


def _fake_library(tmp_path, source: str, name: str, compiler_check):
    """tests/<source> built as tmp_path/<name>; skips without the source, a C
    compiler, or the runtime compiler ``compiler_check()`` looks for."""
    fake = ROOT / "tests" / source
    if not fake.exists() or baseline.find_cc() is None:
        pytest.skip(f"no {source} or no C compiler")
    try:
        compiler_check()
    except Exception as exc:
        pytest.skip(f"no runtime compiler: {exc}")
    lib = tmp_path / name
    build = subprocess.run([baseline.find_cc(), "-O1", "-shared", "-fPIC", "-pthread", "-o",
                            str(lib), str(fake)], capture_output=True, text=True)
    if build.returncode:
        pytest.skip(f"{source} did not build: {build.stderr[-300:]}")
    return lib


def test_end_to_end_on_the_fake_driver(tmp_path):
    """cuda_launch.py against tests/cuda_fake's libcuda (no kernels run, so no
    result checks): quicklaunch's rows and the C baseline's are measured, the
    C loop on the backend's launch entry (the very cuLaunchKernel quicklaunch
    calls) and cuCtxSynchronize from the library the backend launches through."""
    import quicklaunch as ql
    lib = _fake_library(tmp_path, "cuda_fake/fake_libcuda.c", "libcuda.so.1",
                        ql.cuda.nvrtc_version)
    env = workers.child_env() | {"QUICKLAUNCH_LIBCUDA": str(lib)}
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cuda_launch.py"), "--no-check", "--no-probe",
         "--only", "quicklaunch,reference", "--iters", "300", "--repeats", "2", "--inflight",
         "300", "--roundtrip", "30", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads((out / "results.json").read_text())
    rows = {r["id"]: r for r in data["rows"]}
    for rid in ("ql.indexed", "ql.configured", "ql.direct", "c.launch", "c.inflight",
                "ql.inflight", "c.roundtrip", "ql.roundtrip", "ref.floor"):
        assert rows[rid]["status"] == OK, (rid, rows[rid]["reason"])
        assert all(v is not None and v > 0 for v in rows[rid]["ns"].values()), rid
    assert rows["c.sync"]["status"] == OK       # cuCtxSynchronize from the entry library
    assert "partial" not in data
    assert "| quicklaunch configured |" in (out / "results.md").read_text()


def test_hip_benchmark_on_the_fake_runtime(tmp_path):
    """hip_launch.py against tests/hip's fake HIP runtime (launches are
    recorded, not run): the C row on the backend's launch entry with
    hipDeviceSynchronize from its library, and quicklaunch's rows, measured."""
    import quicklaunch as ql
    lib = _fake_library(tmp_path, "hip/fake_libamdhip64.c", "libamdhip64.so",
                        ql.hip.hiprtc_version)
    env = workers.child_env() | {"QUICKLAUNCH_LIBHIP": str(lib)}
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hip_launch.py"), "--quick",
                           "--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads((out / "hip_results.json").read_text())["rows"]
    measured = [r for r in rows if r["median_ns"] is not None]
    assert {r["name"].split(":")[0] for r in measured} >= {"C", "quicklaunch", "Python"}
    assert len([r for r in measured if r["name"].startswith("quicklaunch")]) == 3
    assert "| C: hipModuleLaunchKernel |" in (out / "hip_results.md").read_text()

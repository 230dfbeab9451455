"""The CG benchmark (quicklaunch.bench.cg): the quicklaunch kernels agree
with NumPy, and the runner's plumbing keeps its contract. Timings are never
asserted."""
import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.bench import cg
from quicklaunch.bench.cg import check, kernels as K, probe, runner, shapes as S
from quicklaunch.bench.cg.__main__ import main
from quicklaunch.bench.cg.impl import Implementation, Solver
from quicklaunch.bench.cg.numpy_impl import NumpySolver
from quicklaunch.bench.cg.problem import apply_stencil, make_problem
from quicklaunch.bench.cg.ql_impl import QuicklaunchSolver, modules

from ..emulation import skip_emulated


def numpy_result(problem, iterations):
    s = NumpySolver(problem)
    s.reset()
    s.solve(iterations)
    return s.result()


def solve(solver, iterations):
    solver.reset()
    solver.solve(iterations)
    return solver.result()


@pytest.mark.parametrize("N", [16, 33])
@pytest.mark.parametrize("graph", [False, True], ids=["host scalars", "graph"])
def test_quicklaunch_matches_numpy(cpu, N, graph):
    problem = make_problem(N)
    ref = numpy_result(problem, 30)
    solver = QuicklaunchSolver(cpu, problem, graph)
    u = solve(solver, 30)
    assert u.shape == (N, N) and u.dtype == np.float32
    assert check.compare(u, problem.residual(u), ref, problem.residual(ref)) is None
    np.testing.assert_allclose(u, ref, rtol=0, atol=1e-4 * np.abs(ref).max())
    # a second solve from reset gives the same field (graph replayed, not re-recorded)
    np.testing.assert_array_equal(solve(solver, 30), u)


# GPU-style shapes on the CPU device: several blocks (the last-block ticket),
# warp shuffles and __syncthreads, grid-stride loops; and the CPU's own shapes.
DOT_SHAPES = [(1, 1, 16), (1, 32, 48), (3, 64, 1), (5, 256, 1), (4, 96, 8)]


@pytest.mark.parametrize("shape", DOT_SHAPES, ids=lambda s: "grid%d-block%d-run%d" % s)
def test_dot_kernel(cpu, shape, rng):
    _, red = modules(cpu)
    grid, block, run = shape
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    partial = np.zeros(K.MAX_DOT_BLOCKS, np.float32)
    ticket = np.zeros(1, np.uint32)
    s = np.zeros(K.NSCALARS, np.float32)
    dot = red.cg_dot.configure(grid, block)
    expect = float(np.dot(a.astype(np.float64), b))
    for _ in range(2):   # the ticket wraps back to 0: a second launch needs no reset
        dot(a, b, n, run, partial, ticket, s, K.STORE_PAP)
        assert s[K.PAP] == pytest.approx(expect, rel=1e-5, abs=1e-4)
        assert ticket[0] == 0
    s[K.RR] = 2.0
    dot(a, b, n, run, partial, ticket, s, K.DEV_ALPHA)
    assert s[K.ALPHA] == pytest.approx(2.0 / expect, rel=1e-5)
    dot(a, a, n, run, partial, ticket, s, K.DEV_BETA)
    aa = float(np.dot(a.astype(np.float64), a))
    assert s[K.BETA] == pytest.approx(aa / 2.0, rel=1e-5)
    assert s[K.RR] == pytest.approx(aa, rel=1e-5)


@pytest.mark.parametrize("graph", [False, True], ids=["host scalars", "graph"])
@pytest.mark.parametrize("kind", ["gpu", "runs"])
def test_other_shapes_on_the_cpu(cpu, graph, kind):
    """The launch shapes a GPU gets (one element per thread, several dot
    blocks), and runs of elements over several blocks (the CPU's shape for
    large grids), give the same solve on the CPU device."""
    problem = make_problem(20)
    n = (problem.N + 2) ** 2
    if kind == "gpu":
        gpu = SimpleNamespace(kind="cuda")
        shapes = {"apply": S.apply_shape(gpu, problem.N), "vector": S.vector_shape(gpu, n),
                  "dot": (3, 64, 1)}
        assert shapes["vector"][2] == 1 and shapes["apply"][2] == 1
    else:
        shapes = {"apply": ((2, problem.N), 4, 3), "vector": (-(-n // 40), 8, 5),
                  "dot": (2, 32, 7)}
    ref = numpy_result(problem, 20)
    u = solve(QuicklaunchSolver(cpu, problem, graph, shapes=shapes), 20)
    assert check.compare(u, problem.residual(u), ref, problem.residual(ref)) is None


def test_cpu_shapes_stay_on_the_calling_thread_when_small(cpu):
    assert S.vector_shape(cpu, 1000) == (1, 1, 1000)
    assert S.apply_shape(cpu, 30) == ((1, 1), (1, 30), 30)
    grid, block, run = S.vector_shape(cpu, S.INLINE_MAX + 1)
    assert block == 256 and run == S.CPU_RUN and grid * block * run > S.INLINE_MAX
    assert S.dot_shape(cpu, 1000)[:2] == (1, 1)


# apply shapes: a GPU's (one point per thread), the CPU's (a row per thread,
# and runs of points)
N_APPLY = 37
APPLY_SHAPES = [((2, N_APPLY), 32, 1), ((1, 1), (1, N_APPLY), N_APPLY), ((2, N_APPLY), 4, 5),
                ((1, 3), (2, 16), 19)]


@pytest.mark.parametrize("shape", APPLY_SHAPES, ids=["gpu", "cpu-rows", "runs", "2d-blocks"])
def test_stencil_kernel_matches_numpy(cpu, rng, shape):
    vec, _ = modules(cpu)
    N = N_APPLY
    W = N + 2
    p = np.zeros((W, W), np.float32)
    p[1:-1, 1:-1] = rng.standard_normal((N, N))
    ap = np.full((W, W), np.nan, np.float32)
    ap[0, :] = ap[-1, :] = ap[:, 0] = ap[:, -1] = 0
    grid, block, run = shape
    vec.cg_apply[grid, block](p, ap, N, run)
    np.testing.assert_allclose(ap[1:-1, 1:-1], apply_stencil(p[1:-1, 1:-1]), rtol=1e-6, atol=1e-5)
    assert not ap[0].any() and not ap[-1].any() and not ap[:, 0].any() and not ap[:, -1].any()


def test_check_catches_one_iteration_less():
    problem = make_problem(64)
    ref, short = numpy_result(problem, 50), numpy_result(problem, 49)
    assert check.compare(short, problem.residual(short), ref, problem.residual(ref)) \
        .startswith("wrong result")
    assert check.compare(ref, problem.residual(ref), ref, problem.residual(ref)) is None


# ------------------------------------------------------------------ runner
class Broken(Implementation):
    """A peer that fails where it is told to."""
    distribution = ""

    def __init__(self, name, where, result=None):
        self.name, self.where, self._result = name, where, result

    def version(self):
        return "1.0"

    def prepare(self, device):
        if self.where == "prepare":
            raise RuntimeError("cannot compile\nsecond line")

    def solver(self, problem):
        if self.where == "solver":
            raise ValueError("no memory")
        outer = self

        class S(Solver):
            def reset(self):
                pass

            def solve(self, iterations):
                if outer.where == "solve":
                    raise RuntimeError("kernel fault")

            def result(self):
                return outer._result(problem) if outer._result else np.zeros(
                    (problem.N, problem.N), np.float32)
        return S()


class Missing(Implementation):
    name = "missing"
    module = "quicklaunch_no_such_peer"
    distribution = "quicklaunch-no-such-peer"


def test_run_quick_contract():
    calls = []
    result = cg.run(sizes=(8, 16, 256), implementations=["numpy", "quicklaunch",
                                                          "quicklaunch graph"],
                    iterations=10, repeats=5, quick=True,
                    progress=lambda done, total, what: calls.append((done, total, what)))
    assert set(result) == {"device", "iterations", "sizes", "rows", "versions"}
    assert result["device"] == ql.device().name
    assert result["iterations"] == 10
    assert result["sizes"] == [8, 16]            # quick drops sizes above 128
    assert list(result["rows"]) == ["numpy", "quicklaunch", "quicklaunch graph"]
    for name, rows in result["rows"].items():
        assert set(rows) == {"8", "16"}
        for row in rows.values():
            assert set(row) == {"ms_per_iter", "residual", "status"}
            assert row["status"] == "ok", (name, row)
            assert isinstance(row["ms_per_iter"], float) and row["ms_per_iter"] > 0
            assert isinstance(row["residual"], float)
    assert result["versions"]["quicklaunch"] == ql.__version__
    assert all(isinstance(v, str) for v in result["versions"].values())
    json.dumps(result)
    assert calls and all(0 <= d <= t for d, t, _ in calls)
    assert calls[-1][0] == calls[-1][1] == 6


def test_run_failures_are_rows():
    def wrong(problem):
        return np.ones((problem.N, problem.N), np.float32)
    impls = ["numpy", Missing(), Broken("bad prepare", "prepare"), Broken("bad solver", "solver"),
             Broken("bad solve", "solve"), Broken("wrong", None, wrong), "no such row"]
    result = cg.run(sizes=(8, 12), implementations=impls, iterations=5, quick=True)
    json.dumps(result)
    rows = result["rows"]
    for size in ("8", "12"):
        assert rows["numpy"][size]["status"] == "ok"
        assert rows["missing"][size]["status"].startswith("not installed: quicklaunch_no_such_peer")
        assert "pip install quicklaunch-no-such-peer" in rows["missing"][size]["status"]
        assert rows["bad prepare"][size]["status"] == "failed: RuntimeError: cannot compile"
        assert rows["bad solver"][size]["status"] == "failed: ValueError: no memory"
        assert rows["bad solve"][size]["status"] == "failed: RuntimeError: kernel fault"
        assert rows["wrong"][size]["status"].startswith("wrong result")
        assert rows["wrong"][size]["ms_per_iter"] is None
        assert rows["wrong"][size]["residual"] is not None
        assert rows["no such row"][size]["status"].startswith("unknown implementation")
        for name in rows:
            if name != "numpy" and name != "wrong":
                assert rows[name][size]["ms_per_iter"] is None
                assert rows[name][size]["residual"] is None
    assert result["versions"]["missing"] == "not installed"


def test_run_skips_what_would_be_too_slow(monkeypatch):
    monkeypatch.setattr(runner, "SKIP_SECONDS", 0.0)
    result = cg.run(sizes=(8, 16, 24), implementations=["numpy"], iterations=5, quick=True)
    rows = result["rows"]["numpy"]
    assert rows["8"]["status"] == "ok"
    for size in ("16", "24"):
        assert rows[size]["status"].startswith("skipped: too slow (est. ")


def test_registry_names():
    assert list(cg.registry()) == ["numpy", "scipy.sparse", "quicklaunch", "quicklaunch graph",
                                   "warp", "warp graph", "numba", "pyopencl"]


def test_command_prints_a_table(capsys, tmp_path):
    out = tmp_path / "cg.json"
    assert main(["--quick", "--sizes", "8", "--only", "numpy,quicklaunch", "--iterations", "5",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "N=8" in text and "quicklaunch" in text and "numpy" in text
    assert json.loads(out.read_text())["sizes"] == [8]


@skip_emulated("the healthy probe, a child Python, must answer within the 2 s "
                "cut-off that makes the hanging one quick to see; an emulated interpreter "
                "takes longer than that to start")
def test_probe_turns_crashes_and_hangs_into_reasons():
    py = sys.executable
    answer = 'print(\'{"status": {"a": "ok", "b": "not installed: b"}}\')'
    groups = {"fine": (["a", "b"], [py, "-c", answer]),
              "crash": (["c"], [py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]),
              "hang": (["d"], [py, "-c", "import time; time.sleep(60)"]),
              "mute": (["e"], [py, "-c", "raise SystemExit(3)"])}
    verdicts = probe.probe_all(groups, timeout=2)
    assert verdicts["a"] is None and verdicts["b"] == "not installed: b"
    assert verdicts["c"].startswith("failed: crashed (SIGSEGV) in a probe")
    assert verdicts["d"] == "failed: the probe gave no answer in 2 s (hung?)"
    assert verdicts["e"].startswith("failed: the probe exited with status 3")


def test_a_peer_that_crashes_in_its_probe_is_a_row(monkeypatch):
    crash = [sys.executable, "-c", "import os; os.abort()"]
    monkeypatch.setattr(probe, "command", lambda device, names: crash)
    result = cg.run(sizes=(8,), implementations=["numba", "numpy"], iterations=5, quick=True)
    assert result["rows"]["numba"]["8"]["status"].startswith("failed: crashed (SIGABRT)")
    assert result["rows"]["numpy"]["8"]["status"] == "ok"
    json.dumps(result)

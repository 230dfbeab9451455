"""Region fission changes speed, never results (issue 15, item 2): every
barrier or warp-function kernel of the CPU test corpus (each *SOURCE string of tests/cpu/,
collected as tests/nvrtc/test_corpus.py does) that the fission pass accepts
runs in both tiers, fission and fibers (QUICKLAUNCH_CPU_FISSION=0), on the
same inputs; every output array must match bit for bit, and a launch that
fails on fibers must fail on fission with the same message."""
import glob
import importlib
import os
import re
import warnings

import numpy as np
import pytest

import quicklaunch as ql

DTYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "unsigned int": np.uint32,
          "unsigned": np.uint32, "unsigned char": np.uint8, "short": np.int16,
          "float4": np.float32, "char": np.int8}
WIDTH = {"float4": 4}
# Launch shapes the corpus kernels are written for (default: 64 threads).
SHAPES = {"transpose_coalesced": ((32, 8), [(1, 1), (2, 2)]),
          "matmul_tiled": ((16, 16), [(1, 1), (2, 2)])}
SCALARS = {"inclusive": 1, "dir": 1, "shift": 3, "nbins": 16, "cols": 100, "width": 64,
           "height": 64, "M": 32, "N": 32, "K": 32, "over": 0}
# Kernels whose size parameter must be the block size (they read the shared
# memory of n threads; more would read memory no thread wrote).
# bitonic_sort_static sorts n keys with one thread per key: with n above the
# block size it compares against shared memory no thread wrote, whose stale
# contents differ between modules (the order-dependent mismatch once seen
# only in full-suite runs).
PER_BLOCK = {("carve_mixed", "n"), ("floats_then_shorts", "nf"), ("bitonic_sort_static", "n")}
ELEMS = 1 << 15
SHARED = 16384


def _sources() -> dict:
    """"module.CONSTANT" -> source for every *SOURCE string of tests/cpu/ (as
    tests/nvrtc/test_corpus.py collects them; that module imports this one,
    so it is imported only when a test runs)."""
    found = {}
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
        name = os.path.basename(path)[:-3]
        if name.startswith("test_fission"):
            continue
        for const, value in vars(importlib.import_module(f"tests.cpu.{name}")).items():
            if const.endswith("SOURCE") and isinstance(value, str):
                found[f"{name}.{const}"] = value
    return found


SOURCES = _sources()
# Modules stay loaded for the session: a module that ran with dynamic shared
# memory cannot be unloaded (the shim's thread_local arena keeper has a
# destructor, so glibc keeps the library), and a later dlopen of a reused
# /proc/self/fd/N name then hands back that library (a loader issue, reported).
_KEEP = []


def _compile(case, fission: bool, monkeypatch):
    from tests.nvrtc import test_corpus as tc
    with monkeypatch.context() as m:
        m.setenv("QUICKLAUNCH_CPU_FISSION", "1" if fission else "0")
        opts = [o for o in tc.ADAPT.get(case, ([],))[0] if o.startswith("-D")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ql.compile(SOURCES[case], device="cpu", options=opts,
                              name_expressions=tc.name_expressions(case))


def _cases():
    return sorted(c for c, s in SOURCES.items()
                  if re.search(r"__syncthreads|\.sync\(\)|cg::sync|__shfl\w*_sync|"
                               r"__ballot_sync|__any_sync|__all_sync|__syncwarp", s))


def _element(ctype: str, expr: str) -> str:
    t = ctype.replace("const", "").replace("*", "").replace("__restrict__", "").strip()
    t = " ".join(t.split())
    if t == "T":
        t = expr.split("<", 1)[1].split(",")[0].rstrip(">").strip()
    return t


def _args(kernel, expr, rng, threads):
    args, base = [], expr.split("<")[0]
    for p in kernel.params:
        if p.ctype.rstrip().endswith("*"):
            t = _element(p.ctype, expr)
            dt = np.dtype(DTYPES[t])
            n = ELEMS * WIDTH.get(t, 1)
            if dt.kind == "f":
                a = rng.standard_normal(n).astype(dt)
            elif dt == np.uint8:
                a = rng.integers(0, 256, n).astype(dt)
            else:
                a = rng.integers(0, 8, n).astype(dt)   # indices in some kernels
            args.append(a)
        else:
            args.append(threads // (2 if p.name == "nf" else 1) if (base, p.name) in PER_BLOCK
                        else SCALARS.get(p.name, 2 * threads))
    return args


def _launch(mod, expr, grid, block, args):
    try:
        mod[expr][grid, block, SHARED](*args)
        return None
    except ql.LaunchError as exc:
        # the faulting instruction's address is the module's own (two modules
        # differ there); kernel, block, thread, access and address must not
        return re.sub(r" \[at instruction 0x[0-9a-f]+\]", " [at instruction ...]", str(exc))


def prefetch_job(item):
    """The source a selected test builds with fission (tests/prefetch.py)."""
    if os.environ.get("QUICKLAUNCH_CPU_FISSION", "1").strip() in ("0", "no", "off", "false"):
        return None
    return getattr(getattr(item, "callspec", None), "params", {}).get("case")


@pytest.fixture(scope="module", autouse=True)
def _compiled_ahead(request, cpu):
    """The selected sources' fission builds compiled ahead on both cores
    (tests/prefetch.py); the tests then read the compile cache."""
    from tests.prefetch import ahead
    ahead(request)


def compile_ahead(case):
    """One prefetch job (in a worker process): the fission build of a case."""
    from tests.nvrtc import test_corpus as tc
    opts = [o for o in tc.ADAPT.get(case, ([],))[0] if o.startswith("-D")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ql.compile(SOURCES[case], device="cpu", options=opts,
                   name_expressions=tc.name_expressions(case))


@pytest.mark.parametrize("case", _cases())
def test_fission_matches_fibers(cpu, case, monkeypatch):
    fis = _compile(case, True, monkeypatch)
    _KEEP.append(fis)
    for e in fis.kernels:     # the pass refuses with a reason; it never breaks
        why = fis[e].attributes["tier_reason"]
        assert not any(w in why for w in ("could not parse", "did not compile",
                                          "pass failed")), (e, why)
    accepted = [e for e in fis.kernels if fis[e].tier == "fission"]
    if not accepted:   # (no fibers build to compare with: it would be the same module)
        pytest.skip(f"{case}: no kernel runs as fission")
    fib = _compile(case, False, monkeypatch)
    _KEEP.append(fib)
    assert all(fib[e].tier != "fission" for e in fib.kernels)
    rng = np.random.default_rng(15)
    for expr in accepted:
        base = expr.split("<")[0]
        block, grids = SHAPES.get(base, ((64,), [1, 3]))
        m = re.search(r"<[^<>]*?\b(\d{2,4})\b", expr)
        if m and int(m.group(1)) >= 32:
            block = (int(m.group(1)),)    # block_reduce<T, BLOCK>
        threads = int(np.prod(block))
        for grid in grids:
            inputs = _args(fis[expr], expr, rng, threads)
            a = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
            b = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
            ea = _launch(fib, expr, grid, block, a)
            eb = _launch(fis, expr, grid, block, b)
            assert ea == eb, f"{expr} {grid}x{block}: fibers {ea!r}, fission {eb!r}"
            for i, (x, y) in enumerate(zip(a, b)):
                if isinstance(x, np.ndarray):
                    assert x.tobytes() == y.tobytes(), \
                        f"{expr} {grid}x{block}: parameter {fis[expr].params[i].name} differs"

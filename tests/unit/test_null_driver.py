"""The null CUDA driver (quicklaunch.bench.cuda.null_driver.c) and the
plumbing of the null-driver section: it builds (against cuda.h's prototypes
where the toolkit is installed), validates launches as the driver does,
its check switch catches a row that launches the wrong thing, a missing peer
is a row that says why, and the section's JSON schema. No timing is
asserted."""
import ctypes
import json
import shutil

import pytest

from quicklaunch.bench.cuda import null_overhead as no
from quicklaunch.bench.harness.baseline import find_cc

HERE = __name__
PTX = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry kern(\n" \
      b".param .f32 kern_param_0,\n.param .u64 kern_param_1\n)\n{\nret;\n}\n\0"
TINY = {"rounds": 2, "sample_s": 0.0005, "max_iters": 200}

pytestmark = pytest.mark.skipif(find_cc() is None, reason="no C compiler for the null driver")

_vp, _ui = ctypes.c_void_p, ctypes.c_uint


@pytest.fixture(scope="module")
def lib_path(tmp_path_factory):
    return no.build(tmp_path_factory.mktemp("null-cuda"))


@pytest.fixture
def cu(lib_path, tmp_path):
    """A fresh instance of the null driver (a copy under a new name), with a
    current context and the PTX above loaded: (lib, function handle)."""
    copy = tmp_path / "libcuda-copy.so.1"
    shutil.copyfile(lib_path, copy)
    lib = ctypes.CDLL(str(copy))
    lib.cuLaunchKernel.argtypes = [_vp, _ui, _ui, _ui, _ui, _ui, _ui, _ui, _vp,
                                   ctypes.POINTER(_vp), ctypes.POINTER(_vp)]
    assert lib.cuInit(0) == 0
    ctx = _vp()
    assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert lib.cuCtxSetCurrent(ctx) == 0
    mod, fn = _vp(), _vp()
    assert lib.cuModuleLoadData(ctypes.byref(mod), PTX) == 0
    assert lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"kern") == 0
    return lib, fn, str(copy)


def _params():
    a, p = ctypes.c_float(2.0), ctypes.c_uint64(0x1234)
    block = (_vp * 2)(ctypes.addressof(a), ctypes.addressof(p))
    return block, (a, p)


def test_builds_with_the_entries_the_peers_need(lib_path, tmp_path):
    lib = ctypes.CDLL(str(lib_path))
    for name in ("cuInit", "cuGetProcAddress_v2", "cuGetExportTable", "cuLaunchKernel",
                 "cuLaunchKernelEx", "cuLibraryLoadData", "cuLibraryGetKernel",
                 "cuCtxGetStreamPriorityRange", "cuStreamCreateWithPriority",
                 "cuDeviceGetUuid_v2", "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2",
                 "cuMemGetInfo_v2", "cuKernelGetAttribute", "cuGraphAddKernelNode_v2",
                 "ql_null_capture_arm", "ql_null_capture_get"):
        assert hasattr(lib, name), name
    # and without cuda.h (the prototypes then come from the file itself)
    assert no.build(tmp_path / "plain", check_prototypes=False).is_file()


@pytest.mark.skipif(no.find_cuda_h() is None, reason="no cuda.h to check the prototypes")
def test_every_entry_matches_cuda_h(tmp_path):
    assert no.build(tmp_path, check_prototypes=True).is_file()


def test_export_table_not_found_and_proc_address(cu):
    lib, _, _ = cu
    out = _vp(1)
    assert lib.cuGetExportTable(ctypes.byref(out), None) == 500 and not out.value
    status = ctypes.c_int(-1)
    assert lib.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(out), 12000,
                                   ctypes.c_uint64(0), ctypes.byref(status)) == 0
    assert out.value == ctypes.cast(lib.cuMemAlloc_v2, _vp).value and status.value == 0
    assert lib.cuGetProcAddress_v2(b"cuNoSuchEntry", ctypes.byref(out), 12000,
                                   ctypes.c_uint64(0), ctypes.byref(status)) == 500
    assert status.value == 1


def test_launch_validates_as_the_driver_does(cu):
    lib, fn, _ = cu
    block, keep = _params()
    L = lib.cuLaunchKernel
    assert L(fn, 1, 1, 1, 1, 1, 1, 0, None, block, None) == 0
    assert L(None, 1, 1, 1, 1, 1, 1, 0, None, block, None) == 400      # no function
    assert L(fn, 0, 1, 1, 1, 1, 1, 0, None, block, None) == 1          # grid 0
    assert L(fn, 1, 1, 1, 1025, 1, 1, 0, None, block, None) == 1       # block too wide
    assert L(fn, 1, 1, 1, 32, 32, 2, 0, None, block, None) == 1        # 2048 threads
    assert L(fn, 1, 65536, 1, 1, 1, 1, 0, None, block, None) == 1      # grid y too tall
    assert L(fn, 1, 1, 1, 1, 1, 1, 49153, None, block, None) == 1      # shared over 48 KiB
    extra = (_vp * 5)(1, ctypes.addressof(keep[0]), 2, ctypes.addressof(ctypes.c_size_t(4)),
                      0)
    assert L(fn, 1, 1, 1, 1, 1, 1, 0, None, block, extra) == 1         # both: exclusive
    assert L(fn, 1, 1, 1, 1, 1, 1, 0, None, None, extra) == 0
    bad = _vp()
    assert lib.cuModuleGetFunction(ctypes.byref(bad), _module(lib), b"absent") == 500
    assert lib.cuCtxSetCurrent(None) == 0
    assert L(fn, 1, 1, 1, 1, 1, 1, 0, None, block, None) == 201        # no current context


def _module(lib):
    mod = _vp()
    assert lib.cuModuleLoadData(ctypes.byref(mod), PTX) == 0
    return mod


def test_check_switch_captures_one_launch(cu):
    lib, fn, path = cu
    drv = no.Driver(path)
    block, _ = _params()
    launch = lambda g=1: lib.cuLaunchKernel(fn, g, 1, 1, 1, 1, 1, 0, None, block, None)
    params = [(4, bytes(ctypes.c_float(2.0))), (8, (0x1234).to_bytes(8, "little"))]
    assert drv.check(no.Expect("kern", params), launch) == ""
    why = drv.check(no.Expect("kern", params), lambda: launch(2))
    assert "grid (2, 1, 1), expected (1, 1, 1)" in why
    wrong = [(4, bytes(ctypes.c_float(3.0))), params[1]]
    assert "parameter bytes differ at byte 2" in drv.check(no.Expect("kern", wrong), launch)
    assert "received no launch" in drv.check(no.Expect("kern", params), lambda: None)
    assert "kernel 'kern', expected 'other'" in drv.check(no.Expect("other", params), launch)


# ---------------------------------------------------------------- sources for measure()
def _launch_source(grid_launched):
    """A source whose row launches 'kern' with grid_launched, claiming grid 1."""
    def source(drv):
        import os
        lib = ctypes.CDLL(os.environ.get("QUICKLAUNCH_LIBCUDA") or drv.lib._name)
        lib.cuLaunchKernel.argtypes = [_vp, _ui, _ui, _ui, _ui, _ui, _ui, _ui, _vp,
                                       ctypes.POINTER(_vp), ctypes.POINTER(_vp)]
        lib.cuInit(0)
        ctx, mod, fn = _vp(), _vp(), _vp()
        lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
        lib.cuCtxSetCurrent(ctx)
        lib.cuModuleLoadData(ctypes.byref(mod), PTX)
        lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"kern")
        block, keep = _params()
        no._KEEP.append((block, keep))

        def loop(it):
            for _ in range(it):
                lib.cuLaunchKernel(fn, grid_launched, 1, 1, 1, 1, 1, 0, None, block, None)

        def timer(it):
            import time
            t0 = time.perf_counter_ns()
            loop(it)
            return (time.perf_counter_ns() - t0) / it
        exp = no.Expect("kern", [(4, bytes(ctypes.c_float(2.0))),
                                 (8, (0x1234).to_bytes(8, "little"))])
        name = "right launcher" if grid_launched == 1 else "wrong launcher"
        row = no.NullRow(name, "test", no.ENTRY, "ctypes cuLaunchKernel")
        ref = no.NullRow(no.C_LOOP[no.ENTRY], "reference", None, "")
        row.cases = {n: no.Case(timer, lambda: loop(1), exp) for n in (4, 16)}
        ref.cases = {n: no.Case(timer, None, None) for n in (4, 16)}
        return [row, ref] if grid_launched == 1 else [row]
    source.__name__ = f"launch_grid_{grid_launched}"
    return source


def missing_peer(drv):
    row = no.NullRow("missing peer", "nowhere", no.ENTRY, "")
    try:
        no._need("quicklaunch_no_such_peer", "no-such-peer")
    except Exception as exc:  # noqa: BLE001 - the row or section says why
        row.cases = {4: exc, 16: exc}
    return [row]


FAKE_SOURCES = (_launch_source(1), _launch_source(2), missing_peer)


def test_measure_catches_a_wrong_launch_and_names_a_missing_peer(cu):
    _, _, path = cu
    rows = no.measure(no.Driver(path), FAKE_SOURCES, **TINY)
    ok, wrong, missing = rows["right launcher"], rows["wrong launcher"], rows["missing peer"]
    assert ok["status"] == "ok" and ok["checked"] and ok["4"] > 0 and ok["16"] > 0
    assert ok["minus_c"]["4"] is not None
    assert wrong["status"] == "error" and wrong["4"] is None
    assert "launch check failed" in wrong["reason"]
    assert "grid (2, 1, 1), expected (1, 1, 1)" in wrong["reason"]
    assert missing["status"] == "skipped"
    assert "no-such-peer is not installed" in missing["reason"]
    assert "quicklaunch[bench]" in missing["reason"]
    for name in ("CuPy RawKernel", "torch y.add_(x)", "Triton", "Warp wp.launch"):
        assert rows[name]["status"] == "unsupported" and rows[name]["reason"]


ROW_KEYS = {"4", "16", "status", "reason", "source", "entry", "note", "iters", "checked",
            "minus_c"}


def test_section_schema_in_a_child_process(monkeypatch):
    sec = no.section(settings=TINY, sources_ref=f"{HERE}:FAKE_SOURCES", timeout=120)
    assert sec["status"] == "ok", sec["reason"]
    assert json.loads(json.dumps(sec)) == sec
    for key in ("title", "schema", "unit", "params", "rounds", "sample_s", "max_iters",
                "driver", "rows", "versions", "seconds"):
        assert key in sec, key
    assert sec["title"] == no.TITLE and sec["driver"] == "null"
    for name, row in sec["rows"].items():
        assert set(row) == ROW_KEYS, name
        assert row["status"] in ("ok", "skipped", "error", "unsupported")
        assert set(row["minus_c"]) == {"4", "16"}
    assert sec["rows"]["right launcher"]["status"] == "ok"
    assert sec["rows"]["wrong launcher"]["status"] == "error"
    text = no.table(sec)
    assert "right launcher" in text and "launch check failed" in text


def test_real_driver_mode_runs_unchecked_and_batched(lib_path, tmp_path):
    """--real (what gpu_check.sh runs on a GPU), here against the null driver:
    rows are timed without the check, unsupported rows point at the CUDA
    benchmark."""
    import subprocess
    import sys
    out = tmp_path / "real.json"
    proc = subprocess.run([sys.executable, "-m", "quicklaunch.bench.cuda.null_overhead",
                           "--child", "--real", "--out", str(out), "--rounds", "1",
                           "--sample-s", "0.0005", "--max-iters", "100",
                           "--sources", f"{HERE}:FAKE_SOURCES"],
                          env=no.child_env(lib_path), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["driver"] == "real"
    rows = got["rows"]
    assert rows["right launcher"]["status"] == "ok" and not rows["right launcher"]["checked"]
    assert rows["wrong launcher"]["status"] == "ok"          # nothing to check it with
    assert rows["CuPy RawKernel"]["status"] == "skipped"
    assert "quicklaunch.bench.cuda" in rows["CuPy RawKernel"]["reason"]


def test_child_environment_is_the_only_one_pointed_at_it(lib_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/somewhere")
    env = no.child_env(lib_path)
    assert env["QUICKLAUNCH_LIBCUDA"] == str(lib_path)
    assert env["LD_LIBRARY_PATH"].split(":") == [str(lib_path.parent), "/somewhere"]
    assert env["NUMBA_CUDA_DRIVER"] == str(lib_path)
    import os
    assert os.environ["LD_LIBRARY_PATH"] == "/somewhere"          # this process untouched
    assert os.environ.get("QUICKLAUNCH_LIBCUDA") != str(lib_path)


def test_section_reports_a_failed_child(monkeypatch):
    sec = no.section(settings=TINY, sources_ref=f"{HERE}:NO_SUCH_ATTRIBUTE", timeout=60)
    assert sec["status"] == "error" and "exited with" in sec["reason"]
    assert "title" in sec and sec["rows"] == {}

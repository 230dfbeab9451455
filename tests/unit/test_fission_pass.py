"""The fission pass on its own (backends/cpu/fission.py): which kernels it
accepts and the reasons it gives for the others; without libclang every
barrier kernel stays on fibers, with the reason."""
import shutil

import pytest

from quicklaunch.backends.cpu import fission

SOURCE = r"""
__global__ void ok(float *x, int n) {
    __shared__ float s[64];
    float v = x[threadIdx.x];
    s[threadIdx.x] = v;
    __syncthreads();
    x[threadIdx.x] = s[63 - threadIdx.x] + v;
}
__global__ void tid_cond(float *x) {
    if (threadIdx.x == 0) { __syncthreads(); }
}
__global__ void param_changed(float *x, int n) {
    n += 1;
    __syncthreads();
    x[0] = n;
}
__global__ void global_cond(const int *flag, float *x) {
    if (flag[0]) __syncthreads();
}
__global__ void with_goto(float *x) {
    __syncthreads();
    goto end;
end:
    x[0] = 1;
}
__global__ void in_do(float *x) {
    do { __syncthreads(); } while (0);
}
"""
EXPECT = {"tid_cond": "thread-dependent condition (threadIdx)",
          "param_changed": "modifies its parameter 'n'",
          "global_cond": "reads memory other threads may write",
          "with_goto": "goto",
          "in_do": "inside a do"}


def _plan():
    exprs = ["ok", *EXPECT]
    return fission.plan(SOURCE, exprs, {e: 2 for e in exprs}, "k.cu", 1,
                        ("-D__CUDA_ARCH__=900",), "g++")


def test_accepts_and_refuses_with_reasons():
    pytest.importorskip("clang.cindex")
    if not shutil.which("g++"):
        pytest.skip("no g++ to ask for the system include directories")
    res = _plan()
    assert res.tiers["ok"][0] == "fission" and "ok" in res.rows
    assert "__ql_fission_ok" in res.code and '#line 5 "k.cu"' in res.code
    for e, why in EXPECT.items():
        tier, reason = res.tiers[e]
        assert tier == "fibers" and why in reason, (e, reason)


def test_without_libclang_everything_stays_on_fibers(monkeypatch):
    monkeypatch.setitem(fission._state, "ci", "libclang is not available (ImportError: x); "
                                              "pip install libclang")
    res = _plan()
    assert not res.rows and not res.code
    assert all(t == "fibers" and "libclang is not available" in r for t, r in res.tiers.values())
    assert fission.identity() == "fission=no-libclang"

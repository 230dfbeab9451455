"""A .cu file with host code compiles on NVRTC and hiprtc: host functions are
dropped with one CompileWarning, the same on a compile-cache hit."""
import warnings

import pytest

import quicklaunch as ql
from quicklaunch.backends.gpu.diagnostics import LogStyle

SRC = '''#include <cuda_runtime.h>
extern "C" void run_scale(float *d, int n);
__global__ void scale(float *d, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] *= 2.0f; }
void run_scale(float *d, int n) { scale<<<(n + 255) / 256, 256>>>(d, n); cudaDeviceSynchronize(); }
int main() { float *d; cudaMalloc(&d, 1024 * sizeof(float)); run_scale(d, 1024); cudaFree(d); return 0; }
'''


def _compile_twice(compile_fn, **kw):
    msgs = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            prog = compile_fn(SRC, **kw)
        msgs.append([str(w.message) for w in seen if issubclass(w.category, ql.CompileWarning)])
    assert msgs[0] == msgs[1] and len(msgs[0]) == 1
    assert "run_scale" in msgs[0][0] and "main" in msgs[0][0]
    assert "scale" in prog.kernels


def test_nvrtc_drops_host_code():
    pytest.importorskip("quicklaunch.backends.cuda.nvrtc")
    try:
        ql.cuda.compile("__global__ void k() {}", arch="sm_80")
    except Exception as exc:   # no NVRTC here
        pytest.skip(f"NVRTC unusable: {exc}")
    _compile_twice(ql.cuda.compile, arch="sm_80")


def test_hiprtc_drops_host_code():
    try:
        ql.hip.compile("__global__ void k() {}", arch="gfx90a")
    except Exception as exc:
        pytest.skip(f"hiprtc unusable: {exc}")
    _compile_twice(ql.hip.compile, arch="gfx90a")


def test_other_files_keep_their_names_in_logs():
    style = LogStyle(r"^kernel\.cu\((\d+)\): ", r"line \1: ", r"^<r>\((\d+)\): ")
    log = ("reduction_kernel.cu(551): error: x\n/path/my.cuh(12): error: y\n"
           "kernel.cu(3): error: z\n")
    msg = str(style.error("failed", log, "a\nb\nc\n", (), ()))
    assert "reduction_kernel.cu(551): error" in msg and "/path/my.cuh(12): error" in msg
    assert "line 3: error: z" in msg

"""Shared fixtures for the framework tests: torch and jax are imported once
per module (their import is slow), the kernels compiled once per session.
Every test here skips, saying why, where torch or jax is not installed
(``pip install '.[frameworks]'``)."""
import pytest

TYPES = {  # C type -> torch dtype name
    "float": "float32", "double": "float64", "__half": "float16",
    "__nv_bfloat16": "bfloat16", "signed char": "int8", "short": "int16", "int": "int32",
    "long long": "int64", "unsigned char": "uint8", "unsigned short": "uint16",
    "unsigned int": "uint32", "unsigned long long": "uint64", "bool": "bool",
}

SOURCE = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + "".join(
    f'extern "C" __global__ void copy_{i}(const {t} *x, {t} *y, int n) {{\n'
    f"    int j = blockIdx.x * blockDim.x + threadIdx.x; if (j < n) y[j] = x[j]; }}\n"
    for i, t in enumerate(TYPES)) + r'''
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
extern "C" __global__ void scale(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }
'''


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="torch is not installed (pip install "
                               "'.[frameworks]')")


@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax", reason="jax is not installed (pip install "
                              "'.[frameworks]')")
    return jax


@pytest.fixture(scope="session")
def cpu_module():
    import quicklaunch as ql
    return ql.compile(SOURCE, device="cpu")

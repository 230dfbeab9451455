"""The libcu++ stand-ins quicklaunch hands hiprtc (backends/hip/include/cuda/)
compute what they should: no AMD GPU runs here, so the CPU device compiles
the test_cccl_std kernels against those headers instead of its own (they are
plain C++ with __host__ __device__, which the CPU device defines empty) and
checks them against NumPy as test_cccl_std does: cuda::std::complex's
arithmetic and functions (the quotient's scaling with huge and tiny
divisors), cuda::atomic_ref at every scope, pair, array, the functors."""
import re
from pathlib import Path

import numpy as np
import pytest

import quicklaunch as ql

from . import test_cccl_std as std_tests
from .conftest import poisoned

HIP_INCLUDE = Path(ql.__file__).parent / "backends" / "hip" / "include"


def _on_hip_headers(source: str) -> str:
    return re.sub(r"#include <(cuda/[^>]+)>", lambda m: f'#include "{HIP_INCLUDE / m.group(1)}"',
                  source)


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(_on_hip_headers(std_tests.SOURCE), device=cpu)


@pytest.fixture(scope="module")
def cmod(cpu):
    extra = r"""
extern "C" __global__ void quotients(const double *a, const double *b, double *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const cuda::std::complex<double> q = cuda::std::complex<double>(a[2 * i], a[2 * i + 1]) /
                                         cuda::std::complex<double>(b[2 * i], b[2 * i + 1]);
    out[2 * i] = q.real();
    out[2 * i + 1] = q.imag();
}
"""
    return ql.compile(_on_hip_headers(std_tests.COMPLEX_SOURCE) + extra, device=cpu)


def test_the_hip_headers_are_the_ones_compiled(cpu):
    text = _on_hip_headers(std_tests.COMPLEX_SOURCE)
    assert str(HIP_INCLUDE / "cuda/std/complex") in text and "<cuda/" not in text


@pytest.mark.parametrize("n", [1, 31, 1000])
def test_atomic_ref(mod, n):
    std_tests.test_atomic_ref(mod, n)


@pytest.mark.parametrize("n", [1, 31, 300])
def test_utilities(mod, n):
    std_tests.test_utilities(mod, n)


@pytest.mark.parametrize("kernel,dtype,rtol", [("complex_f", np.float32, 2e-6),
                                               ("complex_d", np.float64, 1e-14)])
def test_complex(cmod, kernel, dtype, rtol):
    std_tests.test_complex(cmod, kernel, dtype, rtol)


def test_quotient_scaling(cmod):
    # divisors near the ends of double's range: the plain formula's c*c + d*d
    # overflows or underflows, the scaled one does not
    a = np.array([1.0, 2.0, 3e300, -1e300, 1e-300, 2e-300, 5e-300, -7e-300])
    b = np.array([1e300, 1e300, 2e300, 1e299, 3e-300, -1e-300, 1e-310, 2e-310])
    out = poisoned(8, np.float64)
    cmod.quotients[1, 32](a, b, out, 4)
    x = a[0::2] + 1j * a[1::2]
    y = b[0::2] + 1j * b[1::2]
    k = -np.frexp(np.maximum(abs(y.real), abs(y.imag)))[1]

    def scaled(z):
        return np.ldexp(z.real, k) + 1j * np.ldexp(z.imag, k)
    want = scaled(x) / scaled(y)     # the same quotient, in range for NumPy
    got = out[0::2] + 1j * out[1::2]
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-14)

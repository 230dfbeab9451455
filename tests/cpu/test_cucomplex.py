"""<cuComplex.h> on the CPU device (the same stand-in serves hiprtc; NVRTC
has CUDA's own): every function against NumPy, cuCdiv and cuCabs at huge,
tiny and infinite magnitudes, Python complex scalars for float2 / double2 /
cuComplex / cuDoubleComplex parameters, NumPy complex arrays for their
pointers. Where CUDA's algorithm and NumPy's differ (a division by zero or
by infinity), a NumPy model of CUDA's algorithm is the reference."""
from pathlib import Path

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned as _poisoned


def poisoned(shape, dtype):
    """conftest's poison, and NaN + NaN i for complex outputs."""
    if np.dtype(dtype).kind == "c":
        return np.full(shape, complex(np.nan, np.nan), dtype)
    return _poisoned(shape, dtype)

COMPLEX_SOURCE = r"""
#include <cuComplex.h>

// o: a + b, a - b, a * b, a / b, conj(a), a * b + a, (re, im) of a, |a| per element
extern "C" __global__ void ops(const cuDoubleComplex *a, const cuDoubleComplex *b,
                               cuDoubleComplex *o, double *mag, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuDoubleComplex x = a[i], y = b[i];
    o[7 * i + 0] = cuCadd(x, y);
    o[7 * i + 1] = cuCsub(x, y);
    o[7 * i + 2] = cuCmul(x, y);
    o[7 * i + 3] = cuCdiv(x, y);
    o[7 * i + 4] = cuConj(x);
    o[7 * i + 5] = cuCfma(x, y, x);
    o[7 * i + 6] = make_cuDoubleComplex(cuCreal(x), cuCimag(x));
    mag[i] = cuCabs(x);
}

extern "C" __global__ void opsf(const cuFloatComplex *a, const cuComplex *b,
                                cuFloatComplex *o, float *mag, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cuFloatComplex x = a[i], y = b[i];
    o[7 * i + 0] = cuCaddf(x, y);
    o[7 * i + 1] = cuCsubf(x, y);
    o[7 * i + 2] = cuCmulf(x, y);
    o[7 * i + 3] = cuCdivf(x, y);
    o[7 * i + 4] = cuConjf(x);
    o[7 * i + 5] = cuCfmaf(x, y, x);
    o[7 * i + 6] = make_cuComplex(cuCrealf(x), cuCimagf(x));
    mag[i] = cuCabsf(x);
}

// complex scalars by value: s * x[i] (+ t, converted down to float)
extern "C" __global__ void scale(cuDoubleComplex s, double2 t, cuDoubleComplex *x,
                                 cuFloatComplex *xf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = cuCadd(cuCmul(s, x[i]), t);
    xf[i] = cuComplexDoubleToFloat(x[i]);
}

extern "C" __global__ void scalef(cuComplex s, float2 t, cuFloatComplex *x,
                                  cuDoubleComplex *xd, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    x[i] = cuCaddf(cuCmulf(s, x[i]), t);
    xd[i] = cuComplexFloatToDouble(x[i]);
}

extern "C" __global__ void not_complex(int2 v, int *o) { o[0] = v.x; o[1] = v.y; }
"""


@pytest.fixture(scope="module")
def mod():
    return ql.compile(COMPLEX_SOURCE, device="cpu")


def random_complex(rng, n, dtype):
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * 10.0 ** rng.integers(-3, 4, n)
    return z.astype(dtype)


def cuda_div(a, b):
    """CUDA's cuCdiv: both operands scaled by 1 / (|re b| + |im b|)."""
    with np.errstate(all="ignore"):
        s = 1.0 / (np.abs(b.real) + np.abs(b.imag))
        ar, ai, br, bi = a.real * s, a.imag * s, b.real * s, b.imag * s
        inv = 1.0 / (br * br + bi * bi)
        out = np.empty(a.shape, a.dtype)
        out.real, out.imag = (ar * br + ai * bi) * inv, (ai * br - ar * bi) * inv
        return out


def same(got, want, rtol=1e-14):
    """Equal where not finite (NaN where NaN), else within rtol of |want|
    (the kernel's a*b+c may be fused, as nvcc fuses them)."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        fin = np.isfinite(w)
        if not np.array_equal(g[~fin], w[~fin], equal_nan=True):
            return False
        if not np.all(np.abs(g[fin] - w[fin]) <= rtol * np.abs(want[fin])):
            return False
    return True


def run_ops(mod, a, b, single):
    n = a.size
    o = poisoned(7 * n, np.complex64 if single else np.complex128)
    mag = poisoned(n, np.float32 if single else np.float64)
    (mod.opsf if single else mod.ops)[(n + 31) // 32, 32](a, b, o, mag, n)
    return o.reshape(n, 7), mag


@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("n", [1, 31, 100])
def test_arithmetic_against_numpy(mod, single, n):
    dtype = np.complex64 if single else np.complex128
    rng = np.random.default_rng(n + single)
    a, b = random_complex(rng, n, dtype), random_complex(rng, n, dtype)
    o, mag = run_ops(mod, a, b, single)
    rtol = 2e-6 if single else 1e-14
    want = [a + b, a - b, a * b, a / b, np.conj(a), a * b + a, a]
    for col, w in enumerate(want):
        np.testing.assert_allclose(o[:, col], w, rtol=rtol, atol=0 if col != 5 else rtol *
                                   np.abs(a * b).max(), err_msg=f"column {col}")
    np.testing.assert_allclose(mag, np.abs(a), rtol=rtol)
    assert np.array_equal(o[:, 4], np.conj(a)) and np.array_equal(o[:, 6], a)


# huge, tiny, infinite: the textbook formula overflows or underflows on each
EDGE_A = [1e300 + 1e300j, 1e-300 + 2e-300j, complex(np.inf, 0), complex(0, np.inf),
          3e300 + 4e300j, 1e200 + 1e200j]
EDGE_B = [3e300 + 1e299j, 1e-300 - 5e-301j, 1 + 1j, 2 + 1j, 2 + 1j, 1e170 - 1e170j]
# where CUDA's scaling itself runs out of range (1 / |b| overflows for a
# subnormal b, |re b| + |im b| overflows near the largest double, a scaled
# operand overflows): NaN parts, as on the GPU
CUDA_ONLY_A = [5e-310 + 1e-310j, -2.5 + 1e-320j, 3e300 + 4e300j]
CUDA_ONLY_B = [3e-310 - 4e-310j, 1e308 + 1e308j, 1e-300 + 1e-300j]


def test_division_and_abs_at_extreme_magnitudes(mod):
    a, b = np.array(EDGE_A), np.array(EDGE_B)
    o, mag = run_ops(mod, a, b, single=False)
    with np.errstate(all="ignore"):
        naive = (a * np.conj(b)) / (b.real ** 2 + b.imag ** 2)
        want = a / b
    finite = np.isfinite(want)
    assert not np.any(np.isclose(naive, want)[[0, 1, 5]])
    err = np.abs(o[:, 3][finite] - want[finite])
    assert np.all(err <= 1e-14 * np.abs(want[finite])), (o[:, 3], want)
    assert np.array_equal(o[:, 3][~finite], want[~finite])    # inf, -inf / inf, inf
    assert same(o[:, 3], cuda_div(a, b))
    np.testing.assert_allclose(mag, np.abs(a), rtol=1e-15)
    assert mag[4] == 5e300     # 3e300, 4e300: no overflow in the squares
    a, b = np.array(CUDA_ONLY_A), np.array(CUDA_ONLY_B)
    o, _ = run_ops(mod, a, b, single=False)
    assert same(o[:, 3], cuda_div(a, b))
    assert np.isnan(o[:2, 3].real).all() and np.isnan(o[2, 3].imag)


def test_division_by_zero_and_infinity_is_cudas(mod):
    # NumPy says (3+4j)/0 = inf+infj and 1/inf = 0; CUDA's scaling gives NaN for both
    a = np.array([3 + 4j, 1 + 1j, complex(np.inf, np.inf)])
    b = np.array([0j, complex(np.inf, 1), 1 + 2j])
    o, _ = run_ops(mod, a, b, single=False)
    assert same(o[:, 3], cuda_div(a, b))
    assert np.isnan(o[0, 3].real) and np.isnan(o[1, 3].real)


def test_abs_of_infinities_and_zero(mod):
    a = np.array([complex(np.inf, np.nan), complex(np.nan, -np.inf), 0j, complex(-np.inf, 1),
                  complex(0, -0.0), 1e-320 + 0j])
    _, mag = run_ops(mod, a, a, single=False)
    assert list(mag[:5]) == [np.inf, np.inf, 0.0, np.inf, 0.0]
    assert mag[5] == 1e-320
    af = np.array([2e38 + 1e38j, 3e-39 + 4e-39j, complex(np.inf, 0)], np.complex64)
    _, magf = run_ops(mod, af, af, single=True)
    np.testing.assert_allclose(magf[:2], np.abs(af[:2].astype(np.complex128)), rtol=2e-7)
    assert magf[2] == np.inf


@pytest.mark.parametrize("n", [1, 33])
def test_python_complex_scalars(mod, n):
    rng = np.random.default_rng(n)
    x = random_complex(rng, n, np.complex128)
    s, t = 1.5 - 2j, complex(0.25, -4.0)
    want = s * x + t
    xf = poisoned(n, np.complex64)
    mod.scale[1, 64](s, t, x, xf, n)
    np.testing.assert_allclose(x, want, rtol=1e-15)
    assert np.array_equal(xf, want.astype(np.complex64))
    # NumPy complex scalars and raw bytes still work, and agree
    y1, y2, y3 = (random_complex(np.random.default_rng(7), n, np.complex128) for _ in range(3))
    y2[:], y3[:] = y1, y1
    mod.scale[1, 64](np.complex128(s), t, y2, xf, n)
    mod.scale[1, 64](np.array([s]).tobytes(), np.complex64(t), y3, xf, n)
    mod.scale[1, 64](s, t, y1, xf, n)
    assert np.array_equal(y1, y2) and np.array_equal(y1, y3)


def test_python_complex_for_float_pairs(mod):
    n = 20
    x = random_complex(np.random.default_rng(2), n, np.complex64)
    want = np.complex64(0.5 + 3j) * x + np.complex64(-1 + 1j)
    xd = poisoned(n, np.complex128)
    mod.scalef[1, 32](0.5 + 3j, -1 + 1j, x, xd, n)
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert np.array_equal(xd, x.astype(np.complex128))
    with pytest.raises(ql.LaunchError, match=r"kernel 'scalef', parameter 1 's'.*out of range"):
        mod.scalef[1, 32](1e39 + 0j, 0j, x, xd, n)
    mod.scalef[1, 32](complex(np.inf, 0), 0j, x[:1].copy(), xd, 1)   # infinity on purpose


def test_complex_is_refused_for_other_structs(mod):
    out = poisoned(2, np.int32)
    with pytest.raises(ql.LaunchError, match=r"kernel 'not_complex', parameter 1 'v'"):
        mod.not_complex[1, 1](1 + 2j, out)
    mod.not_complex[1, 1](np.array([3, -4], np.int32).tobytes(), out)
    assert list(out) == [3, -4]


def test_wrong_complex_array_precision_is_refused(mod):
    a = np.ones(4, np.complex64)
    with pytest.raises(ql.LaunchError, match=r"kernel 'ops', parameter 1 'a'"):
        run_ops(mod, a, a, single=False)


def test_one_header_for_cpu_and_hip():
    root = Path(ql.__file__).parent / "backends"
    cpu = (root / "cpu" / "include" / "cuComplex.h").read_bytes()
    assert cpu == (root / "hip" / "include" / "cuComplex.h").read_bytes()

"""std::numeric_limits in device code: the kernels of LIMITS_SOURCE (also
compiled by tests/nvrtc/test_limits_gpu.py and tests/hip/test_limits_hip.py,
where <limits> is quicklaunch's stand-in) run on the CPU device, whose
<limits> is the host's, and agree with NumPy's finfo / iinfo. The source's
static_asserts check the values at compile time on every device."""
import warnings

import numpy as np
import pytest

import quicklaunch as ql

LIMITS_SOURCE = r"""
#include <limits>
#include <climits>
#include <cfloat>

typedef std::numeric_limits<float> FL;
typedef std::numeric_limits<double> DL;
static_assert(FL::is_specialized && FL::is_signed && !FL::is_integer && FL::is_iec559, "float");
static_assert(FL::digits == 24 && FL::digits10 == 6 && FL::max_digits10 == 9 && FL::radix == 2,
              "float digits");
static_assert(FL::min_exponent == -125 && FL::max_exponent == 128 &&
              FL::min_exponent10 == -37 && FL::max_exponent10 == 38, "float exponents");
static_assert(FL::max() == FLT_MAX && FL::min() == FLT_MIN && FL::lowest() == -FLT_MAX &&
              FL::epsilon() == FLT_EPSILON && FL::round_error() == 0.5f, "float values");
static_assert(FL::has_infinity && FL::infinity() > FL::max() && -FL::infinity() < FL::lowest(),
              "float infinity");
static_assert(FL::has_quiet_NaN && FL::quiet_NaN() != FL::quiet_NaN(), "float NaN");
static_assert(FL::denorm_min() > 0.0f && FL::denorm_min() * 8388608.0f == FL::min(),
              "float denorm_min: 2^-149");
static_assert(FL::round_style == std::round_to_nearest, "float rounding");
static_assert(DL::digits == 53 && DL::digits10 == 15 && DL::max_digits10 == 17 &&
              DL::max_exponent == 1024 && DL::min_exponent == -1021, "double digits");
static_assert(DL::max() == DBL_MAX && DL::min() == DBL_MIN && DL::lowest() == -DBL_MAX &&
              DL::epsilon() == DBL_EPSILON, "double values");
static_assert(DL::infinity() > DL::max() && DL::quiet_NaN() != DL::quiet_NaN() &&
              DL::denorm_min() > 0.0 && DL::denorm_min() * 4503599627370496.0 == DL::min(),
              "double specials");

static_assert(std::numeric_limits<int>::max() == INT_MAX &&
              std::numeric_limits<int>::min() == INT_MIN &&
              std::numeric_limits<int>::lowest() == INT_MIN, "int");
static_assert(std::numeric_limits<int>::digits == 31 && std::numeric_limits<int>::digits10 == 9 &&
              std::numeric_limits<int>::is_integer && std::numeric_limits<int>::is_exact &&
              !std::numeric_limits<int>::is_modulo && !std::numeric_limits<int>::has_infinity,
              "int traits");
static_assert(std::numeric_limits<unsigned>::max() == UINT_MAX &&
              std::numeric_limits<unsigned>::min() == 0u &&
              std::numeric_limits<unsigned>::is_modulo &&
              !std::numeric_limits<unsigned>::is_signed, "unsigned");
static_assert(std::numeric_limits<long long>::max() == LLONG_MAX &&
              std::numeric_limits<long long>::min() == LLONG_MIN &&
              std::numeric_limits<unsigned long long>::max() == ULLONG_MAX &&
              std::numeric_limits<unsigned long long>::digits == 64 &&
              std::numeric_limits<unsigned long long>::digits10 == 19, "long long");
static_assert(std::numeric_limits<long>::max() == LONG_MAX &&
              std::numeric_limits<unsigned long>::max() == ULONG_MAX, "long");
static_assert(std::numeric_limits<short>::min() == SHRT_MIN &&
              std::numeric_limits<short>::max() == SHRT_MAX &&
              std::numeric_limits<unsigned short>::max() == USHRT_MAX, "short");
static_assert(std::numeric_limits<signed char>::min() == SCHAR_MIN &&
              std::numeric_limits<signed char>::max() == SCHAR_MAX &&
              std::numeric_limits<unsigned char>::max() == UCHAR_MAX &&
              std::numeric_limits<char>::min() == CHAR_MIN &&
              std::numeric_limits<char>::max() == CHAR_MAX &&
              std::numeric_limits<char>::is_signed == (char(-1) < char(0)) &&
              std::numeric_limits<char>::digits == 7 + !std::numeric_limits<char>::is_signed,
              "char");
static_assert(std::numeric_limits<char16_t>::max() == 0xffff &&
              std::numeric_limits<char32_t>::max() == 0xffffffffu &&
              std::numeric_limits<wchar_t>::is_specialized, "wide chars");
static_assert(std::numeric_limits<bool>::is_specialized && std::numeric_limits<bool>::max() &&
              !std::numeric_limits<bool>::min() && std::numeric_limits<bool>::digits == 1 &&
              !std::numeric_limits<bool>::is_signed, "bool");
static_assert(std::numeric_limits<const int>::max() == INT_MAX &&
              std::numeric_limits<volatile float>::digits == 24 &&
              std::numeric_limits<const volatile unsigned>::max() == UINT_MAX, "cv");
struct NotANumber {};
static_assert(!std::numeric_limits<NotANumber>::is_specialized &&
              std::numeric_limits<NotANumber>::digits == 0, "primary template");

// constexpr in device code: an array bound and a __constant__ initialiser
__constant__ float ql_lowest_float = std::numeric_limits<float>::lowest();
__device__ int ql_digits[std::numeric_limits<unsigned char>::digits];

// a max reduction that starts from lowest(), as reductions are written
__global__ void block_max(const float *x, float *out, int n) {
    __shared__ float s[256];
    float m = std::numeric_limits<float>::lowest();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        m = fmaxf(m, x[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] == ql_lowest_float ? -1.0f : s[0];
}

// every value a kernel may ask for, read back by the CPU test
template <class T> __global__ void limits_of(T *v, int *info) {
    typedef std::numeric_limits<T> L;
    if (threadIdx.x != 0) return;
    v[0] = L::min(); v[1] = L::max(); v[2] = L::lowest(); v[3] = L::epsilon();
    v[4] = L::infinity(); v[5] = L::quiet_NaN(); v[6] = L::denorm_min(); v[7] = L::round_error();
    info[0] = L::digits; info[1] = L::digits10; info[2] = L::is_signed; info[3] = L::is_integer;
    info[4] = L::is_specialized; info[5] = L::min_exponent; info[6] = L::max_exponent;
    info[7] = L::has_infinity; info[8] = L::radix; info[9] = L::max_digits10;
}
"""

FLOATS = {"float": np.float32, "double": np.float64}
INTS = {"signed char": np.int8, "unsigned char": np.uint8, "short": np.int16,
        "unsigned short": np.uint16, "int": np.int32, "unsigned int": np.uint32,
        "long long": np.int64, "unsigned long long": np.uint64}
NAME_EXPRESSIONS = [f"limits_of<{t}>" for t in (*FLOATS, *INTS)]


@pytest.fixture(scope="module")
def mod():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ql.CompileWarning)
        return ql.compile(LIMITS_SOURCE, device="cpu",
                          name_expressions=NAME_EXPRESSIONS)


def _limits(mod, ctype, dtype):
    v, info = np.zeros(8, dtype), np.zeros(10, np.int32)
    mod[f"limits_of<{ctype}>"][1, 32](v, info)
    ql.device("cpu").synchronize()
    return v, info


@pytest.mark.parametrize("ctype", sorted(FLOATS))
def test_float_limits_match_finfo(mod, ctype):
    dtype = FLOATS[ctype]
    fi = np.finfo(dtype)
    v, info = _limits(mod, ctype, dtype)
    assert v[0] == fi.tiny and v[1] == fi.max and v[2] == fi.min and v[3] == fi.eps
    assert np.isposinf(v[4]) and np.isnan(v[5]) and v[7] == 0.5
    assert v[6] == fi.smallest_subnormal
    assert info[0] == fi.nmant + 1 and info[1] == fi.precision
    assert list(info[2:5]) == [1, 0, 1]
    assert info[5] == fi.minexp + 1 and info[6] == fi.maxexp   # C counts from 0.5, NumPy from 1
    assert info[7] == 1 and info[8] == 2


@pytest.mark.parametrize("ctype", sorted(INTS))
def test_integer_limits_match_iinfo(mod, ctype):
    dtype = INTS[ctype]
    ii = np.iinfo(dtype)
    v, info = _limits(mod, ctype, dtype)
    signed = ii.min < 0
    assert v[0] == ii.min and v[1] == ii.max and v[2] == ii.min
    assert not v[3:].any()   # epsilon, infinity, NaN, denorm_min, round_error: 0
    assert info[0] == ii.bits - signed and list(info[2:5]) == [signed, 1, 1]
    assert info[1] == int((ii.bits - signed) * 0.30103)
    assert info[7] == 0 and info[8] == 2


def test_reduction_from_lowest(mod):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(10000) * 1e30 - 1e31).astype(np.float32)
    out = np.zeros(4, np.float32)
    mod["block_max"][4, 256](x, out, np.int32(x.size))
    ql.device("cpu").synchronize()
    assert out.max() == x.max()

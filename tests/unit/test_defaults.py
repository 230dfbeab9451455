"""quicklaunch.defaults: kernels' default arguments read from the source, and
the small constant evaluator (no eval)."""
import pytest

from quicklaunch.defaults import Unevaluable, kernel_defaults
from quicklaunch.signature import Param

SRC = r"""
#define WIDTH 8
template <typename T> __global__ void __launch_bounds__(256)
scale(T *d, const T *p = NULL, int n = 32, float s = -1.5f, unsigned m = (1u << 4) | 3,
      bool b = true, float *q = nullptr, int z = WIDTH * 2, double w = 2.5e-1,
      long long big = 0x7fffffffffffffffLL, int neg = -7 / 2, int rem = -7 % 2,
      char c = ~0 & 0x7f, int *zero = 0);
template <typename T> __global__ void scale(T *d, const T *p, int n, float s, unsigned m,
      bool b, float *q, int z, double w, long long big, int neg, int rem, char c, int *zero) {}
__device__ constexpr int f(int x) { return x; }
__global__ void later(int *d, int n, int k = f(3)) {}
__global__ void middle(int *d, int n = 3, int k) {}
__global__ void none(int *d, int n) {}
__global__ void badptr(int *d = 16) {}
__global__ void castptr(int *d = (int *)16) {}
__global__ void floatint(int n = 1.5) {}
"""

SCALE = [Param(n, t) for n, t in [
    ("d", "float*"), ("p", "const float*"), ("n", "int"), ("s", "float"), ("m", "unsigned int"),
    ("b", "bool"), ("q", "float*"), ("z", "int"), ("w", "double"), ("big", "long long"),
    ("neg", "int"), ("rem", "int"), ("c", "char"), ("zero", "int*")]]


def test_literals_and_constant_expressions():
    got = kernel_defaults(SRC, "scale<float>", SCALE)
    assert got == (None, 32, -1.5, 19, True, None, 16, 0.25, 2**63 - 1, -3, -1, 0x7f, None)
    assert isinstance(got[2], float) and isinstance(got[1], int) and got[4] is True


def test_unevaluable_defaults_are_marked():
    got = kernel_defaults(SRC, "later", [Param("d", "int*"), Param("n", "int"),
                                         Param("k", "int")])
    assert len(got) == 1 and isinstance(got[0], Unevaluable)
    assert got[0].param == "k" and "f" in got[0].text
    (p,) = kernel_defaults(SRC, "badptr", [Param("d", "int*")])
    assert isinstance(p, Unevaluable) and "pointer" in p.why
    (p,) = kernel_defaults(SRC, "castptr", [Param("d", "int*")])
    assert isinstance(p, Unevaluable) and "(int *) 16" in p.text
    (f,) = kernel_defaults(SRC, "floatint", [Param("n", "int")])
    assert isinstance(f, Unevaluable)


def test_only_trailing_defaults_and_none():
    assert kernel_defaults(SRC, "none", [Param("d", "int*"), Param("n", "int")]) == ()
    assert kernel_defaults(SRC, "middle", [Param("d", "int*"), Param("n", "int"),
                                           Param("k", "int")]) == ()


@pytest.mark.parametrize("text, want", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("1 << 3 >> 1", 4), ("0b101 ^ 0x3", 6),
    ("010", 8), ("-(-4)", 4), ("!0", True), ("1'000'000", 10**6), ("7 / -2", -3),
    ("100u % 7", 2), ("3 | 4 & 6", 7)])
def test_evaluator(text, want):
    src = f"__global__ void k(long long x = {text}) {{}}"
    assert kernel_defaults(src, "k", [Param("x", "long long")]) == (want,)


@pytest.mark.parametrize("text", ["1 / 0", "sizeof(int)", "x", "1 +", "(1", "1 << 99",
                                  "1.5 % 2", '"s"'])
def test_evaluator_refuses(text):
    src = f"__global__ void k(long long x = {text}) {{}}"
    (got,) = kernel_defaults(src, "k", [Param("x", "long long")])
    assert isinstance(got, Unevaluable), got

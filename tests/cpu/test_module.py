"""Modules: kernel lookup by every name, parameters reflected by the
compiler from tricky declarations, options and debug builds."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SOURCE = r"""
#include <cuda_runtime.h>
#define REAL double
typedef struct { int a; short b; } pair_t;
struct Big { double v[5]; };

extern "C" __global__ void __launch_bounds__(256, 2)
plain(const REAL *__restrict__ in, REAL *out, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2;
}

__global__ void cpp_kernel(float **rows, pair_t p, Big big, signed char c, bool flag,
                           /* comment */ const volatile int * __restrict__ ro) {
    rows[0][0] = p.a + p.b + big.v[4] + c + flag + ro[0];
}

namespace outer { namespace inner {
__global__ void nested(int *x) { x[threadIdx.x] = 7; }
} }

template <typename T, int N>
__global__ void scale(T *x, T factor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) x[i] *= factor;
}

extern "C" __global__ void with_option(int *x) { x[0] = OPTION_VALUE; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu, options=["-DOPTION_VALUE=41"],
                      name_expressions=["scale<float, 5>", "scale<double, 3>"])


def test_lookup_by_every_name(mod):
    assert mod.kernels == ["plain", "cpp_kernel", "outer::inner::nested", "with_option",
                           "scale<float, 5>", "scale<double, 3>"]
    k = mod.get_kernel("cpp_kernel")
    assert mod["cpp_kernel"] is k and mod.cpp_kernel is k
    assert k.lowered_name.startswith("_Z10cpp_kernel")
    assert mod.get_kernel(k.lowered_name) is k
    assert mod.plain.lowered_name == "plain"  # extern "C": no mangling
    nested = mod.get_kernel("outer::inner::nested")
    assert mod.get_kernel("nested") is nested and mod.get_kernel(nested.lowered_name) is nested
    assert mod.get_kernel("scale<float,5>") is mod.get_kernel("scale<float, 5>")
    assert "plain" in mod and "missing" not in mod
    assert "plain" in dir(mod)


def test_parameters_are_reflected(mod):
    p = mod.plain.params
    assert [(x.name, x.ctype, x.size, x.kind) for x in p] == [
        ("in", "const REAL *__restrict__", 8, "const pointer"),
        ("out", "REAL *", 8, "pointer"),
        ("n", "unsigned long long", 8, "uint64")]
    q = mod.cpp_kernel.params
    assert [x.name for x in q] == ["rows", "p", "big", "c", "flag", "ro"]
    assert [(x.kind, x.size, x.align) for x in q] == [
        ("pointer", 8, 8), ("struct", 8, 4), ("struct", 40, 8), ("int8", 1, 1),
        ("bool", 1, 1), ("const pointer", 8, 8)]
    s = mod.get_kernel("scale<double, 3>").params
    assert [(x.ctype, x.kind, x.size) for x in s] == [("T *", "pointer", 8),
                                                     ("T", "float64", 8)]


def test_kernels_run(mod, rng):
    n = 1000
    a = rng.standard_normal(n)
    out = poisoned(n, np.float64)
    mod.plain[4, 256](a, out, n)
    np.testing.assert_array_equal(out, 2 * a)
    x = np.ones(8, np.float32)
    mod.get_kernel("scale<float, 5>")[1, 8](x, 3.0)
    np.testing.assert_array_equal(x, [3, 3, 3, 3, 3, 1, 1, 1])
    y = poisoned(4, np.int32)
    mod.get_kernel("nested")[1, 4](y)
    assert (y == 7).all()
    z = poisoned(1, np.int32)
    mod.with_option[1, 1](z)
    assert z[0] == 41


def test_struct_and_pointer_to_pointer(mod):
    row = np.zeros(1, np.float32)
    rows = np.array([row.ctypes.data], np.uint64)  # float ** as an array of addresses
    pair = np.array([(3, 4)], dtype=np.dtype([("a", "<i4"), ("b", "<i2")], align=True))[0]
    big = np.arange(5, dtype=np.float64).tobytes()
    ro = np.array([100], np.int32)
    mod.cpp_kernel[1, 1](rows, pair, big, -2, True, ro)
    assert row[0] == 3 + 4 + 4.0 - 2 + 1 + 100


def test_debug_build_runs_the_same(cpu, rng):
    src = 'extern "C" __global__ void neg(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = -x[i]; }'
    mod = ql.compile(src, device=cpu, debug=True)
    x = rng.standard_normal(40).astype(np.float32)
    expected = -x
    mod.neg[1, 64](x, 40)
    np.testing.assert_array_equal(x, expected)


def test_module_without_kernels(cpu):
    mod = ql.compile("__device__ int helper(int x) { return x; }", device=cpu)
    assert mod.kernels == []
    with pytest.raises(ql.KernelNotFoundError, match="no __global__ function"):
        mod.get_kernel("helper")


def test_source_must_be_text(cpu):
    with pytest.raises(TypeError, match="source must be a str"):
        ql.compile(b"__global__ void k() {}", device=cpu)
    with pytest.raises(TypeError, match="compiler options are strings"):
        ql.compile("__global__ void k() {}", device=cpu, options=[3])


def test_the_preprocessor_decides_which_kernels_exist(cpu):
    source = r"""
    #if 0
    __global__ void disabled(int *x) { x[0] = 1; }
    #endif
    #ifndef QUICKLAUNCH_CPU
    __global__ void gpu_only(int *x) { __syncthreads(); }   // not compiled on the CPU
    #else
    __global__ void host_side(int *x) { x[0] = 2; }
    #endif
    #define DEFINE_FILL(name, value) \
        extern "C" __global__ void name(int *x) { x[threadIdx.x] = value; }
    DEFINE_FILL(fill3, 3)
    DEFINE_FILL(fill4, 4)
    """
    mod = ql.compile(source, device=cpu)
    assert mod.kernels == ["host_side", "fill3", "fill4"]
    assert [(p.name, p.ctype) for p in mod.fill4.params] == [("x", "int *")]
    x = poisoned(8, np.int32)
    mod.fill4[1, 8](x)
    assert (x == 4).all()
    with pytest.raises(ql.KernelNotFoundError):
        mod.get_kernel("disabled")


def test_options_reach_the_scan(cpu):
    source = r"""
    #ifdef WITH_EXTRA
    extern "C" __global__ void extra(int *x) { x[0] = 9; }
    #endif
    extern "C" __global__ void base(int *x) { x[0] = 1; }
    """
    assert ql.compile(source, device=cpu).kernels == ["base"]
    assert ql.compile(source, device=cpu, options=["-DWITH_EXTRA"]).kernels == ["extra", "base"]


def test_system_macros_on_a_kernel_line(cpu):
    # assert and INFINITY come from system headers; their expansions split a
    # line in the preprocessor's output, which must not lose the kernel.
    source = ('#include <assert.h>\n#include <math.h>\n'
              'extern "C" __global__ void checked(int *x) { assert(x[0] == 1); x[1] = 2; }\n'
              'extern "C" __global__ void inf(float *x) { x[0] = INFINITY; }\n')
    mod = ql.compile(source, device=cpu)
    assert mod.kernels == ["checked", "inf"]
    x = np.array([1, 0], np.int32)
    mod.checked[1, 1](x)
    assert x[1] == 2
    with pytest.raises(ql.LaunchError, match=r"device-side assert failed: x\[0\] == 1"):
        mod.checked[1, 1](np.zeros(2, np.int32))
    f = np.zeros(1, np.float32)
    mod.inf[1, 1](f)
    assert np.isinf(f[0])

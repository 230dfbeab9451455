"""Typed pointer parameters on the CPU device: an array of the wrong element
type is a LaunchTypeError before the kernel runs (it used to be silently
wrong results, and object arrays crashed the interpreter), the common
reinterpretations need no ceremony, and debug mode says when an array is
smaller than what the launch can touch."""
import subprocess
import sys
import warnings

import ml_dtypes
import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * i;
}
extern "C" __global__ void iota(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i;
}
extern "C" __global__ void vec(float4 *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = make_float4(i, i + 0.5f, -i, 1.0f);
}
extern "C" __global__ void bf_double(__nv_bfloat16 *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __float2bfloat16(2.0f * __bfloat162float(x[i]));
}
extern "C" __global__ void fill_all(float *x, int offset, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) x[i + offset] = 1.0f;
}
extern "C" __global__ void raw(void *x, int n) {}
"""


@pytest.fixture(scope="module")
def mod():
    return ql.compile(SOURCE, device="cpu")


@pytest.fixture(scope="module")
def dbg():
    return ql.compile(SOURCE, device="cpu", debug=True)


def test_matching_arrays_give_right_results(mod):
    x = np.zeros(100, np.float32)
    mod.scale[1, 128](x, 100)
    np.testing.assert_array_equal(x, 2.0 * np.arange(100))
    i = np.zeros(50, np.int32)
    mod.iota[1, 64](i, 50)
    np.testing.assert_array_equal(i, np.arange(50))


@pytest.mark.parametrize("kernel,dtype,expect,got", [
    ("scale", np.float64, "float32 elements (C type float *)", "float64"),
    ("scale", np.bool_, "float32 elements (C type float *)", "bool"),
    ("scale", np.int32, "float32 elements (C type float *)", "int32"),
    ("iota", np.int64, "int32 elements (C type int *)", "int64"),
    ("iota", np.int8, "int32 elements (C type int *)", "int8"),
    ("iota", np.float32, "int32 elements (C type int *)", "float32"),
])
def test_wrong_element_type_is_refused_before_the_kernel_runs(mod, kernel, dtype, expect, got):
    x = np.zeros(16, dtype)
    with pytest.raises(ql.LaunchTypeError) as e:
        getattr(mod, kernel)[1, 16](x, 16)
    assert str(e.value).startswith(f"kernel '{kernel}', parameter 1 'x': expects {expect}, "
                                   f"got an array of {got}; convert it with x.astype(")
    assert not x.any()   # nothing ran
    with pytest.raises(ql.LaunchTypeError):   # every launch spelling checks
        getattr(mod, kernel).launch(1, 16, x, 16)
    with pytest.raises(ql.LaunchTypeError):
        getattr(mod, kernel).configure(1, 16)(x, 16)


def test_float32_array_for_float4(mod):
    x = np.zeros(4 * 10, np.float32)
    mod.vec[1, 16](x, 10)
    v = x.reshape(10, 4)
    np.testing.assert_array_equal(v[:, 0], np.arange(10))
    np.testing.assert_array_equal(v[:, 1], np.arange(10) + 0.5)
    np.testing.assert_array_equal(v[:, 3], 1.0)
    with pytest.raises(ql.LaunchTypeError, match=r"expects float32 elements \(float4 = 4 x "
                                                 r"float32; C type float4 \*\), got an array "
                                                 r"of float64"):
        mod.vec[1, 16](np.zeros(40), 10)


def test_bfloat16_through_uint16_bits_and_ml_dtypes(mod):
    values = np.array([1.0, -2.5, 3.0, 0.125], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)   # exact in bf16
    mod.bf_double[1, 4](bits, 4)
    np.testing.assert_array_equal((bits.astype(np.uint32) << 16).view(np.float32), 2 * values)
    b = values.astype(ml_dtypes.bfloat16)
    mod.bf_double[1, 4](b, 4)
    np.testing.assert_array_equal(b.astype(np.float32), 2 * values)
    with pytest.raises(ql.LaunchTypeError, match="got an array of float16"):
        mod.bf_double[1, 4](values.astype(np.float16), 4)


def test_view_and_reinterpret_are_the_explicit_spellings(mod):
    bits = np.zeros(8, np.int32)
    mod.scale[1, 8](bits.view(np.float32), 8)
    np.testing.assert_array_equal(bits.view(np.float32), 2.0 * np.arange(8))
    bits[:] = 0
    mod.scale[1, 8](ql.reinterpret(bits), 8)
    np.testing.assert_array_equal(bits.view(np.float32), 2.0 * np.arange(8))
    buf = ql.zeros(8, np.int32, device="cpu")
    with pytest.raises(ql.LaunchTypeError, match="got an array of int32"):
        mod.scale[1, 8](buf, 8)
    mod.scale[1, 8](ql.reinterpret(buf), 8)
    np.testing.assert_array_equal(buf.numpy().view(np.float32), 2.0 * np.arange(8))


def test_untyped_pointers_take_any_numbers_but_never_objects(mod):
    for dtype in (np.float64, np.int8, np.complex128, np.dtype("V3")):
        mod.raw[1, 1](np.zeros(4, dtype), 4)
    with pytest.raises(ql.LaunchTypeError, match="holds Python objects"):
        mod.raw[1, 1](np.zeros(4, object), 4)


@pytest.mark.parametrize("debug", [False, True])
def test_object_arrays_never_crash(debug):
    # in a child: before this fix the launch wrote floats over PyObject pointers
    code = (f"import numpy as np, quicklaunch as ql\n"
            f"m = ql.compile({SOURCE!r}, device='cpu', debug={debug})\n"
            f"x = np.array([1.0, 'a', None, 3] * 4, dtype=object)\n"
            f"try:\n    m.scale[1, 16](x, 16)\nexcept ql.LaunchTypeError as e:\n"
            f"    print('refused:', e)\n"
            f"print(x[1], x[2])\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "refused: kernel 'scale', parameter 1 'x': got an array of dtype object" in r.stdout
    assert r.stdout.rstrip().endswith("a None")


def test_debug_warns_for_an_empty_array_with_a_large_length(dbg):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ql.LaunchWarning)
        # offset=0 used to count as the kernel's bound; n is the length parameter
        with pytest.raises(ql.LaunchWarning, match=r"parameter 1 'x': the array has 0 elements "
                                                   r"but the launch runs 32 threads and no "
                                                   r"integer argument \(n=1000\) is at most "
                                                   r"0; .*it is empty"):
            dbg.fill_all[1, 32](np.zeros(0, np.float32), 0, 1000)
        dbg.fill_all[1, 32](np.zeros(1000, np.float32), 0, 1000)   # bounded: silent
        dbg.scale[1, 32](np.zeros(0, np.float32), 0)               # n=0 guards it


def test_debug_counts_in_the_parameters_elements(dbg):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ql.LaunchWarning)
        dbg.vec[1, 10](np.zeros(40, np.float32), 10)   # 10 float4: fine
        with pytest.raises(ql.LaunchWarning, match=r"the array has 2 elements \(float4\) but "
                                                   r"the launch runs 10 threads"):
            dbg.vec[1, 10](np.zeros(8, np.float32), 10)
        with pytest.raises(ql.LaunchWarning, match=r"holds 36 bytes, not a whole number of "
                                                   r"float4 \(16 bytes each\)"):
            dbg.vec[1, 2](np.zeros(9, np.float32), 2)


def test_debug_launches_check_element_types_too(dbg):
    with pytest.raises(ql.LaunchTypeError, match="expects float32 elements .* got an array "
                                                 "of float64"):
        dbg.scale[1, 4](np.zeros(4), 4)


def test_template_instantiations_check_their_element_type():
    m = ql.compile("template <typename T> __global__ void twice(T *x, int n) {\n"
                   "    int i = threadIdx.x; if (i < n) x[i] = x[i] + x[i]; }",
                   device="cpu", name_expressions=["twice<float>", "twice<double>"])
    x = np.arange(4, dtype=np.float64)
    m.get_kernel("twice<double>")[1, 4](x, 4)
    np.testing.assert_array_equal(x, 2.0 * np.arange(4))
    with pytest.raises(ql.LaunchTypeError, match=r"kernel 'twice<float>', parameter 1 'x': "
                                                 r"expects float32 elements \(C type float "
                                                 r"\*\), got an array of float64"):
        m.get_kernel("twice<float>")[1, 4](x, 4)


def test_debug_sizes_of_template_instantiations():
    m = ql.compile("template <typename T> __global__ void put(T *x, int n) {\n"
                   "    int i = threadIdx.x; if (i < n) x[i] = T(); }",
                   device="cpu", name_expressions=["put<float4>"], debug=True)
    k = m.get_kernel("put<float4>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ql.LaunchWarning)
        k[1, 4](np.zeros(16, np.float32), 4)   # 4 float4
        with pytest.raises(ql.LaunchWarning, match=r"the array has 3 elements \(float4\) but "
                                                   r"the launch runs 4 threads"):
            k[1, 4](np.zeros(12, np.float32), 4)

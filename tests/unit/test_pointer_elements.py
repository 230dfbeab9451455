"""Pointer element types, without a compiler: quicklaunch.elements reads a
parameter's C type, and the launcher (on the recording backend) checks each
pointer argument's dtype, buffer format, typestr, DLPack or torch dtype
against it."""
import array
import struct

import ml_dtypes
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import _launch
from quicklaunch.elements import element

from .recording_backend import CPTR, PTR, make_kernel

# ------------------------------------------------------- C type -> element


@pytest.mark.parametrize("ctype,expected", [
    ("float *", ("f", 4, 1)), ("const float *__restrict__", ("f", 4, 1)),
    ("float *const", ("f", 4, 1)), ("const double *", ("f", 8, 1)),
    ("int *", ("i", 4, 1)), ("unsigned *", ("u", 4, 1)), ("const unsigned int *", ("u", 4, 1)),
    ("int64_t *", ("i", 8, 1)), ("std::uint8_t *", ("u", 1, 1)), ("size_t *", ("u", 8, 1)),
    ("long long *", ("i", 8, 1)), ("bool *", ("b", 1, 1)), ("signed char *", ("i", 1, 1)),
    ("__half *", ("f", 2, 1)), ("const __nv_bfloat16 *", ("B", 2, 1)),
    ("float4 *", ("f", 4, 4)), ("const int2 *", ("i", 4, 2)), ("uchar4 *", ("u", 1, 4)),
    ("double2 *", ("f", 8, 2)), ("__half2 *", ("f", 2, 2)), ("cuComplex *", ("f", 4, 2)),
    ("void *", None), ("const void *", None), ("char *", None), ("const char *", None),
    ("T *", None), ("float **", None), ("struct Particle *", None), ("Vec<float, 4> *", None),
    ("float", None), ("int", None)])
def test_element_from_c_type(ctype, expected):
    e = element(ctype)
    assert (e[:3] if e else None) == expected


def kernel(ctype, code=PTR):
    return make_kernel([code], names=["x"], elems=[element(ctype)])


def launches(k, arg):
    k[1, 1](arg)
    k.backend.pop()
    return True


def refusal(k, arg):
    with pytest.raises(ql.LaunchTypeError) as e:
        k[1, 1](arg)
    return str(e.value)


# ---------------------------------------------------------- NumPy dtypes

ACCEPT = [
    ("float *", np.float32), ("const float *", np.float32), ("double *", np.float64),
    ("int *", np.int32), ("int *", np.uint32), ("unsigned *", np.int32),
    ("float4 *", np.float32), ("int4 *", np.int32), ("float2 *", np.complex64),
    ("cuDoubleComplex *", np.complex128), ("__half *", np.float16), ("__half *", np.uint16),
    ("__nv_bfloat16 *", ml_dtypes.bfloat16), ("__nv_bfloat16 *", np.uint16),
    ("__half2 *", np.uint32), ("__nv_bfloat162 *", np.uint32), ("__half2 *", np.float16),
    ("uint8_t *", np.uint8), ("uint8_t *", np.bool_), ("bool *", np.bool_),
    ("float *", np.dtype("V4")), ("float4 *", np.dtype("4f4,")),
    ("float4 *", np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4"), ("w", "f4")])),
    ("void *", np.float64), ("char *", np.int64), ("T *", np.complex128)]
REFUSE = [
    ("float *", np.float64), ("float *", np.int32), ("float *", np.bool_),
    ("float *", np.float16), ("double *", np.float32), ("double *", np.longdouble),
    ("int *", np.int64), ("int *", np.int8), ("int *", np.float32), ("int64_t *", np.int32),
    ("float4 *", np.float64), ("float4 *", np.int32), ("__nv_bfloat16 *", np.float16),
    ("__half *", ml_dtypes.bfloat16), ("__half *", np.int16), ("bool *", np.uint8),
    ("__half2 *", np.uint64), ("__half2 *", np.float32), ("__half *", np.uint32),
    ("float *", np.complex64), ("float *", ml_dtypes.float8_e4m3fn),
    ("float *", np.dtype([("a", "f4"), ("b", "f4")])), ("float *", np.dtype("<U1")),
    ("float *", np.dtype("S4"))]


@pytest.mark.parametrize("ctype,dtype", ACCEPT, ids=[f"{c}-{np.dtype(d)}" for c, d in ACCEPT])
def test_accepted_dtypes(ctype, dtype):
    k = kernel(ctype)
    a = np.zeros(8, dtype)
    for _ in range(2):  # the second launch takes the remembered-dtype compare
        k[1, 1](a)
        assert struct.unpack("<Q", k.backend.pop().params[0])[0] == a.ctypes.data


@pytest.mark.parametrize("ctype,dtype", REFUSE, ids=[f"{c}-{np.dtype(d)}" for c, d in REFUSE])
def test_refused_dtypes(ctype, dtype):
    k = kernel(ctype)
    for _ in range(2):
        message = refusal(k, np.zeros(8, dtype))
        assert message.startswith("kernel 'kern', parameter 1 'x': expects ")
        assert f"C type {ctype})" in message and "ql.reinterpret(x)" in message
    assert not k.backend.calls


def test_message_names_kernel_parameter_expected_and_got():
    assert refusal(kernel("const float *"), np.zeros(4)) == (
        "kernel 'kern', parameter 1 'x': expects float32 elements (C type const float *), got "
        "an array of float64; convert it with x.astype(np.float32), or reinterpret the bytes "
        "on purpose with x.view(np.float32) or ql.reinterpret(x)")
    assert "expects bfloat16 elements (ml_dtypes.bfloat16, or its bits as uint16" in refusal(
        kernel("__nv_bfloat16 *"), np.zeros(4, np.float16))
    assert "expects float32 elements (float4 = 4 x float32; C type float4 *), got an array " \
           "of int32" in refusal(kernel("float4 *"), np.zeros(4, np.int32))


def test_a_refused_dtype_after_an_accepted_one_is_still_refused():
    k = kernel("float *")
    f32, f64 = np.zeros(4, np.float32), np.zeros(4)
    for _ in range(3):
        assert launches(k, f32)
        refusal(k, f64)
    # an untyped pointer alternating dtypes takes each
    k = kernel("void *")
    for a in (f32, f64, f32, np.zeros(2, np.int8)):
        assert launches(k, a)


def test_reinterpreting_on_purpose():
    k = kernel("float *")
    bits = np.arange(4, dtype=np.int32)
    assert launches(k, bits.view(np.float32))
    assert launches(k, ql.reinterpret(bits))
    assert launches(k, ql.reinterpret(np.zeros((2, 3))))
    assert launches(k, ql.reinterpret(np.zeros(0)))
    assert ql.reinterpret(bits).nbytes == bits.nbytes
    assert launches(kernel("__nv_bfloat16 *"), np.zeros(4, np.float16).view(np.uint16))


def test_object_arrays_are_refused_by_every_pointer():
    objects = np.array([1.0, "a", None], dtype=object)
    holding = np.zeros(3, dtype=[("v", "f4"), ("o", "O")])
    for k in (kernel("float *"), kernel("void *"), kernel("const char *", CPTR),
              make_kernel([PTR], names=["x"])):  # no element types given at all
        for a in (objects, holding, np.zeros(0, object)):
            assert "holds Python objects" in refusal(k, a)
    assert refusal(kernel("float *"), objects) == (
        "kernel 'kern', parameter 1 'x': got an array of dtype object, which holds Python "
        "objects (their memory is PyObject pointers, never numbers a kernel can read); pass "
        "an array of numbers, e.g. np.asarray(x, dtype=np.float32)")


def test_non_native_byte_order():
    swapped = np.zeros(4, ">f4" if np.little_endian else "<f4")
    assert "non-native byte order" in refusal(kernel("float *"), swapped)
    assert launches(kernel("void *"), swapped)
    assert launches(kernel("uint8_t *"), np.zeros(4, "|u1"))


def test_array_subclasses_are_checked_too():
    class Sub(np.ndarray):
        pass
    assert "got an array of float64" in refusal(kernel("float *"), np.zeros(4).view(Sub))
    assert launches(kernel("float *"), np.zeros(4, np.float32).view(Sub))


# ------------------------------------------ buffers, interfaces, ql buffers


def test_buffer_protocol_formats():
    k = kernel("float *")
    assert "got a buffer of format 'd'" in refusal(k, memoryview(np.zeros(4)))
    assert "format 'i'" in refusal(k, array.array("i", [1, 2]))
    assert launches(k, array.array("f", [1, 2]))
    assert launches(k, bytearray(16))               # untyped bytes ("B")
    assert launches(k, memoryview(bytearray(16)).cast("f"))
    assert "format 'l'" in refusal(kernel("int *"), memoryview(np.zeros(2, np.int64)))
    assert launches(kernel("long long *"), array.array("q", [1]))
    assert launches(kernel("void *"), memoryview(np.zeros(4)))
    assert "holds Python objects" in refusal(kernel("void *"), memoryview(
        np.zeros(2, object)))


class ArrayInterface:
    def __init__(self, typestr, ptr=0x7000):
        self.__array_interface__ = {"data": (ptr, False), "strides": None, "shape": (4,),
                                    "typestr": typestr, "version": 3}


def test_array_interface_typestr():
    k = kernel("float *")
    assert launches(k, ArrayInterface("<f4"))
    assert "got an __array_interface__ of typestr '<f8'" in refusal(k, ArrayInterface("<f8"))
    assert "holds Python objects" in refusal(kernel("void *"), ArrayInterface("|O"))
    assert launches(k, ArrayInterface("|V16"))
    assert launches(kernel("void *"), ArrayInterface("<i8"))
    assert launches(kernel("float4 *"), ArrayInterface("<f4"))


def test_ql_buffers_carry_their_dtype():
    k = kernel("float *")
    typed = _launch.Buffer(0x5000, 64, 0, False, None, dtype=np.dtype(np.float64))
    assert "got an array of float64" in refusal(k, typed)
    assert launches(k, _launch.Buffer(0x5000, 64, 0, False, None, dtype=np.dtype("f4")))
    assert launches(k, _launch.Buffer(0x5000, 64, 0, False, None))  # untyped
    with pytest.raises(TypeError, match="dtype must be a numpy.dtype"):
        _launch.Buffer(0x5000, 64, 0, dtype="float32")
    cpu = ql.device("cpu")
    buf = ql.empty(4, np.float64, device=cpu)
    k = make_kernel([PTR], names=["x"], elems=[element("float *")], device_id=cpu.id)
    assert "got an array of float64" in refusal(k, buf)
    assert launches(k, ql.reinterpret(buf))
    assert launches(k, ql.empty(4, np.float32, device=cpu))


# ------------------------------------ a GPU kernel's arrays from other libraries

ADDRESS = 0x7F00_1234_5600


def gpu_kernel(ctype):
    return make_kernel([PTR], names=["x"], elems=[element(ctype)], host_memory=False,
                       device_id=0x5A5A, device_name="gpu:x", dlpack_device=(2, 0))


def cai(typestr):
    iface = {"data": (ADDRESS, False), "shape": (4,), "typestr": typestr, "strides": None,
             "version": 3}
    return type("CaiArray", (), {"__cuda_array_interface__": iface})()


def dlpack(code, bits):
    def __dlpack__(self, stream=None):
        return _launch._dlpack_capsule(ADDRESS, (4,), code, bits, 2, 0, self)
    return type("DLArray", (), {"__dlpack__": __dlpack__})()


def torch_like(dtype):
    ns = {"is_cuda": True, "is_contiguous": lambda self: True, "dtype": dtype,
          "get_device": lambda self: 0, "data_ptr": lambda self: ADDRESS}
    return type("TensorLike", (), ns)()


def test_cuda_array_interface_typestr():
    k = gpu_kernel("float *")
    assert launches(k, cai("<f4"))
    assert "got a __cuda_array_interface__ of typestr '<f8'" in refusal(k, cai("<f8"))
    assert "typestr '<i4'" in refusal(k, cai("<i4"))
    assert launches(gpu_kernel("__nv_bfloat16 *"), cai("<u2"))
    assert launches(k, ql.reinterpret(cai("<f8")))


def test_dlpack_dtype():
    k = gpu_kernel("float *")
    assert launches(k, dlpack(2, 32))
    assert "got DLPack dtype (code 2, 64 bits, 1 lanes)" in refusal(k, dlpack(2, 64))
    assert launches(gpu_kernel("__nv_bfloat16 *"), dlpack(4, 16))
    assert "code 4" in refusal(gpu_kernel("__half *"), dlpack(4, 16))
    assert launches(gpu_kernel("void *"), dlpack(0, 64))


def test_torch_like_dtype():
    k = gpu_kernel("float *")
    assert launches(k, torch_like("torch.float32"))
    assert "got a tensor of torch.float64" in refusal(k, torch_like("torch.float64"))
    assert "torch.int64" in refusal(gpu_kernel("int *"), torch_like("torch.int64"))
    assert launches(gpu_kernel("__nv_bfloat16 *"), torch_like("torch.bfloat16"))
    assert launches(k, torch_like("torch.float8_e4m3fn_unknown"))  # not knowable: passes


def test_template_instantiations_type_their_pointers():
    from quicklaunch.elements import elements, template_types
    from quicklaunch.module import Param
    src = ("template <typename T, int N = 2, class U = int> __global__ void k(T *x, "
           "const U *y, int n) {}\nnamespace ns { template <class V> __global__ void v(V *x) "
           "{} }")
    assert template_types(src, "k<float>") == {"T": "float"}
    assert template_types(src, "k<double, 3, unsigned>") == {"T": "double", "U": "unsigned"}
    assert template_types(src, "ns::v<float4>") == {"V": "float4"}
    assert template_types(src, "v<Vec<int, 2>>") == {"V": "Vec<int, 2>"}
    assert template_types(src, "plain") == {} and template_types(None, "k<float>") == {}
    params = (Param("x", "T *", 8, 8, "pointer"), Param("y", "const U *", 8, 8, "const pointer"),
              Param("n", "int", 4, 4, "int32"))
    got = elements(params, {"T": "double", "U": "uint8_t"})
    assert [e[:3] if e else None for e in got] == [("f", 8, 1), ("u", 1, 1), None]
    assert elements(params, {"T": "Vec<int, 2>"})[0] is None   # unknown: any


def test_torch_dtypes_are_remembered_without_changing_the_verdict():
    f32, f64 = torch_like("torch.float32"), torch_like("torch.float64")
    k, d = gpu_kernel("float *"), gpu_kernel("double *")
    for _ in range(3):   # the second and later reads come from the dtype cache
        assert launches(k, f32) and launches(d, f64)
        assert "torch.float64" in refusal(k, f64)
        assert "torch.float32" in refusal(d, f32)
    for n in range(20):  # more dtype objects than the cache holds
        assert launches(k, torch_like(f"torch.custom{n}"))   # unknown names: not knowable
    assert "torch.float64" in refusal(k, f64)

"""Every scalar parameter type round-trips through a kernel that writes it
back; structs travel by value from bytes, NumPy structured scalars and ctypes."""
import ctypes

import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SCALARS = {  # C type -> (NumPy dtype, values at the edges of its range)
    "signed char": (np.int8, [-128, 127, -5]),
    "short": (np.int16, [-32768, 32767, 1234]),
    "int": (np.int32, [-2**31, 2**31 - 1, -77]),
    "long long": (np.int64, [-2**63, 2**63 - 1, 42]),
    "unsigned char": (np.uint8, [0, 255, 200]),
    "unsigned short": (np.uint16, [0, 65535, 999]),
    "unsigned int": (np.uint32, [0, 2**32 - 1, 3]),
    "unsigned long long": (np.uint64, [0, 2**64 - 1, 2**63]),
    "float": (np.float32, [1.5, -3.25e38, 1e-40, float("inf")]),
    "double": (np.float64, [np.pi, -1e308, 5e-324, float("-inf")]),
    "bool": (np.bool_, [True, False]),
}

SOURCE = r"""
template <typename T> __global__ void put(T v, T *out) { out[threadIdx.x] = v; }
__global__ void put_half(__half v, unsigned short *bits, float *as_float) {
    bits[0] = __half_as_ushort(v);
    as_float[0] = __half2float(v);
}
__global__ void put_bf16(__nv_bfloat16 v, float *as_float) { as_float[0] = __bfloat162float(v); }
struct Mixed { char c; double d; int i; float f[3]; };
__global__ void put_struct(Mixed m, double *out) {
    out[0] = m.c; out[1] = m.d; out[2] = m.i;
    out[3] = m.f[0]; out[4] = m.f[1]; out[5] = m.f[2];
}
__global__ void put_vec(float4 v, int2 w, float *out) {
    out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w; out[4] = w.x; out[5] = w.y;
}
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu,
                      name_expressions=[f"put<{t}>" for t in SCALARS])


@pytest.mark.parametrize("ctype", list(SCALARS))
def test_scalar_round_trip(mod, ctype, rng):
    dtype, edges = SCALARS[ctype]
    k = mod.get_kernel(f"put<{ctype}>")
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        randoms = [int(v) for v in rng.integers(info.min, info.max, 5, dtype=dtype,
                                                endpoint=True)]
    elif np.dtype(dtype).kind == "f":
        randoms = list(rng.standard_normal(5) * 1e3)
    else:
        randoms = [bool(v) for v in rng.integers(0, 2, 4)]
    for v in edges + randoms:
        out = poisoned(3, dtype)
        k[1, 3](v, out)
        expected = np.array([v] * 3, dtype=dtype)
        np.testing.assert_array_equal(out, expected, err_msg=f"{ctype} {v!r}")
        assert k.params[0].size == np.dtype(dtype).itemsize


@pytest.mark.parametrize("ctype", ["int", "long long", "unsigned int", "unsigned long long",
                                   "double"])
def test_small_values_take_the_fast_pass_and_still_check(mod, ctype, rng):
    """Ints of one digit and exact floats are packed by the launcher's fast
    pass for these kinds; the values at its edges, and a negative one for an
    unsigned parameter (which it leaves to the general pass), still come
    back exactly or raise that pass's error."""
    dtype = SCALARS[ctype][0]
    k = mod.get_kernel(f"put<{ctype}>")
    run = k.configure(1, 2)
    if ctype == "double":
        values = [0.0, -0.0, 1.0 / 3.0, -7.5e-310, float("nan"),
                  *(rng.standard_normal(4) * 1e6)]
    else:
        lo = 0 if ctype.startswith("unsigned") else -(2**30 - 1)
        values = [0, 1, 2**30 - 1, 2**30, lo, *(int(v) for v in rng.integers(lo, 2**30, 4))]
    for v in values:
        out = poisoned(2, dtype)
        run(v, out)
        np.testing.assert_array_equal(out, np.array([v, v], dtype=dtype), err_msg=repr(v))
    if ctype.startswith("unsigned"):
        out = poisoned(2, dtype)
        with pytest.raises(ql.LaunchOverflowError, match=r"parameter 1 'v': -1 is out of range"):
            run(-1, out)
        assert np.isnan(out.view(np.float32 if dtype == np.uint32 else np.float64)).all()


def test_numpy_scalars(mod):
    out = poisoned(1, np.float32)
    mod.get_kernel("put<float>")[1, 1](np.float32(2.5), out)
    assert out[0] == 2.5
    out = poisoned(1, np.uint64)
    mod.get_kernel("put<unsigned long long>")[1, 1](np.uint64(2**64 - 1), out)
    assert out[0] == 2**64 - 1


def test_half_round_trip(mod, rng):
    k = mod.put_half
    assert k.params[0].kind == "half" and k.params[0].size == 2
    values = list(rng.standard_normal(50) * 100) + [0.0, -0.0, 65504.0, 6e-8, 1 / 3,
                                                     float("inf"), 2049.0, 2051.0]
    for v in values:
        bits, f = poisoned(1, np.uint16), poisoned(1, np.float32)
        k[1, 1](v, bits, f)
        assert bits[0] == np.float16(v).view(np.uint16), v
        assert f[0] == np.float32(np.float16(v)), v


def test_bfloat16(mod):
    f = poisoned(1, np.float32)
    mod.put_bf16[1, 1](1.0 + 2**-8, f)  # a tie: rounds to even (1.0)
    assert f[0] == 1.0
    mod.put_bf16[1, 1](3.140625, f)
    assert f[0] == 3.140625


MIXED = np.dtype({"names": ["c", "d", "i", "f"],
                  "formats": ["i1", "<f8", "<i4", ("<f4", 3)],
                  "offsets": [0, 8, 16, 20], "itemsize": 32})


class CMixed(ctypes.Structure):
    _fields_ = [("c", ctypes.c_byte), ("d", ctypes.c_double), ("i", ctypes.c_int),
                ("f", ctypes.c_float * 3)]


def test_struct_by_value(mod):
    k = mod.put_struct
    assert (k.params[0].kind, k.params[0].size, k.params[0].align) == ("struct", 32, 8)
    expected = [-3, 2.5, 7, 0.5, 1.5, -2.0]
    rec = np.zeros(1, MIXED)[0]
    rec["c"], rec["d"], rec["i"], rec["f"] = -3, 2.5, 7, (0.5, 1.5, -2.0)
    cs = CMixed(-3, 2.5, 7, (ctypes.c_float * 3)(0.5, 1.5, -2.0))
    for value in (rec, cs, bytes(cs), bytearray(bytes(cs)), memoryview(bytes(cs))):
        out = poisoned(6, np.float64)
        k[1, 1](value, out)
        np.testing.assert_array_equal(out, expected)


def test_vector_types_by_value(mod):
    k = mod.put_vec
    assert [(p.size, p.align) for p in k.params[:2]] == [(16, 16), (8, 8)]
    out = poisoned(6, np.float32)
    k[1, 1](np.array([1, 2, 3, 4], np.float32).tobytes(), np.array([5, -6], np.int32).tobytes(),
            out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 5, -6])


def test_struct_wrong_size(mod):
    with pytest.raises(ql.LaunchValueError, match=r"parameter 1 'm'.*31 bytes.*32 bytes"):
        mod.put_struct[1, 1](b"\0" * 31, np.zeros(6))

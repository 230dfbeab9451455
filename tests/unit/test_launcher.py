"""The C launcher (quicklaunch._launch) driven through a recording backend.

No compiler is needed: each KernelCore is built by hand with its launch entry
pointing at a ctypes callback of cuLaunchKernel's shape, which records the
configuration and copies out every parameter's bytes (recording_backend.py).
"""
import ctypes
import gc
import math
import os
import pickle
import struct
import subprocess
import sys
import threading
import tracemalloc
import weakref
from fractions import Fraction

import numpy as np
import pytest

import quicklaunch as ql  # registers the error classes with the launcher
from quicklaunch import _launch

# ----------------------------------------------------------------- helpers

from .recording_backend import (BF16, BOOL, CPTR, F16, F32, F64, I8, I16, I32, I64,  # noqa: E402
                                NATURAL, PTR, STRUCT, U8, U16, U32, U64, make_kernel)

_single = {}


def pack(code, value, size=None):
    """The bytes the launcher writes for `value` passed to a one-parameter kernel."""
    key = (code, size)
    if key not in _single:
        _single[key] = make_kernel([code], [size] if size else None)
    k = _single[key]
    k[1, 1](value)
    return k.backend.pop().params[0]


def where(i=1, name="p0"):
    return f"kernel 'kern', parameter {i} '{name}': "


def narrow_ref(d, exp_bits, mant_bits):
    """Bits of finite `d` rounded to nearest-even in a binary format, exactly
    (Fractions); None where it overflows to infinity."""
    bias = 2 ** (exp_bits - 1) - 1
    sign = (1 << (exp_bits + mant_bits)) if math.copysign(1.0, d) < 0 else 0
    if d == 0:
        return sign
    e = max(math.frexp(abs(d))[1] - 1, 1 - bias)
    n = round(Fraction(abs(d)) / Fraction(2) ** (e - mant_bits))  # half to even
    if n == 2 ** (mant_bits + 1):
        n, e = n // 2, e + 1
    if n < 2 ** mant_bits:
        return sign | n
    if e + bias >= 2 ** exp_bits - 1:
        return None
    return sign | ((e + bias) << mant_bits) | (n - 2 ** mant_bits)


def narrow_value(bits, exp_bits):
    """The double a half (exp_bits 5) or bfloat16 bit pattern stands for."""
    if exp_bits == 5:
        return float(np.uint16(bits).view(np.float16))
    return float(np.uint32(bits << 16).view(np.float32))


def narrow_samples(rng, exp_bits, mant_bits, count):
    """Random doubles for a narrow format: log-uniform over its whole range
    (subnormals and overflow included), exact ties and ties +- one double ulp."""
    bias = 2 ** (exp_bits - 1) - 1
    out = list(rng.choice([-1.0, 1.0], count) *
               np.exp2(rng.uniform(-bias - mant_bits - 1, bias + 2, count)))
    top = ((2 ** exp_bits - 1) << mant_bits) - 1   # the largest finite pattern
    for h in map(int, rng.integers(0, top, count // 2)):
        a, b = narrow_value(h, exp_bits), narrow_value(h + 1, exp_bits)
        mid = (a + b) / 2
        out += [mid, -mid, math.nextafter(mid, 0), math.nextafter(mid, math.inf), a]
    return out


# ----------------------------------------------------------------- scalars

INTS = [(I8, "int8", 1, -2**7, 2**7 - 1), (I16, "int16", 2, -2**15, 2**15 - 1),
        (I32, "int32", 4, -2**31, 2**31 - 1), (I64, "int64", 8, -2**63, 2**63 - 1),
        (U8, "uint8", 1, 0, 2**8 - 1), (U16, "uint16", 2, 0, 2**16 - 1),
        (U32, "uint32", 4, 0, 2**32 - 1), (U64, "uint64", 8, 0, 2**64 - 1)]


@pytest.mark.parametrize("code,name,size,lo,hi", INTS, ids=[t[1] for t in INTS])
def test_integers_round_trip(code, name, size, lo, hi):
    rng = np.random.default_rng(code)
    dtype = np.dtype(name)
    values = [lo, hi, lo + 1, hi - 1, 0, 1] + [int(v) for v in rng.integers(
        lo, hi, 300, dtype=dtype, endpoint=True)]
    for v in values:
        want = v.to_bytes(size, "little", signed=lo < 0)
        assert pack(code, v) == want, v
        assert pack(code, dtype.type(v)) == want, v   # NumPy scalars of the same type


@pytest.mark.parametrize("code,name,size,lo,hi", INTS, ids=[t[1] for t in INTS])
def test_integers_out_of_range(code, name, size, lo, hi):
    for v in (lo - 1, hi + 1, lo - 2**70, hi + 2**70, -1 if lo == 0 else lo - 12345):
        with pytest.raises(ql.LaunchOverflowError) as e:
            pack(code, v)
        assert isinstance(e.value, OverflowError) and isinstance(e.value, ql.LaunchError)
        assert str(e.value) == where() + f"{v!r} is out of range for {name} [{lo}, {hi}]"


def test_numpy_scalars_for_matching_params():
    assert pack(I32, np.int32(5)) == struct.pack("<i", 5)
    assert pack(U64, np.uint64(2**64 - 1)) == b"\xff" * 8
    assert pack(I64, np.int8(-3)) == struct.pack("<q", -3)
    assert pack(F32, np.float32(1.5)) == struct.pack("<f", 1.5)
    assert pack(F64, np.float32(0.1)) == struct.pack("<d", float(np.float32(0.1)))
    assert pack(F16, np.float16(-0.5)) == np.float16(-0.5).tobytes()
    assert pack(F32, 3) == struct.pack("<f", 3.0)               # ints convert to floats
    with pytest.raises(ql.LaunchOverflowError, match="uint32"):
        pack(U32, np.int64(-1))


@pytest.mark.parametrize("value", [1.5, 2.0, np.float32(1.0), np.float64(3.0)])
def test_float_to_integer_param(value):
    with pytest.raises(ql.LaunchTypeError) as e:
        pack(I32, value)
    assert str(e.value) == where() + ("expects an integer (C type int32), got a float; "
                                      "convert it with int(x) if truncation is intended")


def test_float64_round_trips_every_bit_pattern():
    bits = np.random.default_rng(1).integers(0, 2**64, 5000, dtype=np.uint64, endpoint=False)
    for d in bits.view(np.float64):
        assert pack(F64, d) == d.tobytes()          # NaN payloads included
        assert pack(F64, float(d)) == struct.pack("<d", float(d))


def test_float32_rounds_like_numpy():
    rng = np.random.default_rng(2)
    values = list(rng.standard_normal(3000) * np.exp2(rng.uniform(-160, 140, 3000)))
    f32 = rng.integers(0, 0x7f800000, 1000).astype(np.uint32).view(np.float32)
    values += [float(x) for x in f32] + [(float(a) + float(np.nextafter(a, np.inf))) / 2
                                         for a in f32]           # exact ties
    values += [0.0, -0.0, 3.4028235677973366e38, 3.4028235677973366e38 * (1 + 2**-30),
               1.4e-45, 7e-46, 2**-150, -2**-150 * 1.5]
    for d in values:
        with np.errstate(over="ignore"):
            want = np.float32(d)
        if math.isinf(want):
            with pytest.raises(ql.LaunchOverflowError):
                pack(F32, d)
        else:
            assert pack(F32, d) == want.tobytes(), d


@pytest.mark.parametrize("code,exp_bits,mant_bits", [(F16, 5, 10), (BF16, 8, 7)],
                         ids=["half", "bfloat16"])
def test_narrow_floats_round_to_nearest_even(code, exp_bits, mant_bits):
    rng = np.random.default_rng(code)
    values = narrow_samples(rng, exp_bits, mant_bits, 4000)
    values += [0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 2**-24, 2**-25,
               2**-25 * (1 + 2**-52), 3 * 2**-26, 6.1e-5, 1 + 2**-11, 1 + 3 * 2**-11,
               3.3895313892515355e38, 3.3961775292304e38, 1e-45, 9.2e-41, 1e300, -1e-300]
    for d in values:
        want = narrow_ref(d, exp_bits, mant_bits)
        if code == F16:   # the exact reference agrees with NumPy's half conversion
            with np.errstate(over="ignore"):
                h = np.float16(d)
            assert want == (None if math.isinf(h) else int(h.view(np.uint16))), d
        if want is None:
            with pytest.raises(ql.LaunchOverflowError):
                pack(code, d)
        else:
            assert pack(code, d) == want.to_bytes(2, "little"), d


@pytest.mark.parametrize("code,exp_bits", [(F16, 5), (BF16, 8), (F32, 8), (F64, 11)])
def test_inf_and_nan_pass_through(code, exp_bits):
    for v in (math.inf, -math.inf, math.nan):
        bits = int.from_bytes(pack(code, v), "little")
        top = NATURAL[code] * 8 - 1                   # the sign bit
        assert bits >> top == (v < 0)
        assert (bits >> (top - exp_bits)) & (2 ** exp_bits - 1) == 2 ** exp_bits - 1
        assert (bits & ((1 << (top - exp_bits)) - 1) != 0) == math.isnan(v)


@pytest.mark.parametrize("code,text,value", [
    (F32, "float", 1e300), (F32, "float", -3.5e38), (F32, "float", 2**200),
    (F16, "__half", 65520.0), (F16, "__half", 1e6), (BF16, "__nv_bfloat16", 3.4e38)])
def test_finite_too_large_for_float_kind(code, text, value):
    with pytest.raises(ql.LaunchOverflowError) as e:
        pack(code, value)
    assert str(e.value) == where() + (f"{value!r} is out of range for {text} (it would "
                                      "become infinity); pass float('inf') if that is intended")


def test_int_too_large_for_double():
    with pytest.raises(ql.LaunchOverflowError, match="the int is too large for double"):
        pack(F64, 2**1024)


# Regression (fixed): _launch.c pack_floating() accepts PyArray_IsScalar(o, Number), which includes
# NumPy complex scalars: np.complex128(1+2j) silently becomes 1.0 (a ComplexWarning
# at most), while a Python complex is a LaunchTypeError.
@pytest.mark.parametrize("code", [F16, BF16, F32, F64])
@pytest.mark.parametrize("value", [np.complex128(1 + 2j), np.complex64(1 + 0j)],
                         ids=["complex128", "complex64"])
def test_numpy_complex_to_float_param(code, value):
    with pytest.raises(ql.LaunchTypeError, match="expects a real number"):
        pack(code, value)
    with pytest.raises(ql.LaunchTypeError, match="expects a real number"):
        pack(code, 1 + 2j)


def test_bool():
    for v, want in [(True, 1), (False, 0), (np.True_, 1), (np.False_, 0), (1, 1), (0, 0)]:
        assert pack(BOOL, v) == bytes([want])
    with pytest.raises(ql.LaunchValueError, match="expects a bool, got the int 2"):
        pack(BOOL, 2)


@pytest.mark.parametrize("code", [I8, I32, I64, U8, U64, F16, BF16, F32, F64, BOOL])
@pytest.mark.parametrize("value", ["1", [1], None, b"\0"], ids=["str", "list", "None", "bytes"])
def test_wrong_type_for_scalar(code, value):
    k = make_kernel([I32, code], names=["n", "alpha"])
    with pytest.raises(ql.LaunchTypeError) as e:
        k[1, 1](0, value)
    msg = str(e.value)
    assert msg.startswith("kernel 'kern', parameter 2 'alpha': expects ")
    assert msg.endswith(f"got {type(value).__name__}")


# ---------------------------------------------------------------- pointers

def addr(o):
    return int.from_bytes(o, "little")


def test_pointer_sources():
    a = np.arange(10, dtype=np.float32)
    ba = bytearray(32)
    ba_addr = ctypes.addressof((ctypes.c_char * 32).from_buffer(ba))
    for code in (PTR, CPTR):
        assert addr(pack(code, a)) == a.ctypes.data
        assert addr(pack(code, a[3:])) == a[3:].ctypes.data
        assert addr(pack(code, 0xdead0000)) == 0xdead0000
        assert addr(pack(code, 2**64 - 1)) == 2**64 - 1
        assert addr(pack(code, None)) == 0
        assert addr(pack(code, ba)) == ba_addr
        assert addr(pack(code, memoryview(ba)[8:])) == ba_addr + 8
        assert addr(pack(code, _launch.Buffer(0x5000, 64, 0, False, None))) == 0x5000


class ArrayInterface:
    def __init__(self, ptr, readonly=False, strides=None):
        self.__array_interface__ = {"data": (ptr, readonly), "strides": strides,
                                    "shape": (4,), "typestr": "<f4", "version": 3}


def test_array_interface():
    assert addr(pack(PTR, ArrayInterface(0x7000))) == 0x7000
    assert addr(pack(CPTR, ArrayInterface(0x7000, readonly=True))) == 0x7000
    with pytest.raises(ql.LaunchValueError, match="read-only but the parameter is a non-const"):
        pack(PTR, ArrayInterface(0x7000, readonly=True))
    with pytest.raises(ql.LaunchValueError, match="strided"):
        pack(PTR, ArrayInterface(0x7000, strides=(8,)))
    bad = ArrayInterface(0)
    bad.__array_interface__ = {"shape": (4,)}
    with pytest.raises(ql.LaunchTypeError, match="no \\(pointer, read_only\\) 'data'"):
        pack(PTR, bad)


def test_read_only_memory():
    ro = np.zeros(4)
    ro.flags.writeable = False
    buf = _launch.Buffer(0x9000, 8, 0, True, None)
    for obj in (ro, buf, b"abcd"):
        with pytest.raises(ql.LaunchValueError, match="read-only but the parameter is a non-const"):
            pack(PTR, obj)
    assert addr(pack(CPTR, ro)) == ro.ctypes.data
    assert addr(pack(CPTR, buf)) == 0x9000
    pack(CPTR, b"abcd")


def test_pointer_errors():
    with pytest.raises(ql.LaunchValueError) as e:
        pack(PTR, np.zeros((4, 4))[:, 1])
    assert str(e.value) == where() + ("the array is not C-contiguous; pass "
                                      "np.ascontiguousarray(x)")
    with pytest.raises(ql.LaunchValueError, match="not C-contiguous"):
        pack(PTR, memoryview(bytearray(16))[::2])
    with pytest.raises(ql.LaunchValueError) as e:
        pack(PTR, _launch.Buffer(0x5000, 64, 1, False, None))
    assert str(e.value) == where() + ("the buffer lives on another device than the kernel "
                                      "(cpu); copy it there with ql.asarray(x, device=...)")
    for v in ("0x10", 1.5, True):
        with pytest.raises(ql.LaunchTypeError) as e:
            pack(PTR, v)
        assert str(e.value) == where() + ("expects an array, a ql buffer or an int address "
                                          f"(C type pointer), got {type(v).__name__}")
    with pytest.raises(ql.LaunchTypeError) as e:   # no protocol at all: every accepted kind
        pack(PTR, object())
    assert str(e.value) == where() + ("expects an array, a ql buffer, a torch tensor, a DLPack "
                                      "array or an int address (C type pointer), got object")
    for v in (-1, -2**63, 2**64):
        with pytest.raises(ql.LaunchOverflowError, match="not a valid address"):
            pack(CPTR, v)


def test_host_memory_on_a_device_without_it():
    k = make_kernel([PTR], host_memory=False, device_name="cuda:0")
    for v in (np.zeros(4), bytearray(8), ArrayInterface(0x7000)):
        with pytest.raises(ql.LaunchTypeError) as e:
            k[1, 1](v)
        assert "host memory, not memory of device cuda:0" in str(e.value)
        assert "ql.asarray(x, device=...)" in str(e.value)
    k[1, 1](0x1234)                                  # raw addresses are still fine
    assert addr(k.backend.pop().params[0]) == 0x1234


# Regression (fixed): _launch.c pointer_slow() reaches PyObject_CheckBuffer for NumPy scalars
# (they export the buffer protocol), so np.float32(1)/np.bool_ passed to a const
# pointer silently become the address of the scalar's own storage, and
# np.int64(addr) becomes that storage's address, not `addr`.
@pytest.mark.parametrize("value", [np.float32(1.0), np.bool_(True), np.int64(0x4000),
                                   np.uint64(0x4000)], ids=lambda v: type(v).__name__)
def test_numpy_scalar_is_not_its_own_storage(value):
    try:
        got = addr(pack(CPTR, value))
    except ql.LaunchTypeError:
        return
    assert isinstance(value, np.integer) and got == int(value)


# ------------------------------------------------------------------ structs

S12 = np.dtype([("a", "<i4"), ("b", "<f4"), ("c", "<i4")])


class CStruct(ctypes.Structure):
    _fields_ = [("a", ctypes.c_int32), ("b", ctypes.c_float), ("c", ctypes.c_int32)]


def test_struct_sources():
    raw = struct.pack("<ifi", -7, 2.5, 123456)
    assert pack(STRUCT, raw, 12) == raw
    assert pack(STRUCT, bytearray(raw), 12) == raw
    rec = np.zeros(1, dtype=S12)[0]
    rec["a"], rec["b"], rec["c"] = -7, 2.5, 123456
    assert pack(STRUCT, rec, 12) == raw
    assert pack(STRUCT, CStruct(-7, 2.5, 123456), 12) == raw
    rand = np.random.default_rng(3).bytes(12)
    assert pack(STRUCT, rand, 12) == rand


def test_struct_errors():
    with pytest.raises(ql.LaunchValueError) as e:
        pack(STRUCT, b"\0" * 8, 12)
    assert str(e.value) == where() + ("the struct is 8 bytes but the parameter's type is 12 "
                                      "bytes; match the C layout (mind padding and alignment)")
    with pytest.raises(ql.LaunchTypeError) as e:
        pack(STRUCT, 5, 12)
    assert str(e.value) == where() + ("expects a struct: bytes, a NumPy structured scalar or "
                                      "a ctypes structure (C type struct), got int")


# ------------------------------------------------------ layout and arguments

def c_offsets(sizes, aligns):
    off, out = 0, []
    for s, a in zip(sizes, aligns):
        off = -(-off // a) * a
        out.append(off)
        off += s
    return out


def test_layout_follows_c_alignment():
    codes = [I8, F64, I32, STRUCT, I16, PTR, BOOL, F16, STRUCT, U8]
    sizes = [1, 8, 4, 24, 2, 8, 1, 2, 3, 1]
    aligns = [1, 8, 4, 8, 2, 8, 1, 2, 1, 1]
    k = make_kernel(codes, sizes, aligns)
    assert c_offsets(sizes, aligns) == [0, 8, 16, 24, 48, 56, 64, 66, 68, 71]
    assert k._layout() == tuple(zip(codes, sizes, [0, 8, 16, 24, 48, 56, 64, 66, 68, 71]))
    k[1, 1](-1, 0.5, 7, bytes(range(24)), 3, None, True, 1.0, b"xyz", 255)
    call = k.backend.pop()
    assert [a - call.addrs[0] for a in call.addrs] == c_offsets(sizes, aligns)
    assert call.addrs[0] % 64 == 0
    assert call.params[3] == bytes(range(24)) and call.params[8] == b"xyz"


def test_random_layouts():
    rng = np.random.default_rng(4)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        codes = [int(c) for c in rng.choice(list(NATURAL) + [STRUCT], n)]
        aligns = [int(rng.choice([1, 2, 4, 8, 16])) if c == STRUCT else min(NATURAL[c], 8)
                  for c in codes]
        sizes = [int(rng.integers(1, 4)) * a if c == STRUCT else NATURAL[c]
                 for c, a in zip(codes, aligns)]
        k = make_kernel(codes, sizes, aligns)
        assert [row[2] for row in k._layout()] == c_offsets(sizes, aligns)


@pytest.mark.parametrize("codes,sizes,aligns,message", [
    ([17], [4], [4], "kind 17"), ([0], [4], [4], "kind 0"), ([I32], [4], [3], "alignment 3"),
    ([I32], [4], [128], "alignment 128"), ([16, 16], [4000, 200], [4, 4], "more than 4096 bytes"),
    ([I32], [4, 4], [4], "needs a name, size and alignment for each")])
def test_bad_kernel_description(codes, sizes, aligns, message):
    with pytest.raises(ql.LaunchValueError, match=message):
        make_kernel(codes, sizes, aligns)


def test_argument_count_and_keywords():
    k = make_kernel([I32, F32], names=["n", "alpha"])
    for args in [(), (1,), (1, 2.0, 3)]:
        with pytest.raises(ql.LaunchTypeError) as e:
            k[1, 1](*args)
        assert str(e.value) == f"kernel 'kern' takes 2 arguments ('n', 'alpha'), got {len(args)}"
    with pytest.raises(ql.LaunchTypeError, match=r"takes 1 argument \('x',\), got 0"):
        make_kernel([I32], names=["x"])[1, 1]()
    with pytest.raises(ql.LaunchTypeError) as e:
        k[1, 1](1, alpha=2.0)
    assert str(e.value) == ("kernel 'kern' takes its arguments by position, in the order "
                            "('n', 'alpha')")
    with pytest.raises(ql.LaunchTypeError, match="unexpected keyword 'alpha'"):
        k.launch(1, 1, 1, alpha=2.0)
    assert k.backend.calls == []


def test_uninitialised_and_reinitialised_core():
    with pytest.raises(ql.LaunchError, match="was not initialised"):
        _launch.KernelCore.__new__(_launch.KernelCore)[1, 1]
    with pytest.raises(RuntimeError, match="already initialised"):
        make_kernel([I32]).__init__()


# ----------------------------------------------------------- configuration

class CudaStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


@pytest.mark.parametrize("key,grid,block,shared,stream", [
    ((4, 256), (4, 1, 1), (256, 1, 1), 0, 0),
    (((4,), (256,)), (4, 1, 1), (256, 1, 1), 0, 0),
    (((3, 5), (8, 4)), (3, 5, 1), (8, 4, 1), 0, 0),
    (((3, 5, 7), (2, 4, 8)), (3, 5, 7), (2, 4, 8), 0, 0),
    ((2**31 - 1, 1), (2**31 - 1, 1, 1), (1, 1, 1), 0, 0),
    ((1, (1024, 1, 1), 49152), (1, 1, 1), (1024, 1, 1), 49152, 0),
    ((1, 1, 16, None), (1, 1, 1), (1, 1, 1), 16, 0),
    ((1, 1, 0, 0x1234), (1, 1, 1), (1, 1, 1), 0, 0x1234),
    ((1, 1, 0, CudaStream(0x5678)), (1, 1, 1), (1, 1, 1), 0, 0x5678),
    ((np.int64(6), np.uint16(32), np.int32(8)), (6, 1, 1), (32, 1, 1), 8, 0)])
def test_configurations_are_recorded(key, grid, block, shared, stream):
    k = make_kernel([I32])
    k[key](11)
    k.launch(*key[:2], 12, shared_mem=key[2] if len(key) > 2 else 0,
             stream=key[3] if len(key) > 3 else None)
    k.configure(*key)(13)
    for n in (13, 12, 11):
        call = k.backend.pop()
        assert (call.grid, call.block, call.shared, call.stream) == (grid, block, shared, stream)
        assert call.func == 0x1000 and call.params == (struct.pack("<i", n),)


def test_launchers_are_cached_per_config():
    k = make_kernel([I32])
    first = k[4, 256]
    assert k[4, 256] is first
    key = (int("100000"), int("300"))
    other = k[key]
    assert k[tuple([int("100000"), int("300")])] is other   # equal, not identical
    assert k[4, 256] is first and k[key] is other
    assert k[1, 1, 0, 5] is k[1, 1, 0, 5]  # an int handle is a value: cached


def test_stream_objects_are_resolved_at_each_subscript():
    """A stream object's handle can change (a closed ql.Stream reads as
    closed), so k[grid, block, shared, stream] never serves a stale one."""
    k = make_kernel([I32])
    s = CudaStream(7)
    first = k[1, 1, 0, s]
    assert first.__self__.stream is s
    first(1)
    assert k.backend.pop().stream == 7
    s.handle = 8
    k[1, 1, 0, s](1)
    assert k.backend.pop().stream == 8


def test_launcher_attributes():
    k = make_kernel([I32])
    s = CudaStream(9)
    run = k.configure((2, 3), 64, shared_mem=128, stream=s)
    assert (run.__self__.grid, run.__self__.block, run.__self__.shared_mem,
            run.__self__.stream) == ((2, 3, 1), (64, 1, 1), 128, s)
    launcher = run.__self__
    assert launcher.kernel is k and isinstance(launcher, ql.Launcher)
    assert run.__name__ == "kern" and "built-in method kern" in repr(run)
    assert repr(launcher) == "<Launcher kern[(2, 3, 1), (64, 1, 1), 128]>"
    assert k.configure(1, 1).__self__.stream is None
    assert k.configure(1, 1).__self__.shared_mem == 0
    run(5)
    assert k.backend.pop().stream == 9
    launcher(6)  # the Launcher itself is callable too
    assert k.backend.pop().stream == 9


LIM = "device cpu allows at most"


@pytest.mark.parametrize("key,exc,message", [
    ((0, 1), ql.LaunchValueError, "grid dimension x is 0; each dimension must be between 1"),
    ((1, (1, -2)), ql.LaunchValueError, "block dimension y is -2"),
    ((2**32, 1), ql.LaunchValueError, "grid dimension x is 4294967296"),
    (((1, 1, 1, 1), 1), ql.LaunchTypeError, "grid must be a positive int or a tuple of 1 to 3"),
    (((), 1), ql.LaunchTypeError, "grid must be a positive int"),
    ((1.0, 1), ql.LaunchTypeError, "grid must be a positive int"),
    ((1, (2, 2.0)), ql.LaunchTypeError, "block must be a positive int"),
    ((True, 1), ql.LaunchTypeError, "grid must be a positive int"),
    (([1], 1), ql.LaunchTypeError, "grid must be a positive int"),
    ((1, (32, 32, 2)), ql.LaunchValueError,
     f"block (32, 32, 2) has 2048 threads; {LIM} 1024 per block"),
    ((1, (1, 1, 65)), ql.LaunchValueError, f"block dimension z is 65; {LIM} (1024, 1024, 64)"),
    (((1, 65536), 1), ql.LaunchValueError, f"grid dimension y is 65536; {LIM} (2147483647,"),
    ((1, 1, 49153), ql.LaunchValueError, "shared_mem is 49153 bytes; device cpu allows 0 to 49152"),
    ((1, 1, -1), ql.LaunchValueError, "shared_mem is -1 bytes"),
    ((1, 1, 1.0), ql.LaunchTypeError, "shared_mem must be an int number of bytes, got float"),
    ((1, 1, 0, "s"), ql.LaunchTypeError, "stream must be None, a ql.Stream, an object with "
                                          "__cuda_stream__ or an int handle, got str"),
    ((1, 1, 0, 1.0), ql.LaunchTypeError, "stream must be None"),
    ((1,), ql.LaunchTypeError, "index with [grid, block]"),
    ((1, 2, 3, 4, 5), ql.LaunchTypeError, "index with [grid, block]")])
def test_configuration_errors(key, exc, message):
    k = make_kernel([I32])
    attempts = [lambda: k[key]]
    if 2 <= len(key) <= 4:
        attempts.append(lambda: k.configure(*key))
        attempts.append(lambda: k.launch(*key[:2], 1, shared_mem=key[2] if len(key) > 2 else 0,
                                         stream=key[3] if len(key) > 3 else None))
    for attempt in attempts:
        with pytest.raises(exc) as e:
            attempt()
        assert str(e.value).startswith("kernel 'kern': ") and message in str(e.value)
    with pytest.raises(ql.LaunchTypeError, match="index with"):
        k[1]
    assert k.backend.calls == []


def test_configure_argument_errors():
    k = make_kernel([I32])
    with pytest.raises(ql.LaunchTypeError, match="takes 2 to 4 positional arguments"):
        k.configure(1)
    with pytest.raises(ql.LaunchTypeError, match="unexpected or repeated keyword 'shared_mem'"):
        k.configure(1, 1, 0, shared_mem=5)
    with pytest.raises(ql.LaunchTypeError, match="needs a grid and a block"):
        k.launch(1)


def test_config_cache_is_bounded():
    k = make_kernel([I32])
    for g in range(1, 1001):
        k[g, 1](g)
    assert [c.grid[0] for c in k.backend.calls] == list(range(1, 1001))
    assert all(c.params[0] == struct.pack("<i", c.grid[0]) for c in k.backend.calls)
    k = make_kernel([I32], record=False)
    tracemalloc.start()
    try:
        for g in range(1, 2001):
            k[g, 1](g)
        before = tracemalloc.get_traced_memory()[0]
        for g in range(2001, 10001):
            k[g, 1](g)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 100_000, grown   # not 8000 more cached Launchers


# Regression (fixed): _launch_types.h core_subscript() looks keys up in the config dict by
# equality, and 1.0 == True == 1, so after k[1, 32] the subscripts k[1.0, 32],
# k[True, 32] and k[1, 32, 0.0] return the cached launcher instead of the
# LaunchTypeError they raise on a fresh kernel.
@pytest.mark.parametrize("good,bad", [((1, 32), (1.0, 32)), ((1, 32), (True, 32)),
                                      ((1, 32, 0), (1, 32, 0.0)),
                                      ((1, 32, 0, 1), (1, 32, 0, True))])
def test_cache_does_not_accept_equal_but_invalid_config(good, bad):
    k = make_kernel([I32])
    with pytest.raises(ql.LaunchTypeError):
        k[bad]
    k[good]
    with pytest.raises(ql.LaunchTypeError):
        k[bad]


# Regression (fixed): _launch_types.h parse_shared() maps an overflowing shared_mem to -1, so the
# message reports "-1 bytes"; parse_stream() uses PyLong_AsVoidPtr, which accepts
# negative ints and raises a bare OverflowError (no kernel name) above 2**64 - 1.
@pytest.mark.parametrize("key,shown", [((1, 1, 2**70), str(2**70)), ((1, 1, 0, -1), "-1"),
                                       ((1, 1, 0, 2**64), str(2**64))])
def test_out_of_range_shared_mem_and_stream(key, shown):
    k = make_kernel([I32])
    with pytest.raises((ql.LaunchValueError, ql.LaunchOverflowError)) as e:
        k[key]
    assert str(e.value).startswith("kernel 'kern'") and shown in str(e.value)


# ------------------------------------------------------- backend and errors

def test_error_hook_result_is_raised():
    seen = []

    class Failure(ql.LaunchError):
        pass

    def hook(kernel, status):
        seen.append((kernel, status))
        exc = Failure(f"backend status {status}")
        seen.append(exc)
        return exc

    k = make_kernel([I32], status=719, error_hook=hook)
    for launch in (lambda: k[1, 1](1), lambda: k.launch(1, 1, 1), lambda: k.configure(2, 2)(1)):
        with pytest.raises(Failure, match="backend status 719") as e:
            launch()
        assert e.value is seen[-1] and seen[-2] == (k, 719)
    assert len(k.backend.calls) == 3


def test_errors_pickle():
    k = make_kernel([I32, PTR, STRUCT], sizes=[4, 8, 12], aligns=[4, 8, 4])
    errors = []
    for args in [(2**40, None, bytes(12)), (1, 1.5, bytes(12)), (1, None, b"1"), (1,)]:
        try:
            k[1, 1](*args)
        except ql.LaunchError as e:
            errors.append(e)
    for key in [(0, 1), (1.5, 1)]:
        try:
            k[key]
        except ql.LaunchError as e:
            errors.append(e)
    assert len(errors) == 6
    for e in errors:
        e2 = pickle.loads(pickle.dumps(e))
        assert type(e2) is type(e) and str(e2) == str(e) and e2.args == e.args


# Regression (fixed): _launch_types.h core_init() trusts `sizes` for scalar and pointer kinds:
# an int64 parameter declared 4 bytes wide gets 8 bytes written into a 4-byte
# slot (over the next parameter, or past the 4096-byte parameter block).
def test_kernel_description_size_must_match_kind():
    with pytest.raises(ql.LaunchValueError):
        make_kernel([I64, I32], sizes=[4, 4], aligns=[4, 4])
    with pytest.raises(ql.LaunchValueError):
        make_kernel([STRUCT, PTR], sizes=[4095, 1], aligns=[1, 1])


# Regression (fixed): core_init() accepts any tuple as param_names, but the messages format its
# items with %U: a non-str name is read as if it were a str (garbage text seen,
# or a crash), so it runs in a subprocess.
def test_param_names_must_be_strings():
    code = ("import ctypes, quicklaunch as ql\nfrom quicklaunch import _launch\n"
            "try:\n    _launch.KernelCore(name='k', param_names=(1,), codes=bytes([17]), "
            "sizes=[4], aligns=[4], launch=1, func=0, device_id=0, device_name='cpu', "
            "host_memory=True, inline_threads=0, max_block=(1,1,1), max_grid=(1,1,1), "
            "max_threads=1, max_shared=0, error_hook=print)\n"
            "except TypeError as e:\n    print('TypeError')\n"
            "except ValueError as e:\n    print('ValueError', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": ":".join(sys.path),  # and .ci/sanitizers' runtime
                            **{k: v for k, v in os.environ.items()
                               if k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}},
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "TypeError", (r.stdout, r.stderr)


# ------------------------------------------------------ leaks, GC, threads

def test_no_leak_per_call():
    k = make_kernel([PTR, I32, F32, CPTR, U64, STRUCT, BOOL, F16, I64],
                    sizes=[8, 4, 4, 8, 8, 12, 1, 2, 8], record=False)
    a, n, alpha = np.zeros(16, np.float32), 123456, 2.5
    big, s, ni = 2**63 + 5, np.zeros(1, S12)[0], np.int64(-10**12)  # ni: a new int per call
    args = (a, n, alpha, None, big, s, True, 0.5, ni)
    failing = ([(a, 2**40, alpha, None, big, s, True, 0.5, ni)] * 5000 + [args[:3]] * 5000 +
               [(a, n, alpha, None, big, b"", True, 0.5, ni)] * 5000)
    run = k[(8, 2), 128]
    for _ in range(1000):
        run(*args)
    counts = [sys.getrefcount(x) for x in args]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200_000):
            run(*args)
        for fail in failing:
            try:
                run(*fail)
            except ql.LaunchError:
                pass
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(x) for x in args] == counts
    assert after - before < 16384, after - before


def test_kernel_with_cached_launchers_is_collected():
    k = make_kernel([I32])
    launchers = [k[1, 1], k[(2, 2), 4, 0, CudaStream(1)], k.configure(3, 3)]
    k.self_cycle = k
    ref = weakref.ref(k)
    held = launchers.pop()
    del k, launchers
    gc.collect()
    assert ref() is not None           # a live Launcher keeps its kernel
    held(4)
    assert held.__self__.kernel.backend.pop().params[0] == struct.pack("<i", 4)
    del held
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("inline_threads", [0, 2**40], ids=["gil-released", "gil-held"])
def test_threads_share_a_launcher(inline_threads):
    k = make_kernel([I32, I64, F64], inline_threads=inline_threads)
    run, per_thread, start = k[(4, 2), 64], 3000, threading.Barrier(4)

    def work(t):
        start.wait()
        for i in range(per_thread):
            run(t, t * 10**12 + i, i + 0.5)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    got = sorted(tuple(struct.unpack("<i", c.params[0]) + struct.unpack("<q", c.params[1]) +
                       struct.unpack("<d", c.params[2])) for c in k.backend.calls)
    assert got == sorted((t, t * 10**12 + i, i + 0.5) for t in range(4) for i in range(per_thread))
    assert all(c.grid == (4, 2, 1) and c.block == (64, 1, 1) for c in k.backend.calls)


class MutableIndex:
    """An __index__ object whose value can change between launches."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


def test_direct_launch_reuses_only_identical_immutable_configs():
    k = make_kernel([I32])
    for grid, block in [(3, 32), (3, 32), (4, 32), ((2, 2), (8, 4)), ((2, 2), (8, 4)), (3, 32)]:
        k.launch(grid, block, 1)
        call = k.backend.pop()
        g = (grid,) if isinstance(grid, int) else grid
        b = (block,) if isinstance(block, int) else block
        assert call.grid == g + (1,) * (3 - len(g)) and call.block == b + (1,) * (3 - len(b))
    g = MutableIndex(5)
    k.launch(g, 32, 1)
    assert k.backend.pop().grid == (5, 1, 1)
    g.v = 6
    k.launch(g, 32, 1)
    assert k.backend.pop().grid == (6, 1, 1)
    g.v = 0
    with pytest.raises(ql.LaunchValueError, match="grid dimension x is 0"):
        k.launch(g, 32, 1)
    k.launch(3, 32, 1, shared_mem=64)  # the remembered dims with a new shared size
    assert k.backend.pop().shared == 64
    with pytest.raises(ql.LaunchValueError, match="shared_mem is 1048576"):
        k.launch(3, 32, 1, shared_mem=1 << 20)

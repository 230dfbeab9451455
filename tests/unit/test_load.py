"""ql.load's readers without a device: what a binary looks like, the cubin
and fatbin readers, signatures and their check against the binary's sizes."""
import struct

import pytest

from quicklaunch import loading
from quicklaunch.backends.cuda import binary, cubin
from quicklaunch.backends.gpu.binary import Row, rows_from_offsets
from tests.cuda_fake.minicubin import make_cubin

PTX = (b".version 8.0\n.target sm_90\n.address_size 64\n"
       b".visible .entry k(\n .param .f64 k_param_0,\n .param .align 8 .b8 k_param_1[16]\n)\n"
       b"{ ret; }\n")


def fatbin(entries):
    body = b""
    for kind, sm, payload in entries:
        padded = payload + b"\0" * (-len(payload) % 8)
        head = struct.pack("<HHIQIIIIIIQ", kind, 0x101, 64, len(padded), 0, len(payload), 0, sm,
                           64, 0, 0)
        body += head.ljust(64, b"\0") + padded
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_sniff():
    assert loading._sniff(make_cubin({"k": []})) == "cubin"
    assert loading._sniff(PTX) == "ptx"
    assert loading._sniff(fatbin([(1, 90, PTX)])) == "fatbin"
    assert loading._sniff(make_cubin({"k": []}, machine=224)) == "hsaco"
    assert loading._sniff(make_cubin({"k": []}, machine=62)) == "elf:62"
    assert loading._sniff(b"__CLANG_OFFLOAD_BUNDLE__....") == "hsaco"
    assert loading._sniff(b"hello world") is None


def test_cubin_reader():
    data = make_cubin({"a": [(4, 0), (8, 8)], "b": []}, sm=86)
    assert cubin.kernels(data) == {"a": (cubin.CubinParam(0, 4), cubin.CubinParam(8, 8)),
                                   "b": ()}
    assert cubin.arch(data) == "sm_86"
    big = make_cubin({"v": [(5000, 0)]}, v2=True)
    assert cubin.kernels(big) == {"v": (cubin.CubinParam(0, 5000),)}
    with pytest.raises(cubin.CubinError, match="truncated"):
        cubin.kernels(data[:len(data) - 100])
    with pytest.raises(cubin.CubinError, match="not a cubin"):
        cubin.kernels(make_cubin({}, machine=62))


def test_fatbin_reader_and_rows():
    cub = make_cubin({"a": [(4, 0), (8, 8)]})
    fb = fatbin([(2, 90, cub), (1, 90, PTX)])
    assert [(k, a, p) for k, a, p in cubin.fatbin_entries(fb)] == [("cubin", "sm_90", cub),
                                                                   ("ptx", "sm_90", PTX)]
    rows, image = binary.read(fb, "fatbin")
    assert image == fb and list(rows) == ["k"]   # the PTX is preferred: it has types
    assert [(r.size, r.align, r.kind) for r in rows["k"]] == [(8, 8, "F64"), (16, 8, "STRUCT")]
    with pytest.raises(cubin.CubinError, match="truncated"):
        binary.read(fb[:40], "fatbin")


def test_rows_from_offsets_keep_the_layout():
    rows = rows_from_offsets([(0, 4), (8, 8, True), (16, 1), (20, 4), (32, 16)])
    assert [(r.size, r.align, r.kind) for r in rows] == [
        (4, 4, "STRUCT"), (8, 8, "PTR"), (1, 1, "STRUCT"), (4, 4, "STRUCT"), (16, 16, "STRUCT")]


def test_signatures():
    d = loading._parse_signature('extern "C" __global__ void saxpy(float a, const float* x, '
                                 'float* __restrict__ y, int n)')
    assert d.name == "saxpy" and [p.ctype for p in d.params][:2] == ["float", "const float *"]
    assert loading._parse_signature("f(int, double)").params[1].name == "arg1"
    row4, row8 = Row(4, 4, "STRUCT", "4 bytes"), Row(8, 8, "PTR", "8 bytes")
    assert loading._typed("float", row4, "p") == ("F32", 4, 4)
    assert loading._typed("const float *", row8, "p") == ("PTR_CONST", 8, 8)
    assert loading._typed("float *const", row8, "p") == ("PTR", 8, 8)
    assert loading._typed("unsigned int", row4, "p") == ("U32", 4, 4)
    assert loading._typed("Pair", row8, "p") == ("STRUCT", 8, 8)   # any struct: the binary's size
    with pytest.raises(ValueError, match="'double' is 8 bytes, but the binary's parameter is 4"):
        loading._typed("double", row4, "p")
    with pytest.raises(ValueError, match="reference"):
        loading._typed("float &", row8, "p")
    with pytest.raises(ValueError, match="cannot be read|one kernel"):
        loading._parse_signature("not a signature(")

"""The C host stub (quicklaunch/host_stub.py, issue 20) on the HIP device,
against the fake HIP runtime: hipModuleLaunchKernel gets the same parameter
bytes from the stub as from the fast path, for every parameter kind; a stub
launch inside a graph recording is recorded; plain gdb breaks on the stub of
a plain and of a template kernel with the launch's arguments."""
import os
import shutil

import numpy as np
import pytest

import quicklaunch as ql

from ..cuda_fake.test_host_stub_fake import SCRIPT, check_gdb_text, run_gdb
from ..emulation import skip_gdb
from .test_fake_runtime import expect, fake, fake_lib, last  # noqa: F401 - fixtures

KINDS = r"""
struct Affine { float scale; int shift; double bias; };
extern "C" __global__ void every(signed char i8, short i16, int i32, long long i64,
                                 unsigned char u8, unsigned short u16, unsigned u32,
                                 unsigned long long u64, __half h, float f, double d, bool b,
                                 const float *cp, int *p, Affine s, float4 v, double2 w,
                                 char3 c3) {}
template <typename T> __global__ void add(T *x, T v, int n) {}
namespace ns { template <typename T> __global__ void scale(T *x, T a) {} }
"""
EXPRS = ["add<float>", "add<double>", "ns::scale<int>"]


def _record(rec) -> tuple:
    return (rec.name, tuple(rec.grid), tuple(rec.block), rec.shared, rec.stream, rec.nparams,
            bytes(rec.bytes))


def test_stub_and_fast_path_hand_over_the_same_parameter_block(fake):
    gpu = ql.device("hip")
    fast = ql.compile(KINDS, device=gpu, name_expressions=EXPRS)
    stub = ql.compile(KINDS, device=gpu, name_expressions=EXPRS, stub=True)
    assert stub._stub_library is not None
    affine = np.array([(0.5, -3, 2.25)], dtype=[("scale", "<f4"), ("shift", "<i4"),
                                             ("bias", "<f8")])[0]
    xs = ql.zeros(4, np.float32, device=gpu)
    xd = ql.zeros(4, np.float64, device=gpu)
    ys = ql.zeros(4, np.int32, device=gpu)
    every = (-7, -1234, -2**31, -2**40, 250, 65535, 2**32 - 1, 2**64 - 1, 1.5, 2.5, -3.25,
             True, xs, ys, affine, np.array([1, 2, 3, 4], np.float32).tobytes(),
             np.array([5, 6], np.float64).tobytes(), b"abc")
    for name, args in [("every", every), ("add<float>", (xs, 2.5, 4)),
                       ("add<double>", (xd, -1e300, 3)), ("ns::scale<int>", (ys, -5))]:
        got = []
        for mod in (fast, stub):
            k = mod.get_kernel(name)
            expect(fake, k)
            k[(2, 3), (32, 2), 64](*args)
            got.append(_record(last(fake)))
            k.configure(4, 8)(*args)
            got.append(_record(last(fake)))
        assert any(got[0][-1]), name
        assert got[:2] == got[2:], name


def test_a_stub_launch_inside_a_graph_is_recorded(fake):
    gpu = ql.device("hip")
    mod = ql.compile(KINDS, device=gpu, name_expressions=EXPRS, stub=True)
    x = ql.zeros(4, np.float32, device=gpu)
    k = mod.get_kernel("add<float>")
    expect(fake, k)
    before = _record(last(fake))
    # HIP graphs are not built yet: the launch is recorded (it does not run),
    # and building the graph fails as it does without the stub
    with pytest.raises(ql.LaunchError, match="graphs on HIP are not built"):
        with ql.graph(device=gpu):
            k[1, 4](x, 1.0, 4)
            assert _record(last(fake)) == before      # recorded, not run
    assert _record(last(fake)) == before


@skip_gdb(shutil.which("gdb"))
def test_plain_gdb_breaks_on_the_stub_of_a_gpu_kernel(fake, tmp_path):
    text = run_gdb(SCRIPT.replace("@DEVICE@", "hip"), tmp_path,
                   {"QUICKLAUNCH_LIBHIP": os.environ["QUICKLAUNCH_LIBHIP"]})
    check_gdb_text(text)

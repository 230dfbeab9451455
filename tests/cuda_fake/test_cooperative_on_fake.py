"""Cooperative launches on the CUDA device, against the fake driver:
k.configure(..., cooperative=True) goes to cuLaunchCooperativeKernel with the
same parameter bytes as any launch, after the co-residency check
(cuOccupancyMaxActiveBlocksPerMultiprocessor x the multiprocessor count),
which refuses a larger grid with those numbers before the driver is asked."""
import struct

import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch

SOURCE = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void two_phase(const float *in, float *mid, float *out, int n) {
    cg::grid_group grid = cg::this_grid();
    const int i = (int)grid.thread_rank();
    if (i < n) mid[i] = 2.0f * in[i];
    grid.sync();
    if (i < n) out[i] = mid[(i + blockDim.x) % n];
}
"""
SMS = 132   # the fake's CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT


@pytest.fixture
def mod(ql_fake):
    return ql.compile(SOURCE, device=ql.device("cuda"))


def args(n=1024):
    dev = ql.device("cuda")
    x = ql.asarray(np.arange(n, dtype=np.float32), device=dev)
    mid = ql.zeros(n, np.float32, device=dev)
    out = ql.zeros(n, np.float32, device=dev)
    return x, mid, out, n


def test_cooperative_launch_calls_the_cooperative_entry(mod, ql_fake):
    x, mid, out, n = args()
    mod.two_phase.configure(8, 128, 64, cooperative=True)(x, mid, out, n)
    rec = last_launch(ql_fake)
    assert ql_fake.fake_cuda_launch_cooperative(0) == 1
    assert rec["name"] == "two_phase" and rec["grid"] == (8, 1, 1)
    assert rec["block"] == (128, 1, 1) and rec["shared"] == 64 and rec["stream"] is None
    assert rec["params"][:28] == struct.pack("<QQQi", x.ptr, mid.ptr, out.ptr, n)
    # a 2-D grid; a plain launch still goes to cuLaunchKernel
    mod.two_phase.configure((2, 2), (32, 2), cooperative=True)(x, mid, out, n)
    assert ql_fake.fake_cuda_launch_cooperative(0) == 1
    assert last_launch(ql_fake)["grid"] == (2, 2, 1)
    mod.two_phase[8, 128](x, mid, out, n)
    assert ql_fake.fake_cuda_launch_cooperative(0) == 0


def test_cooperative_launch_on_a_stream(mod, ql_fake):
    s = ql.Stream(ql.device("cuda"))
    mod.two_phase.configure(4, 256, 0, s, cooperative=True)(*args())
    rec = last_launch(ql_fake)
    assert ql_fake.fake_cuda_launch_cooperative(0) == 1 and rec["stream"] == s.handle


def test_grid_that_cannot_be_co_resident_is_refused(mod, ql_fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_OCCUPANCY", "2")
    before = ql_fake.fake_cuda_launch_count()
    with pytest.raises(ql.LaunchError, match=rf"a cooperative launch of {2 * SMS + 1} blocks of "
                       rf"256 threads \(0 bytes of dynamic shared memory\) cannot be "
                       rf"co-resident on .*: at most 2 such blocks fit on a multiprocessor "
                       rf"\(cuOccupancyMaxActiveBlocksPerMultiprocessor\) x {SMS} "
                       rf"multiprocessors = {2 * SMS} blocks"):
        mod.two_phase.configure(2 * SMS + 1, 256, cooperative=True)(*args())
    assert ql_fake.fake_cuda_launch_count() == before   # the driver was never asked
    mod.two_phase.configure(2 * SMS, 256, cooperative=True)(*args())
    assert ql_fake.fake_cuda_launch_cooperative(0) == 1
    assert last_launch(ql_fake)["grid"] == (2 * SMS, 1, 1)
    # the default occupancy of the fake: 2048 threads an SM / 1024 = 2 blocks
    monkeypatch.delenv("FAKE_CUDA_OCCUPANCY")
    with pytest.raises(ql.LaunchError, match=rf"at most 2 such blocks .* = {2 * SMS} blocks"):
        mod.two_phase.configure(2 * SMS + 1, 1024, cooperative=True)(*args())


def test_a_device_without_cooperative_launches(mod, ql_fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_NO_COOPERATIVE", "1")
    with pytest.raises(ql.LaunchError, match=r"does not support cooperative launches"):
        mod.two_phase.configure(1, 32, cooperative=True)(*args())


def test_the_driver_refusing_is_a_launch_error(mod, ql_fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_FAIL_LAUNCH", "720")
    with pytest.raises(ql.LaunchError, match=r"cooperative launch of kernel 'two_phase' "
                       r"failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE \(720\)"):
        mod.two_phase.configure(1, 32, cooperative=True)(*args())

"""Kernel attributes and occupancy on the CPU device (quicklaunch.attributes):
the values that mean something there, None with the reason for the rest."""
import pytest

import quicklaunch as ql

SRC = r"""
extern "C" __global__ void fill(int* x) { x[threadIdx.x] = 1; }
"""


@pytest.fixture(scope="module")
def k(cpu):
    return ql.compile(SRC, cpu).fill


def test_attributes_on_cpu(k, cpu):
    a = k.attributes
    assert a["max_threads_per_block"] == 1024 == a.max_threads_per_block
    assert a["max_dynamic_shared_size_bytes"] == cpu.limits.max_shared_per_block
    for name in ("num_regs", "shared_size_bytes", "local_size_bytes", "const_size_bytes",
                 "ptx_version", "binary_version"):
        assert a[name] is None
        assert "not applicable on the CPU device" in a.not_applicable[name]
    assert "max_threads_per_block" not in a.not_applicable
    # what the compiler said is kept beside them
    assert a["tier"] == k.tier and "tier_reason" in a
    assert dict(a)["num_regs"] is None and len(a) == len(dict(a))
    with pytest.raises(AttributeError, match="num_regz"):
        _ = a.num_regz
    with pytest.raises(TypeError):
        a["num_regs"] = 3


def test_occupancy_on_cpu(k, cpu):
    assert k.max_active_blocks_per_sm(256) == 1
    assert k.max_active_blocks_per_sm((32, 32), 1024) == 1
    assert k.max_active_blocks_per_sm(2048) == 0
    assert k.max_active_blocks_per_sm(32, cpu.limits.max_shared_per_block + 1) == 0
    with pytest.raises(ValueError):
        k.max_active_blocks_per_sm(0)
    with pytest.raises(TypeError):
        k.max_active_blocks_per_sm("32")

"""Kernel attributes and occupancy on the fake HIP runtime (hipFuncGetAttribute,
hipModuleOccupancyMaxActiveBlocksPerMultiprocessor)."""
import quicklaunch as ql

from .test_fake_runtime import fake, fake_lib  # noqa: F401 - fixtures

SRC = 'extern "C" __global__ void put(int *x) { x[threadIdx.x] = 7; }'


def test_attributes_and_occupancy_on_fake_hip(fake):  # noqa: F811
    k = ql.compile(SRC, device="hip").put
    a = k.attributes
    assert a["max_threads_per_block"] == 1024 and a["num_regs"] == 24
    assert a["max_dynamic_shared_size_bytes"] == 65536
    assert a["shared_size_bytes"] == 0 and a.not_applicable == {}
    assert k.max_active_blocks_per_sm(256) == 8
    assert k.max_active_blocks_per_sm(64, 65537) == 0


def test_compile_log_on_hip(fake):  # noqa: F811
    import uuid

    import pytest
    src = f"#warning quicklaunch-test-warning {uuid.uuid4().hex}\n{SRC}"
    with pytest.warns(ql.CompileLogWarning, match="quicklaunch-test-warning"):
        mod = ql.compile(src, device="hip")
    assert "quicklaunch-test-warning" in mod.compile_log

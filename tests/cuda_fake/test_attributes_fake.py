"""Kernel attributes, occupancy and dynamic shared memory above 48 KiB on the
fake CUDA driver (cuFuncGetAttribute, cuOccupancyMaxActiveBlocksPerMultiprocessor,
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set at load)."""
import numpy as np
import pytest

import quicklaunch as ql

from .api import last_launch

SRC = 'extern "C" __global__ void put(int *x) { x[threadIdx.x] = 7; }'
OPTIN = 232448   # the fake's CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN


def test_attributes_from_the_driver(ql_fake):
    k = ql.compile(SRC, device="cuda").put
    a = k.attributes
    assert a["max_threads_per_block"] == 1024
    assert a.num_regs == 32                      # the fake's answer
    assert a["ptx_version"] == a["binary_version"] == 90   # compute capability 9.0
    assert a["shared_size_bytes"] == a["local_size_bytes"] == a["const_size_bytes"] == 0
    assert a["max_dynamic_shared_size_bytes"] == OPTIN   # opted in at load
    assert a.not_applicable == {}


def test_occupancy_from_the_driver(ql_fake, monkeypatch):
    k = ql.compile(SRC, device="cuda").put
    assert k.max_active_blocks_per_sm(256) == 8          # 2048 / 256
    assert k.max_active_blocks_per_sm((16, 16), 4096) == 8
    assert k.max_active_blocks_per_sm(32) == 32
    assert k.max_active_blocks_per_sm(64, OPTIN + 1) == 0
    assert k.max_active_blocks_per_sm(2048) == 0          # over max_threads_per_block
    monkeypatch.setenv("FAKE_CUDA_OCCUPANCY", "3")
    assert k.max_active_blocks_per_sm(128) == 3


def test_dynamic_shared_above_48k(ql_fake):
    cu = ql_fake
    k = ql.compile(SRC, device="cuda").put
    x = ql.zeros(32, np.int32, device="cuda")
    k[1, 32, 100 * 1024](x)                               # the driver accepts it
    ql.device("cuda").synchronize()
    assert last_launch(cu)["shared"] == 100 * 1024
    with pytest.raises(ql.LaunchError, match=f"shared_mem is {OPTIN + 1} bytes; device "
                                             f"cuda:0 allows 0 to {OPTIN}"):
        k[1, 32, OPTIN + 1](x)


def test_attributes_are_read_on_first_use(ql_fake, monkeypatch):
    from quicklaunch.backends.cuda.device import CudaDevice
    calls = []
    real = CudaDevice.function_attribute
    monkeypatch.setattr(CudaDevice, "function_attribute",
                        lambda self, fn, attr: calls.append(attr) or real(self, fn, attr))
    k = ql.compile(SRC + " // lazily", device="cuda").put
    assert k.attributes.get("tier") is None and calls == []   # compile asked nothing
    assert k.attributes["num_regs"] == 32 and len(calls) == 8
    assert k.attributes["local_size_bytes"] == 0 and len(calls) == 8   # read once


def test_compile_log_on_cuda(ql_fake):
    import uuid
    src = f"#warning quicklaunch-test-warning {uuid.uuid4().hex}\n{SRC}"
    with pytest.warns(ql.CompileLogWarning, match="quicklaunch-test-warning"):
        mod = ql.compile(src, device="cuda")
    assert "quicklaunch-test-warning" in mod.compile_log
    with pytest.warns(ql.CompileLogWarning):   # a cache hit keeps the log
        assert "quicklaunch-test-warning" in ql.compile(src, device="cuda").compile_log


def test_static_shared_leaves_less_dynamic(ql_fake, monkeypatch):
    monkeypatch.setenv("FAKE_CUDA_STATIC_SMEM", "16384")
    k = ql.compile(SRC + " // static smem", device="cuda").put
    assert k.attributes["shared_size_bytes"] == 16384
    assert k.attributes["max_dynamic_shared_size_bytes"] == OPTIN - 16384   # granted at load
    x = ql.zeros(32, np.int32, device="cuda")
    k[1, 32, OPTIN - 16384](x)
    with pytest.raises(ql.LaunchError, match=f"more than {OPTIN - 16384} bytes of dynamic "
                                             f"shared memory, that is why: the kernel's 16384"):
        k[1, 32, OPTIN](x)

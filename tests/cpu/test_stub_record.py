"""The host stub's launch record (_launch_stub_tls.h): read through the
thread pointer at the launcher's initial-exec offset, per thread, and the
stub library's own thread-local record where no offset is given."""
import platform
import threading
import uuid

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import _launch

SOURCE = r"""
extern "C" __global__ void mark(float a, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * i + gridDim.x;
}
"""


def check(mod, a, grid, block, n):
    y = np.full(n, np.nan, np.float32)
    mod.mark[grid, block](a, y, n)
    i = np.arange(n, dtype=np.float32)
    want = np.where(i < grid * block, np.float32(a) * i + grid, np.nan).astype(np.float32)
    np.testing.assert_array_equal(y, want)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64", "aarch64", "arm64"),
                    reason="the thread pointer is read on x86-64 and aarch64 only")
def test_the_launchers_record_is_used():
    assert _launch._stub_tls_offset() != 0


def test_threads_each_launch_their_own_configuration(cpu):
    mod = ql.compile(SOURCE, device=cpu, stub=True)
    failures = []

    def worker(k):
        try:
            for r in range(60):
                grid, block = 1 + (k * 7 + r) % 5, (32, 64, 256)[(k + r) % 3]
                # large launches release the GIL: the others launch meanwhile
                n = grid * block + (200_000 if r % 4 == 0 else 13)
                check(mod, 0.5 + k, grid, block, n)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append((k, exc))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_without_an_offset_the_stub_keeps_its_own_record(cpu, monkeypatch):
    monkeypatch.setattr(_launch, "_stub_tls_offset", lambda: 0)
    # a source of its own: a stub library loaded now, given offset 0
    mod = ql.compile(SOURCE + f"// {uuid.uuid4().hex}\n", device=cpu, stub=True)
    for grid, block, n in ((1, 1, 1), (3, 32, 100), (2, 256, 700)):
        check(mod, 1.5, grid, block, n)

"""torch tensors read with no call at all: the TensorImpl fields that
_torch_abi found on its probes, used only for tensors whose dispatch key set
the shim accepted first. Each test poisons the output, launches, and checks
against torch's own arithmetic; each refusal must still name the fix."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import _launch

from .conftest import TYPES

N = 1000


@pytest.fixture(scope="module")
def direct(torch, cpu_module):
    from quicklaunch.frameworks import _torch_abi
    x, y = torch.ones(N), torch.zeros(N)
    cpu_module.saxpy[4, 256](2.0, x, y, N)
    found = _torch_abi.registered and _torch_abi._layout(torch, object.__basicsize__)
    if not found and not torch.__version__.startswith("2.13."):   # the frameworks extra's pin
        pytest.skip(f"torch {torch.__version__}'s TensorImpl layout was not found; the shim "
                    "serves alone")
    assert found, "torch 2.13's TensorImpl layout must be found on the probes"
    keys = torch._C._dispatch_keys(x).raw_repr()
    assert keys in _launch._torch_direct_keys()
    return cpu_module


def _rand(torch, n, dtype=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, generator=g, dtype=torch.float32) * 8 - 4


def test_layout_matches_torch_on_fresh_tensors(torch, direct):
    """Every field the probe found, checked on tensors the probe never saw."""
    from quicklaunch.frameworks import _torch_abi
    storage, data, soff, numel, dtype, device, flags, mask, keys = \
        _torch_abi._layout(torch, object.__basicsize__)
    import ctypes
    for t in (torch.arange(100, dtype=torch.int32)[17:], torch.zeros(3, 5, 7).permute(2, 0, 1),
              torch.ones(1, dtype=torch.float64), torch.rand(4, 4)[1:3, 1:3]):
        b = ctypes.string_at(t._cdata, 256)
        assert int.from_bytes(b[soff:soff + 8], "little") == t.storage_offset()
        assert int.from_bytes(b[numel:numel + 8], "little") == t.numel()
        assert bool(b[flags] & mask) == t.is_contiguous()
        assert int.from_bytes(b[keys:keys + 8], "little") == torch._C._dispatch_keys(t).raw_repr()
        s = int.from_bytes(b[storage:storage + 8], "little")
        assert int.from_bytes(ctypes.string_at(s + data, 8), "little") == \
            t.untyped_storage().data_ptr()


@pytest.mark.parametrize("start", [0, 1, 31, 257])
def test_views_with_a_storage_offset(torch, direct, start):
    n = 300
    x = _rand(torch, n + start, seed=start)
    y = torch.full((n + start,), float("nan"))
    direct.scale[(n + 255) // 256, 256](x[start:], y[start:], 3.0, n)
    assert torch.equal(y[start:], x[start:] * 3.0)
    assert torch.isnan(y[:start]).all()


@pytest.mark.parametrize("ctype", ["__half", "signed char", "long long", "bool", "unsigned short"])
def test_every_width_at_an_offset(torch, direct, ctype):
    """The element size scales the storage offset: a wrong size would copy
    from the wrong place."""
    i = list(TYPES).index(ctype)
    dt = getattr(torch, TYPES[ctype])
    n, start = 37, 5
    x = (torch.arange(n + start) % 5 + 1).to(dt)
    y = torch.zeros(n + start, dtype=dt)
    direct[f"copy_{i}"][1, 64](x[start:], y[start:], n)
    assert torch.equal(y[start:], x[start:]) and not y[:start].any()


def test_storage_swapped_under_the_same_tensor(torch, direct):
    """set_ and resize_ move a tensor's data with the Python object kept: the
    pointer is read at every launch, never remembered."""
    x = _rand(torch, N, seed=3)
    y = torch.zeros(N)
    direct.scale[4, 256](x, y, 2.0, N)
    old = y.clone()
    fresh = torch.full((N,), -1.0)
    y.set_(fresh.untyped_storage(), 0, (N,))
    direct.scale[4, 256](x, y, 4.0, N)
    assert torch.equal(fresh, x * 4.0) and torch.equal(old, x * 2.0)
    y.resize_(4 * N)
    y.fill_(7.0)
    direct.scale[4, 256](x, y, 1.0, N)
    assert torch.equal(y[:N], x) and (y[N:] == 7.0).all()


def test_inference_mode_tensors(torch, direct):
    with torch.inference_mode():
        x, y = _rand(torch, N, seed=4), torch.zeros(N)
        for _ in range(2):   # the first through the shim, the second direct
            y.zero_()
            direct.scale[4, 256](x, y, -1.5, N)
            assert torch.equal(y, x * -1.5)


def test_empty_tensor_is_a_null_pointer(torch, direct):
    """data_ptr() of an empty tensor is NULL; so is the launch's pointer."""
    y = torch.zeros(10)[10:]
    direct.scale[1, 32](torch.zeros(0), y, 1.0, 0)   # n = 0: nothing is touched


def test_refusals_after_the_key_set_is_known(torch, direct):
    x = torch.ones(N)
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'scale', parameter 2 'y'.*not contiguous"):
        direct.scale[4, 256](x, torch.zeros(2 * N)[::2], 1.0, N)
    with pytest.raises(ql.LaunchTypeError, match=r"scale.*'y'"):
        direct.scale[4, 256](x, torch.zeros(N, dtype=torch.float64), 1.0, N)
    with pytest.raises(ql.LaunchValueError, match=r"'y': the Tensor lives on meta"):
        direct.scale[4, 256](x, torch.zeros(N, device="meta"), 1.0, N)
    sparse = torch.zeros(N).to_sparse()
    with pytest.raises(ql.LaunchError, match=r"scale.*'y'"):
        direct.scale[4, 256](x, sparse, 1.0, N)
    y = torch.zeros(N)   # and a good launch still works after them
    direct.scale[4, 256](x, y, 5.0, N)
    assert (y == 5.0).all()


def test_transposed_then_contiguous(torch, direct):
    a = torch.from_numpy(np.random.default_rng(5).standard_normal((16, 24)).astype(np.float32))
    y = torch.zeros(16 * 24)
    with pytest.raises(ql.LaunchValueError, match="not contiguous"):
        direct.scale[2, 256](a.t(), y, 1.0, a.numel())
    direct.scale[2, 256](a.t().contiguous(), y, 1.0, a.numel())
    assert torch.equal(y.view(24, 16), a.t())

"""torch tensors as kernel arguments on the CPU device, ql.torch.launcher
and ql.torch.op (eager, torch.compile(fullgraph=True), mutation)."""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import TYPES

N = 1000


@pytest.mark.parametrize("i,ctype", list(enumerate(TYPES)), ids=list(TYPES))
def test_every_dtype_the_kernel_takes(torch, cpu_module, i, ctype):
    dt = getattr(torch, TYPES[ctype])
    x = (torch.arange(N) % 7).to(dt)
    y = torch.zeros(N, dtype=dt)
    cpu_module[f"copy_{i}"][(N + 255) // 256, 256](x, y, N)
    assert torch.equal(x, y)
    wrong = torch.float32 if dt != torch.float32 else torch.int32
    hint = fr"x\.to\(torch\.{TYPES[ctype]}\)"   # torch's spelling of the fix
    with pytest.raises(ql.LaunchTypeError, match=fr"copy_{i}.*'y'.*{hint}"):
        cpu_module[f"copy_{i}"][(N + 255) // 256, 256](x, torch.zeros(N, dtype=wrong), N)


def test_tensor_is_read_at_c_speed(torch, cpu_module):
    """The first tensor a launcher meets registers torch's C accessors
    (checked on probe tensors); they agree with data_ptr() from then on."""
    from quicklaunch.frameworks import _torch_abi
    x, y = torch.ones(N), torch.zeros(N)
    cpu_module.saxpy[4, 256](2.0, x, y, N)
    assert _torch_abi.registered
    # a view with a storage offset: the pointer is the view's
    y2 = torch.zeros(2 * N)
    cpu_module.saxpy[4, 256](2.0, x, y2[N:], N)
    assert torch.all(y2[:N] == 0) and torch.all(y2[N:] == 2)
    # a subclass (Parameter) and a tensor that requires grad
    p = torch.nn.Parameter(torch.zeros(N))
    cpu_module.saxpy[4, 256](1.0, x.requires_grad_(False), p.data, N)
    cpu_module.saxpy[4, 256](1.0, x, p, N)
    assert torch.all(p.detach() == 2)


def test_non_contiguous_refused(torch, cpu_module):
    y = torch.zeros(2 * N)[::2]
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'saxpy', parameter 3 'y'.*not "
                       r"contiguous"):
        cpu_module.saxpy[4, 256](2.0, torch.ones(N), y, N)


def test_wrong_device_names_both(torch, cpu_module):
    y = torch.zeros(N, device="meta")
    with pytest.raises(ql.LaunchValueError, match=r"kernel 'saxpy', parameter 3 'y': the Tensor "
                       r"lives on meta, the kernel on cpu"):
        cpu_module.saxpy[4, 256](2.0, torch.ones(N), y, N)


def test_dlpack_exporter(cpu_module):
    class Exporter:  # only __dlpack__ / __dlpack_device__: no buffer, no data_ptr
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    x = np.ones(N, np.float32)
    y = np.zeros(N, np.float32)
    cpu_module.saxpy[4, 256](3.0, Exporter(x), Exporter(y), N)
    assert np.all(y == 3)
    with pytest.raises(ql.LaunchTypeError, match="'y'"):
        cpu_module.saxpy[4, 256](3.0, x, Exporter(np.zeros(N)), N)  # float64


def test_launcher_on_torchs_stream(torch, cpu_module):
    run = ql.torch.launcher(cpu_module.saxpy, 4, 256)
    x, y = torch.ones(N), torch.ones(N)
    run(2.0, x, y, N)
    assert torch.all(y == 3)  # done when the call returns: torch's CPU order
    assert ql.torch.current_stream("cpu") is None


@pytest.fixture(scope="module")
def ops(torch, cpu_module):
    saxpy = ql.torch.op(cpu_module.saxpy, 4, 256)
    scale = ql.torch.op(cpu_module.scale, lambda n, **_: (n + 255) // 256, 256,
                        outputs={"y": lambda x, **_: (x.shape, x.dtype)})
    return saxpy, scale


def test_op_schema(ops):
    saxpy, scale = ops
    assert saxpy.schema == "(float a, Tensor x, Tensor(a!) y, SymInt n) -> ()"
    assert scale.schema == "(Tensor x, float a, SymInt n) -> Tensor"
    assert saxpy.mutated == ("y",)


def test_op_eager_and_mutation_visible(torch, ops):
    saxpy, scale = ops
    x, y = torch.ones(N), torch.ones(N)
    saxpy(2.0, x, y, N)
    assert torch.all(y == 3)
    saxpy.op(2.0, x, y, N)  # through torch's dispatcher
    assert torch.all(y == 5)
    assert torch.all(scale(x, 4.0, N) == 4)


def test_op_compiled_fullgraph(torch, ops):
    saxpy, scale = ops

    def f(x, y):
        z = x * 2
        saxpy(2.0, z, y, N)      # mutates y: torch orders the reads after it
        return scale(y, 0.5, N) + y.sum()

    x, y = torch.arange(N, dtype=torch.float32), torch.ones(N)
    want_y = 4 * x + 1
    want = 0.5 * want_y + want_y.sum()
    got = torch.compile(f, fullgraph=True, backend="inductor")(x, y)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(y, want_y)   # the mutation reached the caller's tensor


def test_function_op(torch, cpu_module):
    k = cpu_module.saxpy

    def twice(a: float, x: torch.Tensor, y: torch.Tensor) -> None:
        k[4, 256](a, x, y, x.numel())
        k[4, 256](a, x, y, x.numel())

    op = ql.torch.op(twice, mutates_args=("y",))
    x, y = torch.ones(N), torch.zeros(N)
    torch.compile(lambda x, y: op(1.5, x, y), fullgraph=True)(x, y)
    assert torch.all(y == 3)


def test_launcher_waits_behind_queued_stream_work(torch, cpu_module):
    s = ql.Stream(device="cpu")
    x, y = torch.ones(N), torch.zeros(N)
    cpu_module.saxpy[4, 256, 0, s](1.0, x, y, N)      # queued on a ql stream
    ql.torch.launcher(cpu_module.saxpy, 4, 256)(1.0, x, y, N)
    assert torch.all(y == 2)                          # both done at return
    s.close()


def test_launcher_built_before_any_stream_still_waits(torch, cpu_module, monkeypatch):
    # The launcher skips the queued-work query until a CPU stream exists:
    # one made after the launcher must still be waited for.
    from quicklaunch.backends.cpu import runtime
    monkeypatch.setattr(runtime.StreamsSeen, "made", False)
    run = ql.torch.launcher(cpu_module.saxpy, 4, 256)
    x, y = torch.ones(N), torch.full((N,), 0.5)
    run(1.0, x, y, N)
    assert torch.all(y == 1.5)
    with ql.Stream(device="cpu") as s:
        assert runtime.StreamsSeen.made
        cpu_module.saxpy[4, 256, 0, s](1.0, x, y, N)
        run(1.0, x, y, N)
        assert torch.all(y == 3.5)


def test_op_refuses_a_struct_parameter(torch):
    mod = ql.compile(r'''struct P { float a, b; };
extern "C" __global__ void k(P p, float *y) {}''', device="cpu")
    with pytest.raises(TypeError, match=r"parameter 'p' of kernel 'k'.*ql.torch.op\(fn"):
        ql.torch.op(mod.k, 1, 1)

"""A quicklaunch kernel inside jax.jit on the CPU, through jax.ffi."""
import numpy as np
import pytest

import quicklaunch as ql

N = 1000


def test_jit_right_answer(jax, cpu_module):
    jnp = jax.numpy
    scale = ql.jax.op(cpu_module.scale, lambda x, **_: (x.shape[0] + 255) // 256, 256,
                      outputs={"y": lambda x, **_: (x.shape, x.dtype)})
    saxpy = ql.jax.op(cpu_module.saxpy, 4, 256)   # y: in-out (aliased)

    @jax.jit
    def f(x):
        y = scale(x, 3.0, x.shape[0])
        return saxpy(2.0, x, y + 1, x.shape[0]) * 2

    x = np.arange(N, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(x))), (5 * x + 1) * 2)


def test_jax_arrays_as_direct_arguments(jax, cpu_module):
    x = jax.numpy.ones(N, dtype=np.float32)
    y = np.zeros(N, np.float32)
    cpu_module.saxpy[4, 256](2.0, x, y, N)
    assert np.all(y == 2)
    with pytest.raises(ql.LaunchValueError, match="read-only"):  # JAX arrays are immutable
        cpu_module.saxpy[4, 256](2.0, y, x, N)


def test_traced_scalar_refused(jax, cpu_module):
    saxpy = ql.jax.op(cpu_module.saxpy, 4, 256)
    with pytest.raises(TypeError, match="static"):
        jax.jit(lambda a, x, y: saxpy(a, x, y, N))(2.0, np.ones(N, np.float32),
                                                   np.ones(N, np.float32))

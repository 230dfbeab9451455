"""Every entry of the shared idiom corpus (tests/idioms.py) compiles
unmodified on the CPU device and matches its NumPy reference."""
import os
import sys
import warnings

import numpy as np
import pytest

import quicklaunch as ql

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from idioms import SOURCES  # noqa: E402


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_idiom_on_cpu(name):
    spec = SOURCES[name]
    if name == "bf16_math":
        pytest.importorskip("ml_dtypes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ql.CompileWarning)
        mod = ql.compile(spec.source, device="cpu", name_expressions=spec.name_expressions)
    args = spec.args(np.random.default_rng(1234))
    mod[spec.kernel][spec.grid, spec.block](*args)
    ql.device("cpu").synchronize()
    spec.check(args)

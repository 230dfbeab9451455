"""The compiler's log on the module (module.compile_log) and its warnings as
ql.CompileLogWarning, which users can turn into errors; on a cache hit too."""
import uuid
import warnings

import pytest

import quicklaunch as ql

SRC = """
#warning quicklaunch-test-warning %s
extern "C" __global__ void k(int* x) { x[threadIdx.x] = 1; }
"""


def test_log_and_warning_on_cpu(cpu):
    src = SRC % uuid.uuid4().hex
    with pytest.warns(ql.CompileLogWarning, match="quicklaunch-test-warning") as got:
        mod = ql.compile(src, cpu)
    assert "quicklaunch-test-warning" in mod.compile_log
    assert issubclass(ql.CompileLogWarning, ql.CompileWarning)
    assert got[0].filename == __file__    # points at the ql.compile call
    with pytest.warns(ql.CompileLogWarning):   # a cache hit carries the log too
        again = ql.compile(src, cpu)
    assert again.compile_log == mod.compile_log
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=ql.CompileLogWarning)
        with pytest.raises(ql.CompileLogWarning):
            ql.compile(src, cpu)


def test_clean_source_has_an_empty_log(cpu):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ql.CompileLogWarning)
        mod = ql.compile('extern "C" __global__ void k(int* x) { x[0] = 1; }', cpu)
    assert mod.compile_log == ""


def test_users_w_option_silences_the_log(cpu):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ql.CompileLogWarning)
        mod = ql.compile(SRC % uuid.uuid4().hex, cpu, options=["-w"])
    assert mod.compile_log == ""

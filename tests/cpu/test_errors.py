"""Bad input on the CPU device raises the library's exceptions with messages
that name the kernel, the parameter and the fix, and nothing crashes."""
import pickle
import subprocess
import sys

import numpy as np
import pytest

import quicklaunch as ql

SOURCE = r"""
extern "C" __global__ void fill(int *out, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
template <typename T> __global__ void twice(T *x) { x[threadIdx.x] *= 2; }
"""


@pytest.fixture(scope="module")
def mod(cpu):
    return ql.compile(SOURCE, device=cpu)


def test_wrong_argument_count(mod):
    with pytest.raises(ql.LaunchTypeError,
                       match=r"kernel 'fill' takes 3 arguments \('out', 'value', 'n'\), got 2"):
        mod.fill[1, 1](np.zeros(1, np.int32), 1)


def test_wrong_kinds(mod):
    out = np.zeros(4, np.int32)
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 1 'out'.*got str"):
        mod.fill[1, 4]("out", 1, 4)
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 2 'value'.*got numpy.ndarray"):
        mod.fill[1, 4](out, out, 4)
    with pytest.raises(ql.LaunchTypeError, match=r"parameter 2 'value': expects an integer "
                                                 r"\(C type int32\), got a float"):
        mod.fill[1, 4](out, 1.0, 4)


def test_int_out_of_range(mod):
    with pytest.raises(ql.LaunchOverflowError,
                       match=r"parameter 2 'value': 2147483648 is out of range for int32"):
        mod.fill[1, 4](np.zeros(4, np.int32), 2**31, 4)
    with pytest.raises(OverflowError):
        mod.fill[1, 4](np.zeros(4, np.int32), -2**31 - 1, 4)


@pytest.mark.parametrize("grid, block, pattern", [
    (0, 1, r"grid dimension x is 0"),
    (1, -4, r"block dimension x is -4"),
    ((1, 0), 1, r"grid dimension y is 0"),
    (1, 2048, r"block dimension x is 2048; device cpu allows at most \(1024, 1024, 64\)"),
    (1, (1, 1, 65), r"block dimension z is 65"),
    (1, (32, 32, 2), r"block \(32, 32, 2\) has 2048 threads; device cpu allows at most 1024"),
    ((1, 65536), 1, r"grid dimension y is 65536"),
    (2**31, 1, r"grid dimension x is 2147483648"),
    ((1, 1, 1, 1), 1, r"grid must be a positive int or a tuple of 1 to 3"),
    (1.5, 1, r"grid must be a positive int"),
])
def test_bad_configurations(mod, grid, block, pattern):
    with pytest.raises(ql.LaunchError, match=pattern) as info:
        mod.fill[grid, block](np.zeros(1, np.int32), 0, 1)
    assert "kernel 'fill'" in str(info.value)
    with pytest.raises(ql.LaunchError, match=pattern):
        mod.fill.launch(grid, block, np.zeros(1, np.int32), 0, 1)


def test_bad_shared_mem(mod):
    with pytest.raises(ql.LaunchValueError, match=r"shared_mem is 1048576 bytes; device cpu"):
        mod.fill[1, 1, 1 << 20](np.zeros(1, np.int32), 0, 1)


def test_unknown_kernel_lists_the_known_ones(mod):
    with pytest.raises(ql.KernelNotFoundError, match=r"no kernel 'fil' .*available: \['fill'\]"):
        mod.get_kernel("fil")
    with pytest.raises(AttributeError, match=r"no kernel 'nope'"):
        mod.nope
    with pytest.raises(KeyError):
        mod["nope"]


def test_template_without_expression(mod):
    with pytest.raises(ql.KernelNotFoundError, match=r"'twice' is a template.*name_expressions"):
        mod.get_kernel("twice")


def test_calling_a_kernel_without_configuration(mod):
    with pytest.raises(TypeError, match=r"needs a launch configuration"):
        mod.fill(np.zeros(1, np.int32), 0, 1)


def test_compile_error_shows_log_and_user_lines(cpu):
    source = "extern \"C\" __global__ void broken(float *x) {\n    x[0] = undefined_thing;\n}\n"
    with pytest.raises(ql.CompileError) as info:
        ql.compile(source, device=cpu, options=["-DFOO=1"])
    err = info.value
    assert "line 2:" in str(err) and "undefined_thing" in str(err)
    assert "2 |     x[0] = undefined_thing;" in str(err)
    assert "-DFOO=1" in str(err) and err.options == ("-DFOO=1",)
    assert "test_errors.py" in str(err)  # where ql.compile was called
    assert "undefined_thing" in err.log and err.source == source
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ql.CompileError and str(again) == str(err) and again.log == err.log


def test_bad_name_expression(cpu):
    with pytest.raises(ql.CompileError, match=r"no_such_kernel"):
        ql.compile(SOURCE, device=cpu, name_expressions=["no_such_kernel<int>"])


def test_coalesced_threads_is_refused(cpu):
    # (this_grid() is supported: tests/cpu/test_cg_grid.py)
    source = r"""
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    __global__ void active(int *x) {
        x[0] = cg::coalesced_threads().size();
    }"""
    with pytest.raises(ql.CompileError, match=r"uses coalesced_threads, which the CPU device "
                                              r"does not support"):
        ql.compile(source, device=cpu)


def test_no_compiler_found(tmp_path):
    code = ("import quicklaunch as ql\n"
            "try:\n    ql.compile('__global__ void k(int *x) {}', device='cpu')\n"
            "except ql.CompileError as e:\n    print('ERR', e)\n")
    env = {"CXX": "/nonexistent/g++ -O2", "PATH": "/usr/bin:/bin",
           "QUICKLAUNCH_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, **env}, timeout=120)
    assert "ERR no C++ compiler found" in out.stdout, out.stderr
    assert "/nonexistent/g++" in out.stdout and "set CXX" in out.stdout


def test_errors_are_picklable():
    for exc in (ql.LaunchError("m"), ql.LaunchTypeError("t"), ql.LaunchOverflowError("o"),
                ql.CudaError("boom", "CUDA_ERROR_INVALID_VALUE", 1), ql.CacheError("c")):
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc) and str(again) == str(exc)

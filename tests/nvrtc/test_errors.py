"""What a failed NVRTC compilation raises: the log at the user's own line
numbers, the numbered source and the options; unknown archs with the list
of supported ones; bad name expressions; kernels the preprocessor removes."""
import pickle
import random

import pytest

import quicklaunch as ql

FILLERS = ["", "// a comment line", "/* a block\n   comment */",
           "__device__ float twice(float v) { return 2.0f * v; }",
           "#define SCALE 3", "struct Pair { int a; float b; };",
           'extern "C" __global__ void ok_%d(float *x) { x[0] = 1.0f; }']


def _source_with_error_at(r: random.Random) -> tuple[str, int]:
    lines = []
    for i in range(r.randint(0, 40)):
        lines += (r.choice(FILLERS).replace("%d", str(i))).split("\n")
    bad = len(lines) + 2
    lines += ["__global__ void broken(int *x) {", "    x[0] = undefined_thing;", "}"]
    for i in range(r.randint(0, 5)):
        lines.append(f'extern "C" __global__ void after_{i}(int *x) {{ x[0] = {i}; }}')
    return "\n".join(lines) + "\n", bad


@pytest.mark.parametrize("seed", range(4))
def test_errors_carry_the_users_line_numbers(seed):
    source, bad = _source_with_error_at(random.Random(seed))
    options = ["-DFOO=1", "--std=c++17"]
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile(source, arch="sm_80", options=options)
    err = info.value
    text = str(err)
    assert f"line {bad}: error: identifier \"undefined_thing\" is undefined" in text
    assert "kernel.cu(" not in text.split("source:")[0]
    width = len(str(len(source.splitlines())))
    assert f"{bad:>{width}} |     x[0] = undefined_thing;" in text
    assert "options: ['-DFOO=1', '--std=c++17']" in text and err.options == tuple(options)
    assert "-arch=sm_80" in err.command and err.source == source
    assert f"kernel.cu({bad}): error" in err.log    # the log itself is NVRTC's own
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ql.CompileError and str(again) == text and again.log == err.log


def test_unknown_arch_lists_the_supported_ones():
    supported = ql.cuda.supported_archs()
    for arch in ("sm_70", "sm_999", "gfx90a", "compute_1", "sm90", "", 90):
        with pytest.raises(ql.CompileError) as info:
            ql.cuda.compile("__global__ void k(int *x) {}", arch=arch)
        assert f"does not support arch {arch!r}" in str(info.value)
        assert ", ".join(supported) in str(info.value)


def test_arch_belongs_in_arch_not_options():
    for opt in ("-arch=sm_80", "--gpu-architecture=compute_90", "-arch"):
        with pytest.raises(ql.CompileError, match="pass the architecture as arch="):
            ql.cuda.compile("__global__ void k(int *x) {}", arch="sm_80", options=[opt])


def test_invalid_option_is_reported(monkeypatch):
    # Refused by the allow-list (quicklaunch/options.py), by name; past the
    # escape hatch, NVRTC itself refuses it.
    with pytest.raises(ql.CompileError, match=r"option '--no-such-flag' is refused"):
        ql.cuda.compile("__global__ void k(int *x) {}", arch="sm_80", options=["--no-such-flag"])
    monkeypatch.setenv("QUICKLAUNCH_UNCHECKED_OPTIONS", "1")
    with pytest.raises(ql.CompileError, match=r"(?s)NVRTC_ERROR_INVALID_OPTION.*--no-such-flag"):
        ql.cuda.compile("__global__ void k(int *x) {}", arch="sm_80", options=["--no-such-flag"])


def test_bad_name_expressions():
    source = "template <typename T> __global__ void fill(T *x, T v) { x[0] = v; }\n"
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile(source, arch="sm_80", name_expressions=["fill<int>", "nothing<int>"])
    assert "'nothing<int>' could not be resolved" in str(info.value)
    assert "kernel 'nothing<int>' (reflection): error" in str(info.value)
    for bad in ('fill<int>"', "fill<int>;", "", "fill<\nint>"):
        with pytest.raises(ql.CompileError, match="invalid name expression"):
            ql.cuda.compile(source, arch="sm_80", name_expressions=[bad])
    with pytest.raises(TypeError):
        ql.cuda.compile(source, arch="sm_80", name_expressions=[3])
    with pytest.raises(TypeError):
        ql.cuda.compile(b"__global__ void k() {}", arch="sm_80")


def test_kernels_removed_by_the_preprocessor_are_left_out():
    source = ('#if 0\n__global__ void gone(int *x) {}\n#endif\n'
              'namespace n {\n#ifdef WITH_EXTRA\n__global__ void extra(int *x) {}\n#endif\n}\n'
              'extern "C" __global__ void base(int *x) { x[0] = 1; }\n')
    assert list(ql.cuda.compile(source, arch="sm_80").kernels) == ["base"]
    with_extra = ql.cuda.compile(source, arch="sm_80", options=["-DWITH_EXTRA"])
    assert list(with_extra.kernels) == ["n::extra", "base"]
    # asked for by name, a missing kernel is an error, not silently dropped
    with pytest.raises(ql.CompileError, match="'gone' could not be resolved"):
        ql.cuda.compile(source, arch="sm_80", name_expressions=["gone"])


def test_overloaded_kernels_are_reported():
    source = ("__global__ void over(int *x) {}\n__global__ void over(float *x) {}\n")
    with pytest.raises(ql.CompileError, match=r"(?s)'over' could not be resolved.*"
                                              r"kernel 'over' \(reflection\): error"):
        ql.cuda.compile(source, arch="sm_80")


def test_old_language_standard_is_explained():
    with pytest.raises(ql.CompileError, match=r"compile with -std=c\+\+11 or later"):
        ql.cuda.compile("__global__ void k(int *x) {}", arch="sm_80", options=["-std=c++03"])

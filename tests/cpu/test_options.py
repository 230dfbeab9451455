"""Compile options on the CPU device: an allow-list (quicklaunch/options.py),
every other option a CompileError naming it, and the escape hatch
QUICKLAUNCH_UNCHECKED_OPTIONS=1 (issue 14, item 3). Also the source-text
cases of item 7: a lone surrogate, kernels named with non-ASCII letters."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import options as options_mod

SCALED = r"""
#ifndef SCALE
#define SCALE 1
#endif
__global__ void scale(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = SCALE * (float)i;
}
"""


def _run(mod, name="scale", n=8):
    x = np.zeros(n, np.float32)
    mod.get_kernel(name)[1, n](x, n)
    return x


REFUSED = ["-o", "-o/tmp/out.so", "-fplugin=/tmp/evil.so", "-wrapper", "-B/tmp", "-specs=/tmp/x",
           "--param", "-x", "@/tmp/response", "-Xlinker", "-lm", "-L/tmp", "-shared", "-E", "-S",
           "-c", "-MD", "-M", "-Wl,-rpath,/tmp", "-Wa,-v", "-Wp,-MD,/tmp/x", "-save-temps",
           "-fsanitize=address", "-std=c++14", "/etc/passwd", "-fopt-info-vec=/tmp/f",
           "-Xclang", "-mllvm", "-no-integrated-cpp", "--sysroot=/tmp"]


@pytest.mark.parametrize("opt", REFUSED)
def test_refused_option_is_named(opt):
    # Checked before the compiler runs: no compile, so these are cheap.
    with pytest.raises(ql.CompileError) as info:
        ql.compile(SCALED, device="cpu", options=["-DSCALE=2", opt])
    text = str(info.value)
    assert f"option {opt!r} is refused for the CPU device" in text
    assert "QUICKLAUNCH_UNCHECKED_OPTIONS=1" in text and "docs/cpu-device.md" in text


def test_option_needing_a_value():
    with pytest.raises(ql.CompileError, match="option '-I' is refused.*needs a value"):
        ql.compile(SCALED, device="cpu", options=["-I"])


ALLOWED = [["-DSCALE=3"], ["-D", "SCALE=3"], ["-USCALE", "-DSCALE=3"], ["-I/tmp", "-isystem", "/tmp"],
           ["-O0"], ["-O2"], ["-Os"], ["-Ofast"], ["-g"], ["-w"], ["-Wall", "-Wextra", "-Werror=return-type"],
           ["-Wno-unused-variable"], ["-std=c++20"], ["--std=gnu++17"], ["-ffast-math"],
           ["-fno-math-errno", "-ffp-contract=off", "-funroll-loops", "-fno-strict-aliasing"],
           ["-march=native", "-mtune=native", "-mavx2", "-mno-fma"], ["-arch=sm_80"],
           ["-arch", "sm_80"], ["--use_fast_math"], ["-lineinfo"], ["-include", "cstdint"]]


@pytest.mark.parametrize("opts", ALLOWED, ids=lambda o: " ".join(o))
def test_allowed_options_pass_the_check(opts):
    from quicklaunch.backends.cpu.compiler import split_arch
    _, rest = split_arch(tuple(opts))
    options_mod.check_cpu(rest)   # no CompileError


def test_nvrtc_spellings_are_mapped():
    assert options_mod.check_cpu(("--use_fast_math", "-lineinfo", "-O1")) == ("-ffast-math", "-O1")


def test_defines_change_the_result(cpu):
    assert _run(ql.compile(SCALED, device=cpu))[3] == 3
    assert _run(ql.compile(SCALED, device=cpu, options=["-DSCALE=3"]))[3] == 9
    assert _run(ql.compile(SCALED, device=cpu, options=["-D", "SCALE=5", "-O0",
                                                         "-ffast-math", "-Wall"]))[3] == 15


def test_include_path_finds_a_header(cpu, tmp_path):
    (tmp_path / "scale_by.h").write_text("#define SCALE 7\n")
    src = '#include "scale_by.h"\n' + SCALED
    assert _run(ql.compile(src, device=cpu, options=[f"-I{tmp_path}"]))[2] == 14
    assert _run(ql.compile(src, device=cpu, options=["-I", str(tmp_path), "-O1"]))[2] == 14


def test_escape_hatch_passes_a_refused_option(cpu, monkeypatch):
    # --param is refused, harmless, and takes its value as the next option.
    with pytest.raises(ql.CompileError, match="option '--param' is refused"):
        ql.compile(SCALED, device=cpu, options=["--param", "max-unroll-times=2"])
    monkeypatch.setenv("QUICKLAUNCH_UNCHECKED_OPTIONS", "1")
    mod = ql.compile(SCALED, device=cpu, options=["--param", "max-unroll-times=2", "-DSCALE=4"])
    assert _run(mod)[1] == 4


def test_escape_hatch_output_option_is_an_error_not_an_empty_module(cpu, monkeypatch, tmp_path):
    monkeypatch.setenv("QUICKLAUNCH_UNCHECKED_OPTIONS", "1")
    with pytest.raises(ql.CompileError, match="preprocessor wrote nothing"):
        ql.compile(SCALED, device=cpu, options=["-o", str(tmp_path / "x")])


def test_options_are_in_the_cache_key(cpu):
    a = ql.compile(SCALED, device=cpu, options=["-DSCALE=11"])
    b = ql.compile(SCALED, device=cpu, options=["-DSCALE=12"])
    assert _run(a)[1] == 11 and _run(b)[1] == 12


def test_lone_surrogate_says_where(cpu):
    src = SCALED + "// caf\udce9\n"
    with pytest.raises(ql.CompileError) as info:
        ql.compile(src, device=cpu)
    line = src.count("\n", 0, src.index("\udce9")) + 1
    assert f"line {line}, column 7" in str(info.value)
    assert "surrogate" in str(info.value)


def test_unicode_kernel_names(cpu):
    src = r"""
__global__ void удвоить(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * i;
}
namespace ns { __global__ void größe(float *wert, int n) {
    int i = threadIdx.x; if (i < n) wert[i] = 3.0f * i; } }
"""
    mod = ql.compile(src, device=cpu)
    assert _run(mod, "удвоить")[3] == 6
    k = mod.get_kernel("ns::größe")
    assert [p.name for p in k.params] == ["wert", "n"]
    assert _run(mod, "ns::größe")[3] == 9

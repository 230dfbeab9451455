"""Compile options for the GPU devices: NVRTC's and hiprtc's allow-lists
(quicklaunch/options.py). A refused option is a CompileError naming it
before the compiler runs (NVRTC alone would say only
NVRTC_ERROR_INVALID_OPTION); the escape hatch QUICKLAUNCH_UNCHECKED_OPTIONS=1
hands options over as they are."""
import pytest

import quicklaunch as ql
from quicklaunch import options as options_mod

KERNEL = "__global__ void k(float *x) { x[threadIdx.x] = SCALE * threadIdx.x; }\n"

NVRTC_ALLOWED = [["-DSCALE=2"], ["-D", "SCALE=2"], ["--define-macro=SCALE=2"],
                 ["-DSCALE=2", "-I/tmp"], ["-DSCALE=2", "-I", "/tmp"],
                 ["-DSCALE=2", "--include-path=/tmp"], ["-DSCALE=2", "-G"],
                 ["-DSCALE=2", "-lineinfo"], ["-DSCALE=2", "--use_fast_math"],
                 ["-DSCALE=2", "-ftz=true"], ["-DSCALE=2", "-prec-div=false"],
                 ["-DSCALE=2", "-prec-sqrt=false"], ["-DSCALE=2", "-fmad=false"],
                 ["-DSCALE=2", "--maxrregcount=32"], ["-DSCALE=2", "-extra-device-vectorization"],
                 ["-DSCALE=2", "-default-device"], ["-DSCALE=2", "-std=c++20"],
                 ["-DSCALE=2", "-w"], ["-DSCALE=2", "-restrict"], ["-DSCALE=2", "-dopt=on"],
                 ["-DSCALE=2", "-Werror=all-warnings"], ["-DSCALE=2", "--diag-suppress=177"],
                 ["-DSCALE=2", "-rdc=false"], ["-DSCALE=2", "-Xptxas=-v"],
                 ["-DSCALE=2", "-include", "cuda_fp16.h"], ["-DSCALE=2", "-U", "OTHER"]]


@pytest.mark.parametrize("opts", NVRTC_ALLOWED, ids=lambda o: " ".join(o))
def test_nvrtc_allowed_options_compile(opts):
    prog = ql.cuda.compile(KERNEL, arch="sm_80", options=opts)
    assert "k" in prog.kernels


NVRTC_REFUSED = ["--no-such-flag", "-O3", "-rdc=true", "--relocatable-device-code=true", "-dc",
                 "-dlto", "--gen-opt-lto", "--fdevice-syntax-only", "--time=/tmp/t.csv",
                 "-fdevice-time-trace=/tmp/t.json", "--pch", "-Xptxas", "-fplugin=/tmp/x.so",
                 "-o", "/tmp/x.cu", "@/tmp/response"]


@pytest.mark.parametrize("opt", NVRTC_REFUSED)
def test_nvrtc_refused_option_is_named(opt):
    with pytest.raises(ql.CompileError) as info:
        ql.cuda.compile(KERNEL, arch="sm_80", options=["-DSCALE=2", opt])
    text = str(info.value)
    assert f"option {opt!r} is refused for the CUDA device" in text
    assert "QUICKLAUNCH_UNCHECKED_OPTIONS=1" in text


def test_nvrtc_escape_hatch(monkeypatch):
    # -minimal is not on the list; unchecked, NVRTC takes it.
    with pytest.raises(ql.CompileError, match="option '-minimal' is refused"):
        ql.cuda.compile(KERNEL, arch="sm_80", options=["-DSCALE=2", "-minimal"])
    monkeypatch.setenv("QUICKLAUNCH_UNCHECKED_OPTIONS", "1")
    prog = ql.cuda.compile(KERNEL, arch="sm_80", options=["-DSCALE=2", "-minimal"])
    assert "k" in prog.kernels


def test_nvrtc_arch_still_belongs_in_arch():
    with pytest.raises(ql.CompileError, match="pass the architecture as arch="):
        ql.cuda.compile(KERNEL, arch="sm_80", options=["-arch=sm_90"])


@pytest.mark.no_nvrtc
@pytest.mark.parametrize("opt", ["-fgpu-rdc", "-o", "-fplugin=/tmp/x.so", "-mllvm", "-Xclang",
                                 "-save-temps", "-Wl,-z", "--no-such-flag", "-std=c++98"])
def test_hiprtc_refused_option_is_named(opt):
    # Checked before hiprtc is loaded: runs without ROCm.
    with pytest.raises(ql.CompileError) as info:
        ql.hip.compile(KERNEL, arch="gfx90a", options=["-DSCALE=2", opt])
    assert f"option {opt!r} is refused for the HIP device" in str(info.value)


@pytest.mark.no_nvrtc
def test_hiprtc_allowed_options_pass_the_check():
    opts = ("-DSCALE=2", "-I", "/tmp", "-O3", "-ffast-math", "-std=c++20", "-mwavefrontsize64",
            "-mno-cumode", "-munsafe-fp-atomics", "-fgpu-flush-denormals-to-zero", "-Wall", "-w",
            "-g", "-ffp-contract=fast", "-include", "x.h", "-std=c++14")
    assert options_mod.check_hiprtc(opts) == opts

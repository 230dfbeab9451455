"""`quicklaunch info` (issue 19, item 5): every device with its compilers
(NVRTC with its version, hiprtc with its path and version, the host C++
compiler with its flags and the CPU it builds for) and every environment
variable quicklaunch reads."""
import re
import shutil

import pytest

from quicklaunch import env
from quicklaunch.cli import main


def _info(capsys) -> str:
    assert main(["info"]) == 0
    return capsys.readouterr().out


def test_each_device_lists_its_compilers(capsys):
    out = _info(capsys)
    devices = out[out.index("devices:"):out.index("environment:")]
    blocks = re.split(r"\n  (?=\S)", devices)
    by_kind = {b.split()[0]: b for b in blocks[1:]}
    cpu = by_kind["cpu"]
    assert re.search(r"\n    C\+\+ +\S+: ", cpu)
    assert re.search(r"\n    flags +-std=c\+\+17 .*-fPIC", cpu)
    assert re.search(r"\n    release +-O3 -march=native", cpu)
    assert re.search(r"\n    debug +-O0 -g", cpu)
    assert re.search(r"\n    target +native", cpu) and "-march=native (" not in cpu
    cuda = by_kind["cuda"]
    assert re.search(r"\n    NVRTC +(none: |\d+\.\d+ \(/)", cuda), cuda
    hip = by_kind["hip"]
    m = re.search(r"\n    hiprtc +(.*)", hip)
    assert m, hip
    # a usable hiprtc: its version and where it is; else why not
    assert m.group(1).startswith("none: ") or re.match(r"\d+\.\d+ \(/\S+", m.group(1)), m.group(1)


def test_every_variable_is_listed_with_its_value(capsys, monkeypatch):
    monkeypatch.setenv("QUICKLAUNCH_CPU_THREADS", "abc")   # after import: info still reports it
    monkeypatch.setenv("QUICKLAUNCH_HIP_ARCH", "gfx90a")
    out = _info(capsys)
    section = out[out.index("environment:"):]
    for v in env.VARIABLES:
        assert f"\n  {v.name} " in section, v.name
    assert re.search(r"QUICKLAUNCH_CPU_THREADS +'abc'  \(INVALID: expected a whole number", section)
    assert re.search(r"QUICKLAUNCH_HIP_ARCH +'gfx90a'  \(", section)


def _cpu_block(capsys) -> str:
    out = _info(capsys)
    devices = out[out.index("devices:"):out.index("environment:")]
    return next(b for b in re.split(r"\n  (?=\S)", devices)[1:] if b.split()[0] == "cpu")


@pytest.mark.skipif(not (shutil.which("g++") and shutil.which("clang++")),
                    reason="needs both g++ and clang++ installed")
@pytest.mark.parametrize("cxx, other", [("g++", "clang++"), ("clang++", "g++")])
def test_flags_probed_per_compiler_are_listed(capsys, monkeypatch, cxx, other):
    """The compiler in use and each other installed one, each with the flags
    probed for it: g++ keeps -fno-ipa-icf, clang++ (which refuses it) not."""
    from quicklaunch.backends.cpu import toolchain
    monkeypatch.setenv("CXX", cxx)
    cpu = _cpu_block(capsys)
    used, _, rest = cpu.partition(f"\n    CXX={other} ")
    assert rest, cpu
    assert re.search(r"\n    C\+\+ +\S+: ", used) and f"\n    CXX={cxx} " not in cpu
    assert "(not in use)" in rest.splitlines()[0]
    lines = {name: re.search(rf"\n    {name} +(.*)", used).group(1)
             for name in ("flags", "release", "debug")}
    other_lines = {name: re.search(rf"\n      {name} +(.*)", rest).group(1)
                   for name in ("flags", "release", "debug", "memcheck")}
    for compiler, shown in ((toolchain._probe(cxx), lines), (toolchain._probe(other), other_lines)):
        assert shown["flags"].split() == list(toolchain.common_flags(compiler))
        assert shown["release"].split() == list(toolchain.release_flags(compiler))
        assert shown["debug"].split() == list(toolchain.debug_flags(compiler))
        assert ("-fno-ipa-icf" in shown["flags"].split()) == ("clang" not in compiler.version)

"""One rule for plain `char` (issue 24 item 2): what the target's ABI says,
signed on x86-64, unsigned on Linux aarch64 (signed on Apple arm64), used by
parameters (the compiler's own view, reflected), get_global and the docs."""
import os
import platform
import shutil

import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch.kinds import char_dtype, char_is_signed


@pytest.mark.parametrize("machine, system, signed", [
    ("x86_64", "Linux", True), ("AMD64", "Windows", True), ("i686", "Linux", True),
    ("aarch64", "Linux", False), ("arm64", "Linux", False), ("armv7l", "Linux", False),
    ("ppc64le", "Linux", False), ("s390x", "Linux", False), ("riscv64", "Linux", False),
    ("arm64", "Darwin", True), ("x86_64", "Darwin", True),
])
def test_rule_per_architecture(machine, system, signed):
    assert char_is_signed(machine, system) is signed
    assert char_dtype(machine, system) == ("int8" if signed else "uint8")


def test_this_host():
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        assert char_is_signed() and char_dtype() == "int8"
    elif machine in ("aarch64", "arm64") and platform.system() == "Linux":
        assert not char_is_signed() and char_dtype() == "uint8"


HAVE_CXX = bool(os.environ.get("CXX")) or any(shutil.which(c) for c in ("g++", "clang++"))

SOURCE = r"""
__constant__ char g = -5;
extern "C" __global__ void probe(int *out, char c) {
    out[0] = g;                    /* the global as the kernel reads it */
    out[1] = c;                    /* the parameter as the kernel reads it */
    out[2] = (char)-1 < (char)0;   /* the compiler's signedness */
}
"""


@pytest.mark.skipif(not HAVE_CXX, reason="no host C++ compiler (g++ or clang++) for the CPU device")
def test_compiler_parameters_and_get_global_agree():
    mod = ql.compile(SOURCE, device="cpu")
    out = np.zeros(3, np.int32)
    signed = char_is_signed()
    mod.probe[1, 1](out, -3 if signed else 253)
    assert bool(out[2]) is signed, "the host compiler's char disagrees with the ABI rule"
    g = mod.get_global("g")
    assert g.dtype == np.dtype(char_dtype())
    value = g.numpy() if hasattr(g, "numpy") else np.asarray(g)
    assert int(value) == out[0] == (-5 if signed else 251)
    assert out[1] == (-3 if signed else 253)
    with pytest.raises(Exception, match="out of range"):
        mod.probe[1, 1](out, 200 if signed else -3)


@pytest.mark.parametrize("machine, dtype", [("x86_64", "int8"), ("aarch64", "uint8")])
def test_get_global_follows_the_rule(monkeypatch, machine, dtype):
    # get_global's declared dtype for plain char, as on each architecture
    # (the rule asked for a given machine), explicit signedness unchanged.
    from quicklaunch import globals as g
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    assert g._declared("__constant__ char c = -5;", "c") == (np.dtype(dtype), ())
    assert g._declared("__device__ const char t[4];", "t") == (np.dtype(dtype), (4,))
    assert g._declared("__device__ signed char s;", "s") == (np.dtype("int8"), ())
    assert g._declared("__device__ unsigned char u;", "u") == (np.dtype("uint8"), ())

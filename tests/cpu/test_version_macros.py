"""CUDART_VERSION, CUDA_VERSION (through <cuda.h>) and __CUDACC_VER_MAJOR__ /
__CUDACC_VER_MINOR__ / __CUDACC_VER_BUILD__ on the CPU device, with the
values NVRTC has (quicklaunch/cuda_version.py): the NVRTC wheel's version,
else the documented default. A kernel file with the classic
`#if CUDART_VERSION < 3000` guard around its own double3 compiles, as with
NVRTC (tests/nvrtc and tests/hip compile VERSION_SOURCE too)."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import cuda_version

from .conftest import poisoned

VERSION_SOURCE = r"""
#include <cuda.h>
#if CUDART_VERSION < 3000
struct double3 { double x, y, z; };   // CUDA 2's missing vector type
#endif
#if !defined(__CUDACC_VER_MAJOR__) || !defined(__CUDACC_VER_MINOR__) || !defined(CUDA_VERSION)
#error "the version macros are missing"
#endif
#if CUDA_VERSION != CUDART_VERSION
#error "CUDA_VERSION and CUDART_VERSION disagree"
#endif

extern "C" __global__ void versions(int *o, double3 *d, int n) {
    o[0] = CUDART_VERSION;
    o[1] = CUDA_VERSION;
    o[2] = __CUDACC_VER_MAJOR__;
    o[3] = __CUDACC_VER_MINOR__;
    o[4] = __CUDACC_VER_BUILD__;
    double3 v = make_double3(n, 2 * n, 3 * n);
    *d = v;
}
"""


def _run(options=()):
    mod = ql.compile(VERSION_SOURCE, device="cpu", options=options)
    o = poisoned(5, np.int32)
    d = np.full(3, np.nan)
    mod.versions[1, 1](o, d, 7)
    assert list(d) == [7.0, 14.0, 21.0]   # the built-in double3
    return list(o)


def test_values_are_the_targeted_cuda():
    major, minor, build = cuda_version.target()
    assert _run() == [major * 1000 + minor * 10] * 2 + [major, minor, build]
    assert major >= 11


def test_nvrtc_wheel_version_when_installed():
    from importlib.metadata import PackageNotFoundError, version
    try:
        wheel = version("nvidia-cuda-nvrtc")
    except PackageNotFoundError:
        assert cuda_version.target() == cuda_version.DEFAULT
        return
    major, minor = (int(x) for x in wheel.split(".")[:2])
    assert cuda_version.target()[:2] == (major, minor)


def test_environment_sets_the_version(monkeypatch):
    monkeypatch.setenv(cuda_version.ENV, "12.4.131")
    assert _run() == [12040, 12040, 12, 4, 131]


def test_users_own_define_wins():
    got = _run(("-DCUDART_VERSION=11020", "-D__CUDACC_VER_MAJOR__=11"))
    assert got[:3] == [11020, 11020, 11]
    assert got[3:] == list(cuda_version.target()[1:])


@pytest.mark.parametrize("text, want", [("13.5.37", (13, 5, 37)), ("12.8", (12, 8, 0)),
                                        ("x", None)])
def test_version_text(text, want):
    assert cuda_version._parse(text) == want

"""The idiom corpus (tests/idioms.py) and the stand-in C/C++ headers compile
unmodified with NVRTC (sm_80, sm_90) and hiprtc (gfx90a, gfx1030)."""
import sys
import warnings
from pathlib import Path

import pytest

import quicklaunch as ql

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from idioms import SOURCES  # noqa: E402

TARGETS = [("cuda", "sm_80"), ("cuda", "sm_90"), ("hip", "gfx90a"), ("hip", "gfx1030")]
HEADERS = ["stdio.h", "stdlib.h", "float.h", "math.h", "cmath", "assert.h", "cassert",
           "time.h", "cstdio", "cstdlib", "cfloat", "climits", "limits.h", "stdint.h",
           "cstdint", "stddef.h", "cstddef", "string.h", "cstring", "algorithm", "utility"]
USES = """
__global__ void k(float *f, double *d, int *i, uint n) {
    ushort s = 1; ulong l = 2; size_t z = sizeof(s) + l; (void)z;
    f[0] = INFINITY; f[1] = NAN; f[2] = HUGE_VALF; f[3] = (float)M_PI; f[4] = FLT_MAX;
    f[5] = FLT_MIN + FLT_EPSILON; d[0] = DBL_MAX + DBL_EPSILON + M_SQRT2 + M_E + HUGE_VAL;
    i[0] = INT_MAX; i[1] = INT_MIN; i[2] = (int)(UINT_MAX - LLONG_MAX); i[3] = RAND_MAX;
    i[4] = EXIT_SUCCESS + EXIT_FAILURE + CHAR_BIT + (f == NULL);
    int a = 1, b = 2; std::swap(a, b); i[5] = std::min(a, b) + std::max(a, b);
    std::uint8_t u8 = 1; int16_t s16 = 2; i[6] = u8 + s16;
    assert(n > 0);
    if (n > 100) { printf("n=%u\\n", n); memset(f, 0, 4); memcpy(f, d, 4); }
}
"""


def _compiler(device):
    fn = ql.cuda.compile if device == "cuda" else ql.hip.compile
    try:
        fn("__global__ void k() {}", arch="sm_80" if device == "cuda" else "gfx90a")
    except Exception as exc:
        pytest.skip(f"{device} compiler unusable: {exc}")
    return fn


@pytest.mark.parametrize("device,arch", TARGETS)
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_idiom_compiles(device, arch, name):
    spec = SOURCES[name]
    compile_ = _compiler(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ql.CompileWarning)
        if arch in spec.refused:
            with pytest.raises(ql.CompileError, match=spec.refused[arch]):
                compile_(spec.source, arch=arch, name_expressions=spec.name_expressions)
            return
        prog = compile_(spec.source, arch=arch, name_expressions=spec.name_expressions)
    assert spec.kernel in prog.kernels


@pytest.mark.parametrize("device,arch", TARGETS)
def test_standin_headers_and_their_macros(device, arch):
    src = "".join(f"#include <{h}>\n" for h in HEADERS) + USES
    prog = _compiler(device)(src, arch=arch)
    assert "k" in prog.kernels


@pytest.mark.parametrize("device,arch", TARGETS)
@pytest.mark.parametrize("header", ["stdio.h", "stdlib.h", "string.h", "cstdio", "cstdint",
                                    "math.h", "cmath", "float.h", "climits"])
def test_standard_headers_resolve_to_quicklaunchs(device, arch, header):
    src = (f"#include <{header}>\n#if !defined(QL_LIBC_H) && !defined(QL_CSTDINT)\n"
           "#error a host header was found\n#endif\n__global__ void k() {}\n")
    _compiler(device)(src, arch=arch)

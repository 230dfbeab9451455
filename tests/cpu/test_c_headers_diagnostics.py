"""C headers inside extern "C" { } and errors that would land in quicklaunch's
own code: on the CPU device here; tests/nvrtc and tests/hip compile the same
sources (EXTERN_C_SOURCE through the corpus, the broken ones below)."""
import numpy as np
import pytest

import quicklaunch as ql
from quicklaunch import compile_hints

from .conftest import poisoned

EXTERN_C_SOURCE = r"""
extern "C" {
#include <stdint.h>
#include <stddef.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>

__global__ void c_headers(int32_t *o, uint64_t *w, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    o[i] = (int32_t)(i % 7) - 3 + (INT32_MAX > 0) + (int)fabsf(-2.0f) + (FLT_MAX > 0);
    w[i] = (uint64_t)UINT32_MAX + i;
}
}
"""

# not *SOURCE: no device compiles them
MISSING_BRACE_KERNEL = r"""extern "C" __global__ void unclosed(float *o, int n) {
    int i = threadIdx.x;
    if (i < n) {
        o[i] = 2.0f * i;
}
"""
STRAY_BRACE_KERNEL = r"""extern "C" __global__ void stray(float *o) {
    o[0] = 1.0f;
}
}
"""
MISSING_BRACE_MESSAGE = (r"^line 1: a '\{' on this line is never closed: the source ends inside "
                         r"it.*most likely for the '\{' on line 3 \(the '\}' on line 5")


@pytest.mark.parametrize("n", [1, 31, 300])
def test_c_headers_inside_extern_c(n):
    mod = ql.compile(EXTERN_C_SOURCE, device="cpu")
    o, w = poisoned(n, np.int32), poisoned(n, np.uint64)
    mod.c_headers[(n + 63) // 64, 64](o, w, n)
    i = np.arange(n)
    assert np.array_equal(o, (i % 7 - 3 + 1 + 2 + 1).astype(np.int32))
    assert np.array_equal(w, (2**32 - 1 + i).astype(np.uint64))


def test_missing_brace_points_at_the_users_line():
    with pytest.raises(ql.CompileError, match=MISSING_BRACE_MESSAGE) as e:
        ql.compile(MISSING_BRACE_KERNEL, device="cpu")
    assert "failed to compile for the CPU device" in str(e.value)


def test_stray_brace_is_the_compilers_own_message():
    # the compiler already points at the user's line: nothing added
    with pytest.raises(ql.CompileError) as e:
        ql.compile(STRAY_BRACE_KERNEL, device="cpu")
    assert "line 4" in str(e.value) and "never closed" not in str(e.value)


def test_brace_analysis():
    assert compile_hints.braces(MISSING_BRACE_KERNEL)[0] == [(1, 0)]
    assert compile_hints.braces(MISSING_BRACE_KERNEL)[2] == ((3, 4), 5)
    assert compile_hints.unclosed_message(STRAY_BRACE_KERNEL) == "line 4: this '}' closes no '{'"
    # braces in comments, strings, characters and directives do not count
    text = ('// {\n/* { */ const char *s = "{{"; char c = \'{\';\n#define OPEN {\n'
            'R"x({)x";\nvoid f() {}\n')
    assert compile_hints.braces(text) == ([], [], None)
    assert compile_hints.unclosed_message(text) is None

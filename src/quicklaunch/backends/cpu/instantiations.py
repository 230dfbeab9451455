"""Explicit instantiations of kernel templates on the CPU device."""
from __future__ import annotations

import re

from ...signature import strip_comments

_EXPLICIT_INSTANTIATION = re.compile(r"\btemplate\s+(?!<)[^;{}<]*?\b(__global__)\b")


def rewrite_explicit_instantiations(source: str) -> str:
    """`template __global__ void k<128>(float *);` instantiates a kernel; on
    the CPU `__global__` means `inline`, which an explicit instantiation may
    not say, so the word is blanked there (same length: lines and columns
    stay). The instantiation then compiles, and the scan has already listed
    `k<128>` as one of the module's kernels."""
    code = strip_comments(source)
    out, last = [], 0
    for m in _EXPLICIT_INSTANTIATION.finditer(code):
        out += [source[last:m.start(1)], " " * len("__global__")]
        last = m.end(1)
    out.append(source[last:])
    return "".join(out)

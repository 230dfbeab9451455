"""The CUDA version a compile targets, as the version macros say it.

NVRTC defines CUDART_VERSION (13050 for CUDA 13.5) and __CUDACC_VER_MAJOR__,
__CUDACC_VER_MINOR__, __CUDACC_VER_BUILD__ itself; CUDA_VERSION comes from
<cuda.h> (with nvcc too), whose stand-in on every device defines it. The CPU device and hiprtc define the same macros with the
same values, so `#if CUDART_VERSION < 3000` takes one path on every device:
the version is that of the NVRTC wheel (nvidia-cuda-nvrtc) when one is
installed, else DEFAULT. QUICKLAUNCH_CUDA_VERSION=12.4 (or 12.4.131) sets it.
A user's own -DCUDART_VERSION=... wins over ours.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

ENV = "QUICKLAUNCH_CUDA_VERSION"
DEFAULT = (12, 8, 0)          # CUDA 12.8, when no NVRTC wheel says otherwise
_WHEELS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu13", "nvidia-cuda-nvrtc-cu12",
           "nvidia-cuda-nvrtc-cu11")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def _parse(text: str):
    m = _VERSION.match(text.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@lru_cache(maxsize=None)
def _from_wheels():
    from importlib.metadata import PackageNotFoundError, version
    for dist in _WHEELS:
        try:
            got = _parse(version(dist))
        except PackageNotFoundError:
            continue
        except Exception:
            continue
        if got is not None:
            return got
    return DEFAULT


def target() -> tuple[int, int, int]:
    """(major, minor, build) of the CUDA the version macros describe."""
    env = os.environ.get(ENV, "")
    if env:
        got = _parse(env)
        if got is not None:
            return got
    return _from_wheels()


def macros() -> dict[str, int]:
    """name -> value, as NVRTC defines them (CUDA_VERSION is <cuda.h>'s, as
    with nvcc: the stand-in cuda.h of every device defines it as CUDART_VERSION)."""
    major, minor, build = target()
    number = major * 1000 + minor * 10
    return {"CUDART_VERSION": number,
            "__CUDACC_VER_MAJOR__": major, "__CUDACC_VER_MINOR__": minor,
            "__CUDACC_VER_BUILD__": build}


def _user_defines(options) -> set[str]:
    names = set()
    options = list(options)
    for i, o in enumerate(options):
        text = o[2:] if o.startswith(("-D", "-U")) and len(o) > 2 else \
            (options[i + 1] if o in ("-D", "-U") and i + 1 < len(options) else "")
        if text:
            names.add(text.split("=", 1)[0].strip())
    return names


def define_options(options=()) -> tuple[str, ...]:
    """-D options for the macros the user's `options` do not define or undefine."""
    own = _user_defines(options)
    return tuple(f"-D{k}={v}" for k, v in macros().items() if k not in own)


def prelude(options=()) -> str:
    """The same as #define lines (each guarded by #ifndef)."""
    own = _user_defines(options)
    return "".join(f"#ifndef {k}\n#define {k} {v}\n#endif\n" for k, v in macros().items()
                   if k not in own)

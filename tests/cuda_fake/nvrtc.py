"""Just enough NVRTC (through ctypes) to make PTX and cubins for the fake
driver's tests. `available()` tells whether the library could be found."""
from __future__ import annotations

import ctypes
import ctypes.util
import os

_lib = None


def _find() -> str | None:
    try:
        import nvidia
        for base in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvrtc"):
                d = os.path.join(base, sub, "lib")
                if os.path.isdir(d):
                    for f in sorted(os.listdir(d)):
                        if f.startswith("libnvrtc.so"):
                            return os.path.join(d, f)
    except ImportError:
        pass
    return ctypes.util.find_library("nvrtc")


def library():
    global _lib
    if _lib is None:
        path = _find()
        if path is None:
            raise OSError("libnvrtc not found (pip install nvidia-cuda-nvrtc)")
        _lib = ctypes.CDLL(path)
    return _lib


def available() -> bool:
    try:
        library()
        return True
    except OSError:
        return False


def compile(src: str, arch: str = "sm_90", names=(), options=()):
    """Compiles src; returns (ptx bytes NUL-terminated, cubin bytes, {name expression: lowered name})."""
    L = library()
    prog = ctypes.c_void_p()
    assert L.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"fake_test.cu", 0, None, None) == 0
    try:
        for n in names:
            assert L.nvrtcAddNameExpression(prog, n.encode()) == 0
        opts = [f"-arch={arch}".encode(), *[o.encode() for o in options]]
        rc = L.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        L.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        L.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            raise RuntimeError(f"NVRTC failed ({rc}):\n{log.value.decode(errors='replace')}")
        out = []
        for kind in ("PTX", "CUBIN"):
            getattr(L, f"nvrtcGet{kind}Size")(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            assert getattr(L, f"nvrtcGet{kind}")(prog, buf) == 0
            out.append(buf.raw)
        lowered = {}
        for n in names:
            p = ctypes.c_char_p()
            assert L.nvrtcGetLoweredName(prog, n.encode(), ctypes.byref(p)) == 0
            lowered[n] = p.value.decode()
        return out[0], out[1], lowered
    finally:
        L.nvrtcDestroyProgram(ctypes.byref(prog))

"""Builds the fake CUDA driver, fake_libcuda.c (which includes fake_streams.c;
both use fake_cuda.h), into a shared library."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("fake_libcuda.c")  # one translation unit
LIB_NAME = "libcuda.so.1"


def find_cc() -> str | None:
    """The C compiler to use: $CC if set, else gcc; None if there is none."""
    cc = os.environ.get("CC") or "gcc"
    return shutil.which(cc)


def build_fake_libcuda(out_dir) -> Path:
    """Compiles fake_libcuda.c into out_dir/libcuda.so.1 (every call builds;
    nothing is cached) and returns its path. Raises RuntimeError with the
    compiler's output if the build fails, FileNotFoundError without gcc.
    $FAKE_CUDA_CFLAGS adds compiler flags (e.g. sanitizers)."""
    cc = find_cc()
    if cc is None:
        raise FileNotFoundError("no C compiler (gcc, or $CC) to build the fake CUDA driver")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / LIB_NAME
    extra = os.environ.get("FAKE_CUDA_CFLAGS", "").split()  # e.g. -fsanitize=address
    cmd = [cc, "-O1", "-g", "-shared", "-fPIC", "-pthread", "-Wall", "-Wextra", *extra,
           "-o", str(lib), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"building the fake CUDA driver failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return lib

"""The host C++ compiler that builds CPU kernel modules.

Found once per process: ``$CXX`` (which may carry flags), else ``g++``, else
``clang++``. Its identity (resolved path and ``--version`` banner) is part of
every cache key, so upgrading the compiler recompiles. Also here: the command
lines of a build and of the preprocessor-only scan, running them, and the
CompileError of a run that failed (:func:`compile_error`, for both).
"""
from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import CompileError
from ...kinds import HEADER as KINDS_HEADER

INCLUDE_DIR = Path(__file__).with_name("include")
# What kernel modules include: the shim directory, and the kind table
# (kinds.h), which the shim's ql_cpu_abi.h includes by its relative path.
SHIM_HEADERS = (INCLUDE_DIR, KINDS_HEADER)

# -O3 -march=native: kernels are built for this machine and cached per machine
# (the compiler's identity and these flags are in the key). -ffp-contract=fast
# matches CUDA's default FMA contraction; -fno-math-errno lets sqrtf inline as
# on a GPU; -fno-ipa-icf keeps two identical kernels at two addresses;
# -fvisibility=hidden keeps each module's statics (__shared__ in inline and
# template kernels) its own instead of process-wide unique symbols.
RELEASE_FLAGS = ("-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno")
DEBUG_FLAGS = ("-O0", "-g", "-DQL_DEBUG=1")
COMMON_FLAGS = ("-std=c++17", "-fPIC", "-shared", "-fno-ipa-icf", "-fvisibility=hidden",
                "-fvisibility-inlines-hidden", "-fno-exceptions",
                "-fno-rtti", "-pthread", "-w")


@dataclass(frozen=True)
class Compiler:
    argv: tuple[str, ...]   # the command and any flags that came with $CXX
    path: str               # resolved executable
    version: str            # first line of --version

    @property
    def identity(self) -> str:
        return f"{self.path}\n{self.version}\n{' '.join(self.argv[1:])}"


@functools.lru_cache(maxsize=None)
def _probe(cxx_env: str | None) -> Compiler:
    tried = []
    candidates = [shlex.split(cxx_env)] if cxx_env else [["g++"], ["clang++"]]
    for argv in candidates:
        if not argv:
            continue
        tried.append(argv[0])
        path = shutil.which(argv[0])
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout:
            return Compiler(tuple(argv), os.path.realpath(path), out.stdout.splitlines()[0])
    where = f"$CXX={cxx_env!r}" if cxx_env else "g++ and clang++ on PATH"
    raise CompileError(
        f"no C++ compiler found for the CPU device (tried {where}: {', '.join(tried)}); "
        "install g++ (e.g. 'apt-get install g++') or set CXX to a C++17 compiler")


def find_compiler() -> Compiler:
    """The host C++ compiler, probed once per value of ``$CXX``."""
    return _probe(os.environ.get("CXX") or None)


@functools.lru_cache(maxsize=1)
def headers_digest_material() -> bytes:
    """The contents of every header a kernel module can include from the
    package (the shim directory, its subdirectories, kinds.h), for cache
    keys (read once per process)."""
    paths = sorted(p for p in INCLUDE_DIR.rglob("*") if p.is_file())
    parts = [p.relative_to(INCLUDE_DIR).as_posix().encode() + b"\0" + p.read_bytes()
             for p in paths]
    parts.append(b"../../../kinds.h\0" + KINDS_HEADER.read_bytes())
    return b"\0\0".join(parts)


def build_command(compiler: Compiler, source: Path, output: Path, options: tuple[str, ...],
                  debug: bool) -> list[str]:
    flags = DEBUG_FLAGS if debug else RELEASE_FLAGS
    return [compiler.path, *compiler.argv[1:], *COMMON_FLAGS, *flags, "-isystem", str(INCLUDE_DIR),
            *options, "-o", str(output), str(source)]


def scan_command(compiler: Compiler, source: Path, options: tuple[str, ...]) -> list[str]:
    """Preprocess only. The shim is an ordinary include directory here: as
    a system one, every expansion of its macros on a user's line would be
    wrapped in line markers, splitting the line (scan.py drops the shim's
    own lines by their path instead)."""
    return [compiler.path, *compiler.argv[1:], "-std=c++17", "-E", "-DQL_SCAN_KERNELS=1",
            f"-I{INCLUDE_DIR}", *options, str(source)]


def run_preprocessor(command: list[str], cwd: Path) -> tuple[int, str, str]:
    """(status, preprocessed text, diagnostics)."""
    try:
        out = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return 1, "", "the preprocessor ran for more than 600 s and was stopped"
    except OSError as exc:
        return 1, "", f"the preprocessor could not be started: {exc}"
    return out.returncode, out.stdout, out.stderr.strip()


def run_compiler(command: list[str], cwd: Path) -> tuple[int, str]:
    try:
        out = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return 1, "the compiler ran for more than 600 s and was stopped"
    except OSError as exc:
        return 1, f"the compiler could not be started: {exc}"
    return out.returncode, (out.stderr + out.stdout).strip()


_MAX_LOG = 8000


def _numbered(source: str) -> str:
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def compile_error(what: str, log: str, source: str, options, command, origin: str,
                  filename: str, first_line: int = 1) -> CompileError:
    """The CompileError of a failed compile or preprocess: the compiler's log
    (its locations in the user's file as "line N:M:"), the numbered source and
    the options."""
    shown = log if len(log) <= _MAX_LOG else log[:_MAX_LOG] + "\n[... log truncated]"
    # Point at the user's lines: "kernel.cu:12:5: error" -> "line 12:5: error".
    # Only the user's source itself: "reduction_kernel.cu:551:20" or
    # "inc/kernel.cu:3:1" is another file and keeps its name.
    shown = re.sub(r"(?<![\w./\\-])" + re.escape(filename) + r":(\d+):(\d+):",
                   lambda m: f"line {int(m.group(1)) - first_line + 1}:{m.group(2)}:", shown)
    message = (f"{what}{origin}\n\ncompiler output:\n{shown}\n\nsource:\n{_numbered(source)}"
               f"\n\noptions: {list(options)}")
    return CompileError(message, log=log, source=source, options=tuple(options),
                        command=tuple(command))

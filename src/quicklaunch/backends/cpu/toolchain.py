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
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import CompileError
from ...kinds import HEADER as KINDS_HEADER
from ...options import check_cpu

INCLUDE_DIR = Path(__file__).with_name("include")
# The launcher's headers that ql_cpu_abi.h includes by their paths relative
# to it: the kind table and what a direct entry reads (ql_pyargs.h).
PYARGS_HEADER = KINDS_HEADER.with_name("ql_pyargs.h")
PACKAGE_HEADERS = (KINDS_HEADER, PYARGS_HEADER)
# What kernel modules include: the shim directory and those two.
SHIM_HEADERS = (INCLUDE_DIR, *PACKAGE_HEADERS)

# -O3 -march=native: kernels are built for this machine and cached per CPU
# (the compiler's identity, with -march=native resolved to this host's CPU
# features by resolved_target(), and these flags are in the key). -ffp-contract=fast
# matches CUDA's default FMA contraction; -fno-math-errno lets sqrtf inline as
# on a GPU; -fno-ipa-icf keeps two identical kernels at two addresses;
# -fvisibility=hidden keeps each module's statics (__shared__ in inline and
# template kernels) its own instead of process-wide unique symbols.
RELEASE_FLAGS = ("-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno")
DEBUG_FLAGS = ("-O0", "-g", "-DQL_DEBUG=1")
# A memcheck build (debug == "memcheck": memcheck.py) is a debug build whose
# loads and stores call the module's own checker first (ql_memcheck.h).
MEMCHECK_FLAGS = ("-fsanitize=kernel-address", "--param", "asan-instrumentation-with-call-threshold=0",
                  "--param", "asan-stack=0", "--param", "asan-globals=1",
                  "-fno-sanitize-address-use-after-scope",
                  "-DQL_MEMCHECK=1", "-DQL_ABORTS=1", "-include", "ql_memcheck.h")
COMMON_FLAGS = ("-std=c++17", "-fPIC", "-shared", "-fno-ipa-icf", "-fvisibility=hidden",
                "-fvisibility-inlines-hidden", "-fno-exceptions",
                "-fno-rtti", "-pthread", "-w")
# The flags above are GCC's spelling on x86-64. What a given compiler and
# architecture is handed instead is chosen by probing that compiler once per
# process (an empty C++ file compiled with -Werror and the candidate flag;
# see compiler_flags()):
#  - -fno-ipa-icf is GCC's; clang has no compile-time identical-code folding
#    (two identical kernels keep two addresses without it), so where refused
#    it is left out;
#  - -march=native is spelled -mcpu=native by clang on aarch64 (tried first
#    there, -march=native first elsewhere);
#  - memcheck builds are GCC's: ql_memcheck.h is written against GCC's
#    outline kernel-address instrumentation (its __asan_* callbacks and
#    global descriptors); under clang a memcheck build is a CompileError.
OPTIONAL_FLAGS = ("-fno-ipa-icf",)
# Integer division by zero (docs/cpu-device.md): undefined in CUDA, and no
# trap on a GPU. Debug builds make it a LaunchError on every host: x86-64's
# divide instruction faults (SIGFPE) by itself; elsewhere (aarch64's returns
# 0) the compiler adds a check that traps (SIGILL or SIGTRAP), in GCC's or
# clang's spelling, whichever the compiler takes.
DIVIDE_CHECKS = (("-fsanitize=integer-divide-by-zero", "-fsanitize-trap=integer-divide-by-zero"),
                 ("-fsanitize=integer-divide-by-zero", "-fsanitize-undefined-trap-on-error"))
TRAPPING_DIVIDE = ("x86_64", "amd64", "i386", "i486", "i586", "i686")
NATIVE_FLAGS = ("-march=native", "-mcpu=native")


@dataclass(frozen=True)
class Compiler:
    argv: tuple[str, ...]   # the command and any flags that came with $CXX
    path: str               # resolved executable
    version: str            # first line of --version
    # The command as found on PATH, symlinks kept: clang picks its C or C++
    # driver from the name it runs by (clang++ -> clang resolved would link
    # without libstdc++: "undefined symbol: __cxa_thread_atexit").
    exe: str = ""

    @property
    def command(self) -> str:
        return self.exe or self.path

    @property
    def identity(self) -> str:
        """What a cache key holds of the compiler: its path, version, flags
        and the target it resolves ``-march=native`` to on this host (so a
        cache shared between machines recompiles on one whose CPU differs,
        instead of loading code built for instructions it lacks)."""
        return (f"{self.path}\n{self.version}\n{' '.join(self.argv[1:])}\n"
                f"{resolved_target(self)}")


def _machine() -> str:
    import platform
    return platform.machine().lower()


@functools.lru_cache(maxsize=None)
def _accepts(argv: tuple[str, ...], path: str, flags: tuple[str, ...]) -> bool:
    """Whether the compiler takes ``flags`` without an error or a warning
    (compiling an empty C++ file with -Werror; cached per process)."""
    command = [path, *argv[1:], "-x", "c++", "-std=c++17", "-fsyntax-only", "-Werror",
               *flags, os.devnull]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0


def accepts(compiler: Compiler, *flags: str) -> bool:
    """Whether ``compiler`` accepts ``flags`` (probed once per process)."""
    return _accepts(compiler.argv, compiler.command, tuple(flags))


def native_flag(compiler: Compiler, machine: str | None = None) -> str:
    """The compiler's spelling of "build for this CPU": -march=native, or
    -mcpu=native (clang on aarch64), whichever it accepts, in the order the
    architecture prefers (aarch64: -mcpu first)."""
    machine = machine or _machine()
    order = NATIVE_FLAGS[::-1] if machine in ("aarch64", "arm64") else NATIVE_FLAGS
    for flag in order:
        if accepts(compiler, flag):
            return flag
    return order[0]


def common_flags(compiler: Compiler) -> tuple[str, ...]:
    """COMMON_FLAGS less the optional ones ``compiler`` refuses."""
    return tuple(f for f in COMMON_FLAGS if f not in OPTIONAL_FLAGS or accepts(compiler, f))


def debug_flags(compiler: Compiler, machine: str | None = None) -> tuple[str, ...]:
    """DEBUG_FLAGS, with a trapping integer-divide-by-zero check where the
    architecture's divide instruction does not trap by itself."""
    machine = machine or _machine()
    if machine in TRAPPING_DIVIDE:
        return DEBUG_FLAGS
    for flags in DIVIDE_CHECKS:
        if accepts(compiler, *flags):
            return DEBUG_FLAGS + flags
    return DEBUG_FLAGS


def release_flags(compiler: Compiler) -> tuple[str, ...]:
    """RELEASE_FLAGS with the compiler's spelling of -march=native."""
    native = native_flag(compiler)
    return tuple(native if f == "-march=native" else f for f in RELEASE_FLAGS)


def memcheck_flags(compiler: Compiler) -> tuple[str, ...]:
    """The memcheck flags (GCC's); a CompileError for clang, or a compiler
    that does not take them."""
    if "clang" in compiler.version.lower():
        raise CompileError(f"memcheck builds need g++: the checker (ql_memcheck.h) is built on "
                           f"GCC's outline -fsanitize=kernel-address instrumentation, and the "
                           f"host compiler is {compiler.version} ({compiler.path}); set "
                           f"CXX=g++ for memcheck builds")
    probe = tuple(f for f in MEMCHECK_FLAGS if not f.startswith(("-D", "-include", "ql_")))
    if accepts(compiler, *probe):
        return MEMCHECK_FLAGS
    raise CompileError(f"memcheck builds need a g++ that takes -fsanitize=kernel-address with "
                       f"its --param asan-* options; {compiler.path} ({compiler.version}) "
                       f"does not")


def resolved_target(compiler: Compiler) -> str:
    """The host's CPU as ``compiler`` resolves ``-march=native``: the
    architecture, tuning and every -m feature flag (and cache-size params)
    its driver hands the compiler proper (``g++ -###``'s cc1plus line;
    clang's -target-cpu/-target-feature). Computed once per process."""
    return _resolve_target(compiler.argv, compiler.path, native_flag(compiler))


_TARGET_TOKEN = re.compile(r"^(-march=|-mtune=|-mcpu=|-m[a-z0-9][\w.-]*$)")
_TARGET_PAIRED = {"--param", "-target-cpu", "-target-feature", "-tune-cpu"}


def _target_tokens(driver_output: str) -> list[str]:
    """The target flags of the compiler-proper command line in a ``-###``
    run's output (gcc: the cc1plus line; clang: the "-cc1" line)."""
    for line in driver_output.splitlines():
        try:
            argv = shlex.split(line)
        except ValueError:
            continue
        if not argv or not (argv[0].endswith(("cc1plus", "cc1")) or "-cc1" in argv[1:2]):
            continue
        picked, i = [], 1
        while i < len(argv):
            tok = argv[i]
            if tok in _TARGET_PAIRED and i + 1 < len(argv):
                picked += [tok, argv[i + 1]]
                i += 2
                continue
            if _TARGET_TOKEN.match(tok):
                picked.append(tok)
            i += 1
        return picked
    return []


def _cpuinfo_flags() -> str:
    """The fallback: the kernel's view of this CPU (model and feature flags)."""
    import platform
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "flags", "Features", "CPU part") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        pass
    return f"{platform.machine()} " + " | ".join(f"{k}: {v}" for k, v in sorted(fields.items()))


@functools.lru_cache(maxsize=None)
def _resolve_target(argv: tuple[str, ...], path: str, native: str = "-march=native") -> str:
    command = [path, *argv[1:], "-###", native, "-x", "c++", "-E", os.devnull]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
        tokens = _target_tokens(out.stderr + "\n" + out.stdout) if out.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        tokens = []
    if tokens:
        return "native: " + " ".join(tokens)
    return "native (unresolved by the compiler): " + _cpuinfo_flags()


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
            return Compiler(tuple(argv), os.path.realpath(path), out.stdout.splitlines()[0],
                            os.path.abspath(path))
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
    package (the shim directory, its subdirectories, kinds.h, ql_pyargs.h),
    for cache keys (read once per process)."""
    paths = sorted(p for p in INCLUDE_DIR.rglob("*") if p.is_file())
    parts = [p.relative_to(INCLUDE_DIR).as_posix().encode() + b"\0" + p.read_bytes()
             for p in paths]
    parts += [b"../../../" + h.name.encode() + b"\0" + h.read_bytes() for h in PACKAGE_HEADERS]
    return b"\0\0".join(parts)


def host_options(options: tuple[str, ...]) -> tuple[str, ...]:
    """The options as the host compiler is given them: checked against the
    CPU device's allow-list (quicklaunch/options.py; a refused one is a
    CompileError naming it, before anything runs or is looked up in the
    cache), NVRTC spellings it maps translated (--use_fast_math)."""
    return check_cpu(options)


def build_command(compiler: Compiler, source: Path, output: Path, options: tuple[str, ...],
                  debug: bool) -> list[str]:
    flags = debug_flags(compiler) if debug else release_flags(compiler)
    if debug == "memcheck":
        flags += memcheck_flags(compiler)
    return [compiler.command, *compiler.argv[1:], *common_flags(compiler), *flags,
            "-isystem", str(INCLUDE_DIR),
            *host_options(options), "-o", str(output), str(source)]


def scan_command(compiler: Compiler, source: Path, options: tuple[str, ...]) -> list[str]:
    """Preprocess only. The shim is an ordinary include directory here: as
    a system one, every expansion of its macros on a user's line would be
    wrapped in line markers, splitting the line (scan.py drops the shim's
    own lines by their path instead)."""
    return [compiler.command, *compiler.argv[1:], "-std=c++17", "-E", "-DQL_SCAN_KERNELS=1",
            f"-I{INCLUDE_DIR}", *host_options(options), str(source)]


TIMEOUT_ENV = "QUICKLAUNCH_COMPILE_TIMEOUT"
DEFAULT_TIMEOUT = 600.0


def compile_timeout() -> float:
    """Seconds one compiler or preprocessor run may take:
    $QUICKLAUNCH_COMPILE_TIMEOUT, else 600."""
    value = os.environ.get(TIMEOUT_ENV, "")
    try:
        seconds = float(value) if value else DEFAULT_TIMEOUT
    except ValueError:
        raise CompileError(f"{TIMEOUT_ENV}={value!r}: expected a number of seconds") from None
    if not seconds > 0:
        raise CompileError(f"{TIMEOUT_ENV}={value!r}: expected a positive number of seconds")
    return seconds


def _group_members(pgid: int) -> list[int]:
    """The pids of the processes in group pgid ([] where /proc cannot say)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
                if int(stat[stat.rindex(b")") + 2:].split()[2]) == pgid:
                    out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _end_group(proc: subprocess.Popen) -> None:
    """Kill the run's whole process group (the driver and what it started:
    cc1plus, as, ld) and reap the driver. The driver's children go first, so
    that the driver reaps them (killed with it, they would be orphans, left
    as zombies where init does not reap); then the group, whatever is left."""
    for pid in _group_members(proc.pid):
        if pid != proc.pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    try:
        proc.wait(timeout=1)
    except BaseException:
        pass
    # While the driver is unreaped, or a member lives, the group id is ours.
    if proc.poll() is None or _group_members(proc.pid):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for _ in range(2):
        try:
            proc.communicate(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue
        except BaseException:
            break
    try:
        proc.wait(timeout=10)
    except BaseException:
        pass


def _run(command: list[str], cwd: Path, what: str) -> tuple[int, str, str]:
    """(status, stdout, stderr) of one compiler run in a process group of its
    own (start_new_session): whatever ends the run (success, a timeout,
    Ctrl-C, any exception) leaves none of its processes behind."""
    timeout = compile_timeout()
    try:
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="surrogateescape", start_new_session=True)
    except OSError as exc:
        return 1, "", f"the {what} could not be started: {exc}"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        return 1, "", (f"the {what} ran for more than {timeout:g} s and was stopped "
                       f"(${TIMEOUT_ENV} sets the limit)")
    except BaseException:
        _end_group(proc)
        raise
    return proc.returncode, out, err


def run_preprocessor(command: list[str], cwd: Path) -> tuple[int, str, str]:
    """(status, preprocessed text, diagnostics)."""
    status, out, err = _run(command, cwd, "preprocessor")
    return status, out, err.strip()


def run_compiler(command: list[str], cwd: Path) -> tuple[int, str]:
    status, out, err = _run(command, cwd, "compiler")
    return status, (err + out).strip()


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

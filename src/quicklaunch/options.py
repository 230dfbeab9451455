"""Which compile options each device's compiler is handed.

Options are checked against an allow-list per device before anything runs
(docs/cpu-device.md, docs/cuda-device.md, docs/hip-device.md, "Compile
options"): defines and undefines, include paths and forced includes, the
language standard, optimisation, debug and warning flags, and the few
code-generation flags users need. Anything else is a CompileError naming the
option: the host compiler in particular would otherwise run programs for an
option (``-fplugin=``, ``-wrapper``, ``-B``, ``-specs=``) or write files
(``-o``, ``-save-temps``).

The escape hatch, for experts: ``QUICKLAUNCH_UNCHECKED_OPTIONS=1`` in the
environment hands every option to the compiler as it is, unchecked, at the
user's own risk (the options are in the compile cache key either way).
"""
from __future__ import annotations

import os
import re

from .errors import CompileError

__all__ = ["UNCHECKED_ENV", "unchecked", "check_cpu", "check_nvrtc", "check_hiprtc"]

UNCHECKED_ENV = "QUICKLAUNCH_UNCHECKED_OPTIONS"


def unchecked() -> bool:
    """Whether the escape hatch is open ($QUICKLAUNCH_UNCHECKED_OPTIONS set,
    not "0")."""
    return os.environ.get(UNCHECKED_ENV, "") not in ("", "0")


class _Rules:
    """One device's allow-list. ``separate``: options whose value may be the
    next argument (``-D NAME``) or joined (``-DNAME``, ``-D=...`` is not
    special); ``flags``: regular expressions a whole option must match;
    ``refused``: (regular expression, reason) pairs, checked first, for the
    options worth a specific word; ``mapped``: option -> what the compiler is
    given instead (a tuple, possibly empty)."""

    def __init__(self, device: str, doc: str, separate: tuple[str, ...], flags: list[str],
                 refused: list[tuple[str, str]], mapped: dict[str, tuple[str, ...]] | None = None,
                 summary: str = ""):
        self.device, self.doc, self.summary = device, doc, summary
        self.separate = tuple(sorted(separate, key=len, reverse=True))  # longest prefix first
        self.flags = re.compile("|".join(f"(?:{f})" for f in flags))
        self.refused = [(re.compile(p), why) for p, why in refused]
        self.mapped = mapped or {}

    def refusal(self, opt: str, why: str, source, options) -> CompileError:
        return CompileError(
            f"option {opt!r} is refused for the {self.device}: {why}. The {self.device} takes "
            f"{self.summary} (see {self.doc}, 'Compile options'); to hand options to the "
            f"compiler unchecked, as they are and at your own risk, set {UNCHECKED_ENV}=1",
            source=source, options=tuple(options))

    def check(self, options, source: str = "") -> tuple[str, ...]:
        options = tuple(options)
        if unchecked():
            return options
        out: list[str] = []
        i = 0
        while i < len(options):
            opt = options[i]
            i += 1
            if opt in self.mapped:
                out.extend(self.mapped[opt])
                continue
            for pattern, why in self.refused:
                if pattern.fullmatch(opt):
                    raise self.refusal(opt, why, source, options)
            prefix = next((p for p in self.separate if opt.startswith(p)), None)
            if prefix is not None:
                if opt == prefix and prefix.endswith("="):
                    raise self.refusal(opt, "it needs a value after the '='", source, options)
                if opt == prefix:                        # -D NAME: the value follows
                    if i >= len(options) or not options[i]:
                        raise self.refusal(opt, "it needs a value (the next option)", source,
                                           options)
                    out += [opt, options[i]]
                    i += 1
                else:
                    out.append(opt)
                continue
            if self.flags.fullmatch(opt):
                out.append(opt)
                continue
            if not opt.startswith("-"):
                why = ("a response file (@file) could hold any option" if opt.startswith("@")
                       else "it is not an option (an input file?); the source is the only input")
            else:
                why = "it is not among its compile options"
            raise self.refusal(opt, why, source, options)
        return tuple(out)


# Shared by the gcc-like compilers (g++/clang++ on the CPU, hiprtc's clang).
_RUNS = "it makes the compiler run or load another program"
_OUTPUT = "it changes what the compiler writes, and where, which quicklaunch decides"
_LINK = "it is a linker option; quicklaunch does the linking"
_GCC_REFUSED = [
    (r"-o.*|--output(=.*)?", "it names the output file, which quicklaunch chooses"),
    (r"-fplugin(-arg-.*)?=.*|-fpass-plugin=.*|-wrapper|-B.*|--?specs(=.*)?|-no-integrated-cpp"
     r"|-Xclang|-mllvm|-Xpreprocessor|-Xassembler|-Xarch.*|-Wp,.*|-Wa,.*|-load", _RUNS),
    (r"-[ESc]|-M.*|-save-temps(=.*)?|-fdump-.*|-fopt-info.*=.*|-f(no-)?syntax-only|-v|-###"
     r"|--help.*|--version|-x|-x.+|-fsyntax-only|-pipe|-dumpbase.*|-aux-info", _OUTPUT),
    (r"-Wl,.*|-Xlinker|-l.*|-L.*|-shared|-static.*|-nostdlib.*|-nostartfiles|-rdynamic"
     r"|-pie|-no-pie|-fuse-ld=.*|-rpath.*", _LINK),
    (r"--?sysroot(=.*)?|-isysroot.*|-iprefix.*|-iwithprefix.*|-nostdinc.*|--param.*"
     r"|-fsanitize.*|-fprofile.*|-fcoverage.*|--coverage|-ftest-coverage|-fopenmp(=.*)?"
     r"|-fexceptions|-frtti|-fPIE|-fpie|-fno-PIC|-fno-pic",
     "it is not among its compile options (it changes how the module is built, linked or "
     "loaded)"),
]
_STD_OLD = (r"--?std=(c|gnu)\+\+(98|03|0x|11|1y|14)",
            "the CUDA shim needs C++17 or newer (-std=c++17, c++20, c++23, gnu++...)")
_MATH = ("fast-math|math-errno|finite-math-only|associative-math|reciprocal-math|signed-zeros"
         "|trapping-math|rounding-math|unsafe-math-optimizations|cx-limited-range"
         "|single-precision-constant|honor-infinities|honor-nans|approx-func")
_CODEGEN = ("unroll-loops|unroll-all-loops|peel-loops|strict-aliasing|tree-vectorize"
            "|tree-loop-vectorize|tree-slp-vectorize|vectorize|slp-vectorize"
            "|omit-frame-pointer|inline|inline-functions|inline-small-functions|wrapv|trapv"
            "|permissive|builtin|split-loops|gcse|openmp-simd|semantic-interposition"
            "|strict-overflow|elide-constructors|fast-math|diagnostics-color"
            "|show-column|caret-diagnostics|color-diagnostics|ms-extensions|char8_t"
            "|operator-names|threadsafe-statics|stack-protector|stack-protector-strong")
_GCC_FLAGS = [
    r"-O[0-3sgz]?|-Ofast",
    r"--?std=(c|gnu)\+\+(17|1z|20|2a|23|2b|26|2c)",
    r"-g|-g[0-3]|-ggdb[0-3]?|-gdwarf(-[2-5])?|-gline-tables-only|-gno-.*",
    r"-w|-pedantic|-pedantic-errors|-pthread",
    r"-W(?![lap],)[A-Za-z0-9][\w\-=+.]*",                  # -Wall, -Werror=..., not -Wl,
    rf"-f(no-)?({_MATH}|{_CODEGEN})",
    r"-ffp-contract=(fast|on|off|fast-honor-pragmas)|-fexcess-precision=(fast|standard|16)"
    r"|-ffp-model=(fast|precise|strict)|-fdenormal-fp-math(-f32)?=[\w,-]+",
    r"-fmax-errors=\d+|-ferror-limit=\d+|-ftemplate-depth=\d+|-fconstexpr-depth=\d+"
    r"|-fconstexpr-loop-limit=\d+|-fconstexpr-ops-limit=\d+|-fconstexpr-steps=\d+"
    r"|-fdiagnostics-color=(auto|always|never)|-fvect-cost-model=(unlimited|dynamic|cheap"
    r"|very-cheap)|-fopt-info(-[\w-]+)?|-Rpass(-missed|-analysis)?=[\w.*|-]+",
    r"-march=[\w.+-]+|-mtune=[\w.+-]+|-mcpu=[\w.+-]+|-mprefer-vector-width=(128|256|512|none)"
    r"|-mfpmath=(sse|387|both|sse,387)",
]
_GCC_SEPARATE = ("-D", "-U", "-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros")

CPU = _Rules(
    "CPU device", "docs/cpu-device.md", _GCC_SEPARATE,
    _GCC_FLAGS + [r"-m(no-)?(?!x32$|16$|32$|64$)[a-z][a-z0-9.\-]*"],   # -mavx2, -mno-fma
    [_STD_OLD, *_GCC_REFUSED],
    mapped={"--use_fast_math": ("-ffast-math",), "-use_fast_math": ("-ffast-math",),
            "-lineinfo": (), "--generate-line-info": ()},
    summary="-D/-U, -I/-isystem/-iquote/-idirafter/-include/-imacros, -std=c++17 or newer, "
            "-O0..-O3/-Os/-Ofast/-Og, -g, -w and -W warning flags (not -Wl,/-Wa,/-Wp,), "
            "-ffast-math and the other math and loop flags, -ffp-contract=, -march=/-mtune=/"
            "-mavx2-style -m flags, and -arch=sm_XX, --use_fast_math and -lineinfo as on NVRTC")

_BOOL = r"=(true|false)"
NVRTC = _Rules(
    "CUDA device", "docs/cuda-device.md",
    ("-D", "-U", "-I", "-include", "--pre-include=", "--define-macro=", "--undefine-macro=",
     "--include-path="),
    [r"--?std=(c|gnu)\+\+(03|11|14|17|20)",
     r"-G|--device-debug|-lineinfo|--generate-line-info|-dopt=(on|off)|--dopt=(on|off)",
     r"--?use_fast_math|--?ftz" + _BOOL + r"|--?prec-div" + _BOOL + r"|--?prec-sqrt" + _BOOL
     + r"|--?fmad" + _BOOL,
     r"--?maxrregcount=\d+|--?extra-device-vectorization|-default-device"
     r"|--device-as-default-execution-space|--?restrict|--?device-int128",
     r"-w|--disable-warnings|--?Werror=all-warnings|--?diag-(suppress|error|warn)=[\d,\w-]+"
     r"|-err-no|--display-error-number|-no-err-no|--no-display-error-number",
     r"-rdc=false|--relocatable-device-code=false|-dw|--device-w|--?no-source-include"
     r"|--?modify-stack-limit" + _BOOL + r"|--?builtin-move-forward" + _BOOL
     + r"|--?builtin-initializer-list" + _BOOL + r"|--?device-stack-protector" + _BOOL
     + r"|--?split-compile=\d+",
     r"(-Xptxas=?|--ptxas-options=)(-v|--verbose|-O[0-3]|--?warn-on-[\w-]+"
     r"|--?allow-expensive-optimizations(=(true|false))?|--?maxrregcount=\d+)"],
    [(r"-rdc(=true)?|--relocatable-device-code(=true)?|-dc|--device-c|-ewp"
      r"|--extensible-whole-program",
      "quicklaunch loads whole-program code; relocatable device code needs a device link "
      "step it does not do"),
     (r"-dlto|--dlink-time-opt|--gen-opt-lto|-gen-opt-lto|--?optix-ir|--?fdevice-syntax-only",
      "NVRTC would then produce no PTX, which quicklaunch loads and reflects"),
     (r"--?time(=.*)?|--?fdevice-time-trace(=.*)?|--?pch|--?create-pch(=.*)?|--?use-pch(=.*)?"
      r"|--?pch-dir(=.*)?", "it makes NVRTC write or read files of its own"),
     (r"-Xptxas|--ptxas-options",
      "give ptxas options joined (-Xptxas=-v, --ptxas-options=-v); only -v, -O0..-O3, --warn-on-*, --allow-expensive-optimizations and --maxrregcount "
      "pass to ptxas (as -Xptxas=-v or --ptxas-options=-v)")],
    summary="-D/-U/-I/-include (joined or separate) and their long forms, -std=c++03..c++20, "
            "-G, -lineinfo, -dopt=, --use_fast_math, -ftz=, -prec-div=, -prec-sqrt=, -fmad=, "
            "--maxrregcount=, -extra-device-vectorization, -default-device, -restrict, -w, "
            "-Werror=all-warnings, --diag-*=, -err-no, -device-int128, -rdc=false, -dw, "
            "-Xptxas=-v; the architecture is arch=")

HIPRTC = _Rules(
    "HIP device", "docs/hip-device.md", _GCC_SEPARATE,
    _GCC_FLAGS + [r"--?std=(c|gnu)\+\+(11|0x|14|1y)",   # the HIP prelude takes C++11 and 14
                  r"-f(no-)?(gpu-flush-denormals-to-zero|gpu-approx-transcendentals"
                  r"|hip-fp32-correctly-rounded-divide-sqrt|cuda-approx-transcendentals"
                  r"|gpu-allow-device-init|gpu-default-stream=\w+)",
                  r"-m(no-)?(wavefrontsize64|cumode|unsafe-fp-atomics|tgsplit|xnack|sramecc)",
                  r"--?m(no-)?wavefrontsize64"],
    [(r"-fgpu-rdc|--?hip-link|-fgpu-sanitize",
      "quicklaunch loads whole-program code objects; relocatable device code needs a link "
      "step it does not do"), *_GCC_REFUSED],
    summary="-D/-U, -I/-isystem/-include, -std=c++11 or newer, -O0..-O3, -g, -w and -W "
            "warning flags, -ffast-math and the other math flags, -ffp-contract=, "
            "-fgpu-flush-denormals-to-zero, -mwavefrontsize64, -mcumode, -munsafe-fp-atomics; "
            "the architecture is arch=")


def check_cpu(options, source: str = "") -> tuple[str, ...]:
    """The host compiler's options for the user's (the NVRTC-style -arch
    options already taken out), or a CompileError naming a refused one."""
    return CPU.check(options, source)


def check_nvrtc(options, source: str = "") -> tuple[str, ...]:
    return NVRTC.check(options, source)


def check_hiprtc(options, source: str = "") -> tuple[str, ...]:
    return HIPRTC.check(options, source)

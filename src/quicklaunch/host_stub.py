"""The host stub: one real C++ function per kernel, as nvcc gives every
kernel, so that plain gdb can stop where a launch passes to the device.

``ql.compile(..., stub=True)`` (or ``QUICKLAUNCH_STUB=1``, or ``debug=True``)
builds, with the host C++ compiler, a small shared library holding for each
kernel

* the **stub**: a function with the kernel's name (its symbol is the
  kernel's lowered name, ``saxpy`` or ``_Z3addIfEvPT_``; its debug name is
  the kernel's, ``add<float>``, in the kernel's namespaces) and its
  parameters with their names and C types. It rebuilds the parameter array
  from its arguments (``void *args[] = {&a, &x, ...}``, as nvcc's stub does)
  and calls the device's real launch entry (``cuLaunchKernel``,
  ``hipModuleLaunchKernel``, ``ql_cpu_launch``), so a breakpoint in it sees
  the arguments that really launch;
* the **trampoline** ``ql_stub_trampoline_<i>``, with the launch entry's
  signature: the generic launcher calls it in place of the entry (the
  Kernel's ``launch``), it keeps the configuration in a thread-local record
  (nvcc's push/pop of the call configuration), unpacks the parameter block
  into the stub's typed arguments and calls the stub.

So the fast path is unchanged: a stub kernel costs one more indirect call,
the unpacking and the stub's repacking.

Types. Scalars get their C type (the declared one where it is a plain C
spelling or an identifier typedef'd to it, else the kind's); pointers keep
their pointee where it is a C type, a CUDA vector type or a plain struct
name (declared incomplete), else ``void``; structs by value become a struct
of their declared name holding ``size`` bytes at their alignment (gdb shows
its name and bytes); CUDA vector types (``float4``) get their x/y/z/w.

The debug names: C++ cannot spell a function named ``add<float>``, so the
stub is compiled to assembly (``-S -g``), where its DWARF name, a
placeholder identifier, is replaced with the kernel's name; then
assembled. The library is cached in the compile cache (kind ``stub``).
"""
from __future__ import annotations

import ctypes
import os
import re
import tempfile
from pathlib import Path

from . import cache as cache_mod
from . import kinds
from .errors import CompileError

__all__ = ["wanted", "build", "StubLibrary", "stub_source"]

FORMAT = "quicklaunch-host-stub-4"
ENV = "QUICKLAUNCH_STUB"
FLAGS = ("-std=c++17", "-fPIC", "-g", "-O1", "-fno-omit-frame-pointer",
         "-fno-inline", "-fno-ipa-icf", "-fvisibility=hidden", "-fno-exceptions",
         "-fno-rtti", "-w")

_cache = cache_mod.CompileCache()


def _flags(cc) -> list[str]:
    """FLAGS as ``cc`` takes them: -fno-ipa-icf only where accepted (GCC;
    clang has no compile-time folding of identical functions), and -O0 for
    clang, whose -O1 keeps the parameters in registers past the breakpoint
    (gdb's `set var n = 3` there would not change the launch)."""
    from .backends.cpu import toolchain
    clang = "clang" in cc.version.lower()
    return [("-O0" if clang and f == "-O1" else f) for f in FLAGS
            if f not in toolchain.OPTIONAL_FLAGS or toolchain.accepts(cc, f)]

# kind code -> the C type the stub gives a scalar of that kind
_KIND_TYPES = {
    kinds.CODES["I8"]: "signed char", kinds.CODES["I16"]: "short",
    kinds.CODES["I32"]: "int", kinds.CODES["I64"]: "long long",
    kinds.CODES["U8"]: "unsigned char", kinds.CODES["U16"]: "unsigned short",
    kinds.CODES["U32"]: "unsigned int", kinds.CODES["U64"]: "unsigned long long",
    kinds.CODES["F16"]: "__half", kinds.CODES["BF16"]: "__nv_bfloat16",
    kinds.CODES["F32"]: "float", kinds.CODES["F64"]: "double", kinds.CODES["BOOL"]: "bool",
}
_BUILTINS = {
    "char", "signed char", "unsigned char", "short", "short int", "signed short",
    "unsigned short", "unsigned short int", "int", "signed", "signed int", "unsigned",
    "unsigned int", "long", "long int", "signed long", "unsigned long", "unsigned long int",
    "long long", "long long int", "signed long long", "unsigned long long",
    "unsigned long long int", "float", "double", "bool", "void", "long double",
}
_HALF_TYPES = {"__half": "half", "half": "half", "__nv_bfloat16": "bf16",
               "nv_bfloat16": "bf16", "__hip_bfloat16": "bf16", "hip_bfloat16": "bf16"}
_VEC_BASES = {"char": "signed char", "uchar": "unsigned char", "short": "short",
              "ushort": "unsigned short", "int": "int", "uint": "unsigned int",
              "long": "long", "ulong": "unsigned long", "longlong": "long long",
              "ulonglong": "unsigned long long", "float": "float", "double": "double"}
_VEC = re.compile(r"(char|uchar|short|ushort|int|uint|long|ulong|longlong|ulonglong|float|"
                  r"double)([1-4])")
_QUAL = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|class|"
                   r"__grid_constant__)\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*")


def wanted(stub, debug: bool) -> str | None:
    """Whether a compile builds the host stub, and why: "asked" (``stub=True``,
    or ``$QUICKLAUNCH_STUB`` when ``stub`` is None), "debug" (a debug build
    has it unless ``stub=False``), or None."""
    if stub is None:
        stub = os.environ.get(ENV, "") not in ("", "0") or None
    if stub:
        return "asked"
    if stub is None and debug:
        return "debug"
    return None


def _vector_align(base: str, lanes: int, size: int) -> int:
    # CUDA's vector alignments: 2, 4, 8, 16 for the sizes that are powers of
    # two; 3-lane vectors are aligned as their element.
    total = size * lanes
    if lanes == 3:
        return size
    return min(total, 16)


def _special_size(base: str) -> int | None:
    """sizeof a CUDA vector or 16-bit float type as the stub declares it."""
    if base in _HALF_TYPES:
        return 2
    m = _VEC.fullmatch(base)
    if not m:
        return None
    elem = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
            "float": 4}.get(m[1], 8)
    lanes = int(m[2])
    align = _vector_align(m[1], lanes, elem)
    return -(-elem * lanes // align) * align


class _Types:
    """The declarations one stub file needs, and each parameter's type text."""

    def __init__(self):
        self.decls: list[str] = []
        self.named: dict[str, str] = {}    # declared name -> "struct" | typedef target

    def _declare(self, name: str, what: str, text: str) -> bool:
        """Declares `name` once; False when it is already another thing."""
        have = self.named.get(name)
        if have is not None:
            return have == what
        self.named[name] = what
        self.decls.append(text)
        return True

    def _scoped(self, name: str, body: str) -> str:
        *spaces, leaf = name.split("::")
        text = body.replace("@", leaf)
        for ns in reversed([s for s in spaces if s]):
            text = f"namespace {ns} {{ {text} }}"
        return text

    def special(self, base: str) -> str | None:
        """A CUDA vector or 16-bit float type, declared; None for others."""
        if base in _HALF_TYPES:
            self._declare(base, "struct", f"struct {base} {{ unsigned short x; }};")
            return base
        m = _VEC.fullmatch(base)
        if m:
            elem = _VEC_BASES[m[1]]
            lanes = int(m[2])
            size = {"signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2,
                    "int": 4, "unsigned int": 4, "float": 4, "long": 8, "unsigned long": 8,
                    "long long": 8, "unsigned long long": 8, "double": 8}[elem]
            fields = ", ".join("xyzw"[:lanes])
            align = _vector_align(elem, lanes, size)
            self._declare(base, "struct",
                          f"struct alignas({align}) {base} {{ {elem} {fields}; }};")
            return base
        return None

    def scalar(self, ctype: str, kind: int, template: bool) -> str:
        base = " ".join(_QUAL.sub(" ", ctype).split())
        if base in _BUILTINS:
            return base
        target = _KIND_TYPES[kind]
        if target in _HALF_TYPES:
            self.special(target)
            if base in _HALF_TYPES and self.special(base):
                return base
            return target
        if (not template and _IDENT.fullmatch(base) and
                self._declare(base, target, f"typedef {target} {base};")):
            return base
        return target

    def struct(self, ctype: str, size: int, align: int, index: int) -> str:
        base = " ".join(_QUAL.sub(" ", ctype).split()).lstrip(":")
        if _special_size(base) == size:
            return self.special(base)
        body = f"struct alignas({max(align, 1)}) @ {{ unsigned char bytes[{max(size, 1)}]; }};"
        if _QUALIFIED.fullmatch(base) and self._declare(base, "struct", self._scoped(base, body)):
            return base
        name = f"ql_param_{index}_t"
        self._declare(name, "struct", body.replace("@", name))
        return name

    def pointer(self, ctype: str, types: dict[str, str]) -> str:
        text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: types.get(m[0], m[0]), ctype)
        stars = text.count("*")
        head = text.split("*", 1)[0]
        const = " const" if re.search(r"\bconst\b", head) else ""
        base = " ".join(_QUAL.sub(" ", head).split()).lstrip(":")
        base = re.sub(r"^std::", "", base)
        if base in _BUILTINS or self.special(base) is not None:
            pointee = base
        elif _QUALIFIED.fullmatch(base) and self._declare(
                base, "struct", self._scoped(base, "struct @;")):
            pointee = base
        elif _IDENT.fullmatch(base) and self.named.get(base) not in (None, "struct"):
            pointee = base   # a typedef this file made for a scalar
        else:
            pointee, const, stars = "void", const, max(stars, 1)
        return f"{pointee}{const} {'*' * max(stars, 1)}"


def _split_scope(name: str) -> tuple[list[str], str]:
    """``"ns::scale<float>"`` -> (["ns"], "scale<float>"): the scopes
    outside any template argument list."""
    parts, depth, cur = [], 0, ""
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if depth == 0 and name.startswith("::", i):
            parts.append(cur)
            cur = ""
            i += 2
            continue
        cur += ch
        i += 1
    return [p for p in parts if p], cur


_PARAM_NAME = re.compile(r"[A-Za-z_]\w*")


def stub_source(kernels, source: str | None = None) -> tuple[str, dict[str, str]]:
    """(C++ text, {placeholder: debug name}) for `kernels`: (name,
    lowered_name, params) rows, params having .name, .ctype, .size, .align
    and .kind (a code)."""
    from .elements import template_types
    t = _Types()
    bodies, names = [], {}
    for i, (name, lowered, params) in enumerate(kernels):
        template = "<" in name
        types = template_types(source, name) if template else {}
        args = []
        for j, p in enumerate(params):
            if p.kind in kinds.POINTER:
                ty = t.pointer(p.ctype, types)
            elif p.kind == kinds.STRUCT:
                ty = t.struct(re.sub(r"\b[A-Za-z_]\w*\b", lambda m: types.get(m[0], m[0]),
                                     p.ctype), p.size, p.align, len(t.decls))
            elif p.kind in _KIND_TYPES:
                ty = t.scalar(p.ctype, p.kind, template)
            else:
                raise CompileError(f"kernel '{name}': parameter '{p.name}' has no host stub "
                                   f"type (kind {p.kind})")
            pname = p.name if _PARAM_NAME.fullmatch(p.name or "") else f"arg{j}"
            if pname.startswith("ql_"):
                pname = f"{pname}_"
            args.append((ty, pname))
        checks = "".join(f"static_assert(sizeof({ty}) == {p.size}, \"kernel '{name}' "
                         f"parameter {pname}\");\n"
                         for (ty, pname), p in zip(args, params))
        scopes, leaf = _split_scope(name)
        ph = f"ql_host_stub_{i}_{re.sub(r'[^A-Za-z0-9_]', '_', leaf)}"
        names[ph] = leaf
        decl = ", ".join(f"{ty} {n}" for ty, n in args) or "void"
        refs = ", ".join(f"(void *)&{n}" for _, n in args) or "0"
        unpack = ", ".join(f"*({ty} *)ql_params[{j}]" for j, (ty, _) in enumerate(args))
        sym = lowered or name
        stub = (f"__attribute__((noinline, noclone, used)) static int {ph}({decl}) "
                f"__asm__(\"{sym}\");\n"
                f"__attribute__((noinline, noclone, used)) static int {ph}({decl}) {{\n"
                f"    void *ql_args[] = {{{refs}}};\n"
                f"    ql_config *ql_c = ql_stub_record();\n"
                f"    return ql_stub_launch(ql_c->func, ql_c->g[0], ql_c->g[1], ql_c->g[2], "
                f"ql_c->b[0], ql_c->b[1], ql_c->b[2], ql_c->shared, ql_c->stream, ql_args, "
                f"ql_c->extra);\n}}\n")
        for ns in reversed(scopes):
            stub = f"namespace {ns} {{\n{stub}}}\n"
        tramp_call = "::".join([*scopes, ph])
        bodies.append(
            f"{checks}{stub}extern \"C\" __attribute__((visibility(\"default\"))) int "
            f"ql_stub_trampoline_{i}(void *ql_func, unsigned ql_gx, unsigned ql_gy, "
            f"unsigned ql_gz, unsigned ql_bx, unsigned ql_by, unsigned ql_bz, "
            f"unsigned ql_shared, void *ql_stream, void **ql_params, void **ql_extra) {{\n"
            f"    ql_config *ql_c = ql_stub_record();\n"
            f"    ql_c->func = ql_func; ql_c->g[0] = ql_gx; ql_c->g[1] = ql_gy; "
            f"ql_c->g[2] = ql_gz;\n"
            f"    ql_c->b[0] = ql_bx; ql_c->b[1] = ql_by; ql_c->b[2] = ql_bz; "
            f"ql_c->shared = ql_shared;\n"
            f"    ql_c->stream = ql_stream; ql_c->extra = ql_extra;\n"
            f"    return {tramp_call}({unpack});\n}}\n")
    head = (
        "/* quicklaunch host stubs (generated: quicklaunch/host_stub.py) */\n"
        "typedef int (*ql_launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, "
        "unsigned, unsigned, unsigned, void *, void **, void **);\n"
        "struct ql_config { void *func; unsigned g[3], b[3], shared; void *stream; "
        "void **extra; };\n"
        "/* The launch record: quicklaunch._launch's, at ql_stub_tp_off from the thread\n"
        " * pointer (_launch_stub_tls.h: no __tls_get_addr call); this library's own\n"
        " * where that is 0 (default TLS model: no static TLS per module). */\n"
        "static __thread ql_config ql_stub_config_own;\n"
        "static long ql_stub_tp_off;\n"
        "static ql_launch_fn ql_stub_launch;\n"
        "static inline __attribute__((always_inline)) ql_config *ql_stub_record(void) {\n"
        "    char *tp = 0;\n"
        "#if defined(__x86_64__)\n"
        "    __asm__(\"mov %%fs:0, %0\" : \"=r\"(tp));\n"
        "#elif defined(__aarch64__)\n"
        "    __asm__(\"mrs %0, tpidr_el0\" : \"=r\"(tp));\n"
        "#endif\n"
        "    return ql_stub_tp_off ? (ql_config *)(tp + ql_stub_tp_off) : &ql_stub_config_own;\n"
        "}\n"
        "extern \"C\" __attribute__((visibility(\"default\"))) void "
        "ql_stub_init(void *launch, long tp_off) { ql_stub_launch = (ql_launch_fn)launch; "
        "ql_stub_tp_off = tp_off; }\n")
    return head + "\n".join(t.decls) + "\n" + "\n".join(bodies), names


def _compiler():
    """The host C++ compiler (the CPU device's discovery: $CXX, g++,
    clang++), or a CompileError that says what to install."""
    from .backends.cpu import toolchain
    try:
        return toolchain.find_compiler()
    except CompileError as exc:
        raise CompileError(
            f"the host stub (stub=True, {ENV}=1 or debug=True) is built with a host C++ "
            f"compiler, and none was found: {exc}. Install one (e.g. 'apt-get install g++' "
            f"or 'dnf install gcc-c++') or set CXX; or compile without the stub") from None


def _rename(asm: str, names: dict[str, str]) -> str:
    """The placeholders' DWARF names in the assembly -> the kernels' names."""
    def sub(m):
        return '"' + names[m[1]].replace("\\", "\\\\").replace('"', '\\"') + '"'
    return re.sub(r'"(ql_host_stub_\d+_\w*)"', sub, asm)


def _run(cc, args: list[str], cwd: Path, what: str, text: str):
    from .backends.cpu import toolchain
    status, log = toolchain.run_compiler([cc.command, *cc.argv[1:], *args], cwd)
    if status != 0:
        raise CompileError(f"the host stub did not build ({what}): {log[-4000:]}\n"
                           f"generated source:\n{text}")


class StubLibrary:
    """The loaded stub library of one module: ``trampoline(i)`` is the
    address the Kernel launches through."""

    def __init__(self, path: str, launch_entry: int, count: int):
        self.path = path
        self._lib = ctypes.CDLL(path)
        self._lib.ql_stub_init.argtypes = [ctypes.c_void_p, ctypes.c_long]
        self._lib.ql_stub_init.restype = None
        from . import _launch
        self._lib.ql_stub_init(launch_entry, _launch._stub_tls_offset())
        self.trampolines = tuple(
            ctypes.cast(getattr(self._lib, f"ql_stub_trampoline_{i}"), ctypes.c_void_p).value
            for i in range(count))


def build(kernels, launch_entry: int, source: str | None = None) -> StubLibrary:
    """Generates, builds (or finds in the cache) and loads the stub library
    for `kernels` ((name, lowered_name, params) rows) calling
    `launch_entry`."""
    kernels = list(kernels)
    text, names = stub_source(kernels, source)
    cc = _compiler()
    key = cache_mod.cache_key(FORMAT, text, repr(sorted(names.items())), cc.identity,
                              " ".join(_flags(cc)))
    path = _cache.get("stub", key, ".so")
    if path is None:
        # The generated source is kept in the cache beside the library, and
        # the debug info names it there, so gdb's `list` shows the stub.
        try:
            where = str(_cache.put("stub", key, ".cc", text.encode()).parent)
        except OSError:
            where = None
        with tempfile.TemporaryDirectory(prefix="ql-stub-") as tmp:
            d = Path(tmp)
            src = f"{key}.cc"
            (d / src).write_text(text)
            remap = [f"-fdebug-prefix-map={d}={where}"] if where else []
            flags = _flags(cc)
            _run(cc, [*flags, *remap, "-S", "-o", "stub.s", src], d, "compile", text)
            (d / "stub.s").write_text(_rename((d / "stub.s").read_text(), names))
            _run(cc, ["-fPIC", "-shared", "-o", "stub.so", "stub.s"], d, "assemble", text)
            data = (d / "stub.so").read_bytes()
            try:
                path = _cache.put("stub", key, ".so", data)
            except OSError:
                keep = Path(tempfile.mkdtemp(prefix="ql-stub-")) / "stub.so"
                keep.write_bytes(data)
                path = keep
    return StubLibrary(str(path), launch_entry, len(kernels))

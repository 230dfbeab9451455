"""Kernels that leave the process: pickling (and, below, loading binaries).

Pickle
------
A ``Module`` pickles as *how to make it again*: its source, the options and
name expressions ``ql.compile`` was given, the debug / memcheck / stub
switches, and the device's name ("cpu", "cuda:0"). Unpickling calls
``ql.compile`` with those in the receiving process, which finds the module in
the on-disk compile cache when that process shares the cache directory
(``QUICKLAUNCH_CACHE_DIR``, inherited by ``multiprocessing`` children, spawn
included) and compiles it otherwise. A ``Kernel`` pickles as (module, name);
a configured launcher ``k[grid, block, shared_mem]`` as (kernel, config).
Nothing of the device's state travels: buffers, the values of ``__device__``
globals, streams (a launcher configured on a non-default stream is refused).
Modules unpickled in one process are shared: every kernel of one pickled
module comes back on one module object. Module and Kernel reduce themselves
(module.py); the launcher (a C type) is registered with copyreg here. See
docs/loading.md.
"""
from __future__ import annotations

import copyreg
import pickle

from . import _launch

__all__ = ["load"]


def _rebuild_launcher(kernel, grid, block, shared_mem):
    """A configured launcher again: what ``kernel[grid, block, shared_mem]`` gives."""
    return kernel[grid, block, shared_mem]


def _launcher_args(launcher) -> tuple:
    if launcher.stream is not None:
        raise pickle.PicklingError(f"{launcher!r} is configured on a stream; streams do not travel to "
                          f"another process: pickle the kernel (or k[grid, block, shared_mem]) "
                          f"and configure the stream there")
    return (launcher.kernel, launcher.grid, launcher.block, launcher.shared_mem)


def _reduce_launcher(launcher):
    return _rebuild_launcher, _launcher_args(launcher)


_builtin = type(len)


def _reduce_builtin(fn):
    """``k[grid, block]`` is the Launcher's bound builtin method; everything else
    of this type reduces as it always does."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, _launch.Launcher):
        return _rebuild_launcher, _launcher_args(owner)
    return fn.__reduce_ex__(pickle.HIGHEST_PROTOCOL)


copyreg.pickle(_launch.Launcher, _reduce_launcher)
copyreg.pickle(_builtin, _reduce_builtin)


# ---------------------------------------------------------------- ql.load
# Binary loading: a cubin, PTX, fatbin (CUDA) or HIP code object, from a path or
# bytes. Parameters come from what the binary says (PTX .entry declarations:
# sizes, alignments, element types; a cubin's parameter table and a fatbin's
# cubin: sizes; the HIP metadata: sizes, offsets, pointer or value), and a C
# signature given by the user types them, checked against those sizes.

_KINDS = ("cubin", "ptx", "fatbin", "hsaco")
_SCALARS = {  # canonical C type -> (kind tag, size)
    "bool": ("BOOL", 1), "signed char": ("I8", 1), "unsigned char": ("U8", 1),
    "short": ("I16", 2), "short int": ("I16", 2), "unsigned short": ("U16", 2),
    "int": ("I32", 4), "signed": ("I32", 4), "signed int": ("I32", 4),
    "unsigned": ("U32", 4), "unsigned int": ("U32", 4),
    "long": ("I64", 8), "long int": ("I64", 8), "unsigned long": ("U64", 8),
    "long long": ("I64", 8), "long long int": ("I64", 8), "unsigned long long": ("U64", 8),
    "int8_t": ("I8", 1), "uint8_t": ("U8", 1), "int16_t": ("I16", 2), "uint16_t": ("U16", 2),
    "int32_t": ("I32", 4), "uint32_t": ("U32", 4), "int64_t": ("I64", 8),
    "uint64_t": ("U64", 8), "size_t": ("U64", 8), "ptrdiff_t": ("I64", 8),
    "float": ("F32", 4), "double": ("F64", 8), "__half": ("F16", 2), "half": ("F16", 2),
    "__nv_bfloat16": ("BF16", 2), "__hip_bfloat16": ("BF16", 2), "hip_bfloat16": ("BF16", 2),
}


def _load_error(what: str, why: str):
    from .errors import QuicklaunchError
    return QuicklaunchError(f"ql.load({what}): {why}")


def _read(source) -> tuple[bytes, str]:
    """The bytes to load and how messages name them (the path, or <N bytes>)."""
    import os
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return data, f"<{len(data)} bytes>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                return f.read(), path
        except OSError as exc:
            raise _load_error(path, f"cannot read the file ({exc.strerror or exc})") from None
    raise TypeError(f"ql.load takes a path or bytes, got {type(source).__name__}")


def _sniff(data: bytes) -> str | None:
    """What the bytes look like: "cubin", "ptx", "fatbin", "hsaco", "elf:<machine>"
    for another ELF, or None."""
    if data[:4] == b"\x7fELF":
        machine = int.from_bytes(data[18:20], "little") if len(data) >= 20 else -1
        return {190: "cubin", 224: "hsaco"}.get(machine, f"elf:{machine}")
    if data[:4] == (0xBA55ED50).to_bytes(4, "little"):
        return "fatbin"
    if data.startswith((b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB")):
        return "hsaco"
    head = data[:65536].decode("utf-8", "replace")
    if ".version" in head and (".target" in head or ".entry" in head):
        return "ptx"
    return None


def _parse_signature(signature: str):
    from .signature import SignatureError, parse_kernels
    text = " ".join(signature.split())
    for prefix in ('extern "C"', "__global__", "void"):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
    try:
        decls = parse_kernels(f"__global__ void {text} {{}}")
    except SignatureError as exc:
        raise ValueError(f"signature {signature!r} cannot be read: {exc}") from None
    if len(decls) != 1:
        raise ValueError(f"signature {signature!r} must declare one kernel, as in "
                         f"'saxpy(float a, const float* x, float* y, int n)'")
    return decls[0]


def _typed(ctype: str, row, what: str) -> tuple[str, int, int]:
    """(kind tag, size, align) of a parameter of C type ``ctype``, checked
    against the binary's row."""
    from . import kinds
    t = " ".join(ctype.replace("__restrict__", " ").split())
    if "&" in t or "[" in t:
        raise ValueError(f"{what}: '{ctype}' is a reference or array; a kernel takes values "
                         f"and pointers")
    if "*" in t:
        kind, size = ("PTR_CONST" if "const" in t.rsplit("*", 1)[0] else "PTR"), 8
    else:
        base = " ".join(w for w in t.split() if w not in ("const", "volatile"))
        if base == "char":
            base = "signed char" if kinds.char_is_signed() else "unsigned char"
        kind, size = _SCALARS.get(base, ("STRUCT", row.size))
    if size != row.size:
        raise ValueError(f"{what}: '{ctype}' is {size} bytes, but the binary's parameter is "
                         f"{row.size} bytes ({row.text})")
    return kind, size, max(row.align, 1) if kind == "STRUCT" else min(size, 16)


def _find_symbol(rows: dict, name: str, shown: str) -> str:
    if name in rows:
        return name
    mangled = [s for s in rows if s.startswith(f"_Z{len(name)}{name}")]
    if len(mangled) == 1:
        return mangled[0]
    raise _load_error(shown, f"no kernel '{name}' in the binary; it has "
                             f"{sorted(rows) or 'none'}")


def load(source, device=None, signature=None, kind=None):
    """Loads a prebuilt binary: a cubin, PTX or fatbin on a CUDA device, a HIP
    code object (or clang offload bundle) on a HIP device, from a path or bytes.

    Kernels are named by their symbols (mangled for C++ kernels). Parameters
    come from the binary: PTX ``.entry`` declarations (sizes, alignments and
    element types: ``.ptr`` parameters are pointers, ``.f32`` float, 32-bit
    integers int, byte arrays structs), a cubin's parameter table (sizes
    only: every parameter is raw bytes, a pointer needs the signature), the
    HIP metadata (sizes, and pointer or value). ``signature`` ("saxpy(float,
    const float*, float*, int)", or a list of them) types a kernel's
    parameters for conversion, checked against the binary's sizes; that
    kernel is then also found by the signature's name. ``kind`` ("cubin",
    "ptx", "fatbin", "hsaco") overrides what the bytes look like.
    Loaded kernels launch through the same fast path as compiled ones.
    A bundle (``ql.build``: a .qlb file, its folder or bytes) loads its best
    entry for the device (quicklaunch.bundles, docs/bundles.md)."""
    from . import kinds
    from .devices import device as get_device
    from .module import Kernel, Module, Param, _add_kernel
    from .bundles import is_bundle, load_bundle
    if is_bundle(source):
        if signature is not None or kind is not None:
            raise ValueError("ql.load of a bundle takes no signature or kind: its manifest "
                             "has the kernels' parameters")
        return load_bundle(source, device)
    data, shown = _read(source)
    dev = get_device(device)
    if not data:
        raise _load_error(shown, "empty: no binary to load")
    found = _sniff(data)
    if kind is not None:
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    elif found is None or found.startswith("elf:"):
        what = (f"an ELF file for machine {found[4:]}" if found else "not a binary")
        raise _load_error(shown, f"{what}: not a cubin, PTX, fatbin or HIP code object")
    kind = kind or found
    # What each device loads, and how its binaries' parameters are read, is
    # its backend's: binary_kinds and read_binary (backends/*/binary.py).
    backend = dev.backend
    if kind not in getattr(backend, "binary_kinds", ()):
        runs = getattr(backend, "binary_description",
                       "no prebuilt binaries (compile the source with ql.compile)")
        raise _load_error(shown, f"a {kind} cannot be loaded on {dev.name}, which loads "
                                 f"{runs}")
    try:
        rows, image = backend.read_binary(data, kind)
    except ValueError as exc:
        raise _load_error(shown, f"not a {kind} quicklaunch can read: {exc}") from None
    sigs = [signature] if isinstance(signature, str) else list(signature or ())
    typed = {}
    for sig in sigs:
        decl = _parse_signature(sig)
        symbol = _find_symbol(rows, decl.name, shown)
        binary = rows[symbol]
        if len(decl.params) != len(binary):
            raise ValueError(f"ql.load({shown}): signature {sig!r} has {len(decl.params)} "
                             f"parameters, the binary's kernel {symbol} has {len(binary)}")
        typed[symbol] = (decl.name, [
            (p.name, p.ctype, *_typed(p.ctype, r, f"ql.load({shown}): signature {sig!r}, "
                                                  f"parameter {i + 1} '{p.name}'"))
            for i, (p, r) in enumerate(zip(decl.params, binary))])
    library = backend.load_module(image, f"{kind} from {shown}")
    mod = Module(dev, "", ())
    mod._library = library
    mod._program = image
    mod._templates = set()
    mod._origin = (shown, 0)
    mod._stub_library = None
    mod._loaded_from = shown
    mod._pickle_state = ("loaded", dev.name, bytes(data),
                         tuple(sigs) if sigs else None, kind)
    for symbol, binary in rows.items():
        name, params = typed.get(symbol, (symbol, None))
        if params is None:
            params = [(f"arg{i}", "", r.kind, r.size, r.align) for i, r in enumerate(binary)]
        ps = tuple(Param(n, c, size, align, kinds.NAMES[kinds.CODES[k]])
                   for n, c, k, size, align in params)
        k = Kernel(mod, name, symbol, ps, bytes(kinds.CODES[p[2]] for p in params),
                   backend.function(library, symbol), backend.launch_entry,
                   backend.inline_threads, backend.error_hook)
        k._source_line = 1
        k.attributes = {}
        k.tier = None
        _add_kernel(mod, name, symbol, k)
    return mod


def _rebuild_loaded(state):
    _, device, data, signature, kind = state
    return load(data, device=device, signature=signature, kind=kind)


def _register() -> None:
    from .module import Module
    Module._rebuilders["loaded"] = _rebuild_loaded


_register()

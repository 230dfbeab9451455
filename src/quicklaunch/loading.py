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
_PTX_KIND = {"f32": "F32", "f64": "F64", "f16": "F16", "bf16": "BF16", "u8": "U8", "s8": "I8",
             "u16": "I16", "s16": "I16", "b16": "U16", "u32": "I32", "s32": "I32", "b32": "I32",
             "u64": "I64", "s64": "I64", "b64": "I64"}
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


class _Row:
    """One parameter as the binary gives it: size, alignment, a kind guess."""

    def __init__(self, size: int, align: int, kind: str, text: str):
        self.size, self.align, self.kind, self.text = size, align, kind, text


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


def _pow2_align(offset: int, size: int) -> int:
    align = 1
    while align < 16 and align < size and offset % (align * 2) == 0:
        align *= 2
    return align


def _rows_from_offsets(params) -> list[_Row]:
    """Rows for (offset, size[, pointer]) parameters: the alignment is the largest
    power of two the offset allows, so C's layout rules land on the same offsets."""
    return [_Row(p[1], _pow2_align(p[0], p[1]), "PTR" if len(p) > 2 and p[2] else "STRUCT",
                 f"{p[1]} bytes at offset {p[0]}") for p in params]


def _ptx_rows(ptx: str) -> dict[str, list[_Row]]:
    from .backends.cuda.ptx import entries
    out = {}
    for symbol, params in entries(ptx).items():
        rows = []
        for p in params:
            types = [t for t in _PTX_KIND if f".{t} " in p.text + " " or f".{t}[" in p.text]
            kind = "PTR" if ".ptr" in p.text else (
                _PTX_KIND[types[0]] if types and "[" not in p.text else "STRUCT")
            rows.append(_Row(p.size, p.align, kind, p.text))
        out[symbol] = rows
    return out


def _cuda_rows(data: bytes, kind: str, shown: str) -> tuple[dict[str, list[_Row]], bytes]:
    """symbol -> rows, and the image to hand the driver."""
    from .backends.cuda import cubin
    try:
        if kind == "ptx":
            text = data.split(b"\0", 1)[0].decode("utf-8")
            return _ptx_rows(text), data
        if kind == "cubin":
            return ({s: _rows_from_offsets(ps) for s, ps in cubin.kernels(data).items()}, data)
        entries = cubin.fatbin_entries(data)
        for what, _arch, payload in sorted(entries, key=lambda e: e[0] != "ptx"):
            if payload:
                rows, _ = _cuda_rows(payload, what, shown)
                return rows, data
        raise cubin.CubinError("the fatbin holds no uncompressed PTX or cubin to read the "
                               "kernels' parameters from")
    except (cubin.CubinError, UnicodeDecodeError, ValueError) as exc:
        raise _load_error(shown, f"not a {kind} quicklaunch can read: {exc}") from None


def _hip_rows(data: bytes, arch: str, shown: str) -> tuple[dict[str, list[_Row]], bytes]:
    from .backends.hip import elf, metadata
    try:
        code = elf.unbundle(data, arch)
        listed = metadata.kernels(code)
    except (elf.ElfError, metadata.MetadataError, ValueError) as exc:
        raise _load_error(shown, f"not a HIP code object quicklaunch can read: {exc}") from None
    return ({s: _rows_from_offsets([(a.offset, a.size, a.value_kind in
                                     ("global_buffer", "dynamic_shared_pointer"))
                                    for a in k.args]) for s, k in listed.items()}, code)


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


def _typed(ctype: str, row: _Row, what: str) -> tuple[str, int, int]:
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
    Loaded kernels launch through the same fast path as compiled ones."""
    from . import kinds
    from .devices import device as get_device
    from .module import Kernel, Module, Param, _add_kernel
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
    if dev.kind == "cuda" and kind in ("cubin", "ptx", "fatbin"):
        rows, image = _cuda_rows(data, kind, shown)
    elif dev.kind == "hip" and kind == "hsaco":
        rows, image = _hip_rows(data, dev.arch or "", shown)
    else:
        runs = {"cuda": "a cubin, PTX or fatbin", "hip": "a HIP code object"}.get(
            dev.kind, "no prebuilt binaries (compile the source with ql.compile)")
        raise _load_error(shown, f"a {kind} cannot be loaded on {dev.name}, which loads "
                                 f"{runs}")
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
    backend = dev.backend
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

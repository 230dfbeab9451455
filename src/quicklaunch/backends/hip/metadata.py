"""What a code object says about its kernels (the ``amdhsa.kernels`` list of
the AMDGPU metadata note), and the cross-check of quicklaunch's reflected
parameters against it.

Each kernel's ``.args`` lists the explicit parameters (``by_value``,
``global_buffer``, ...) with their ``.offset`` and ``.size`` in the kernel
argument segment, then the hidden arguments the runtime fills in
(``hidden_*``). The reflected (size, alignment) of every parameter, laid out
with C's rules, must land on exactly those offsets and sizes.
"""
from __future__ import annotations

from typing import NamedTuple

from ... import kinds
from . import msgpack
from .elf import CodeObject, ElfError

__all__ = ["KernelMeta", "ArgMeta", "kernels", "check", "MetadataError"]

_POINTER_VALUE_KINDS = {"global_buffer", "dynamic_shared_pointer"}


class MetadataError(ValueError):
    """The code object's metadata is missing or contradicts reflection."""


class ArgMeta(NamedTuple):
    offset: int
    size: int
    value_kind: str
    address_space: str


class KernelMeta(NamedTuple):
    name: str                    # the kernel's symbol (mangled for C++ kernels)
    args: tuple[ArgMeta, ...]    # explicit arguments only (no hidden_*)
    kernarg_size: int
    max_threads: int             # .max_flat_workgroup_size
    static_shared: int           # .group_segment_fixed_size
    wavefront_size: int


def _int(entry: dict, key: str, default: int | None = None) -> int:
    value = entry.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise MetadataError(f"kernel metadata field {key} is {value!r}, not an integer")
    return value


def kernels(code: "CodeObject | bytes") -> dict[str, KernelMeta]:
    """symbol -> KernelMeta for every kernel of the code object."""
    co = code if isinstance(code, CodeObject) else CodeObject(code)
    try:
        meta = msgpack.unpack(co.metadata_note())
    except (ValueError, ElfError) as exc:
        raise MetadataError(f"unreadable code object metadata: {exc}") from None
    listed = meta.get("amdhsa.kernels") if isinstance(meta, dict) else None
    if not isinstance(listed, list):
        raise MetadataError("the code object metadata has no amdhsa.kernels list")
    out = {}
    for k in listed:
        if not isinstance(k, dict) or not isinstance(k.get(".name"), str):
            raise MetadataError(f"a kernel entry without a name: {k!r:.200}")
        args = []
        for a in k.get(".args", []):
            kind = a.get(".value_kind", "") if isinstance(a, dict) else ""
            if not isinstance(kind, str) or not kind:
                raise MetadataError(f"kernel {k['.name']}: an argument without a value kind")
            if kind.startswith("hidden_"):
                continue
            args.append(ArgMeta(_int(a, ".offset"), _int(a, ".size"), kind,
                                str(a.get(".address_space", ""))))
        out[k[".name"]] = KernelMeta(k[".name"], tuple(args), _int(k, ".kernarg_segment_size", 0),
                                     _int(k, ".max_flat_workgroup_size", 1024),
                                     _int(k, ".group_segment_fixed_size", 0),
                                     _int(k, ".wavefront_size", 64))
    return out


def layout(rows) -> list[int]:
    """The offset of each (size, align, ...) parameter under C's rules."""
    offsets, end = [], 0
    for size, align, *_ in rows:
        align = max(int(align), 1)
        end = (end + align - 1) // align * align
        offsets.append(end)
        end += int(size)
    return offsets


def check(kernel: str, reflected, meta: KernelMeta) -> None:
    """Raise MetadataError unless the reflected (size, align, kind) rows are
    exactly the kernel's explicit arguments in the code object."""
    if len(reflected) != len(meta.args):
        raise MetadataError(f"kernel '{kernel}': reflection found {len(reflected)} parameters "
                            f"but the code object's metadata lists {len(meta.args)}")
    for i, ((size, align, kind), offset, arg) in enumerate(
            zip(reflected, layout(reflected), meta.args)):
        if (size, offset) != (arg.size, arg.offset):
            raise MetadataError(
                f"kernel '{kernel}': parameter {i + 1} reflects as {size} bytes aligned to "
                f"{align} (offset {offset}), but the code object places it at offset "
                f"{arg.offset} with {arg.size} bytes. The compiler's front end and code "
                f"generator disagree on the type's layout, so no launch could pass it "
                f"reliably; an __align__ smaller than the type's natural alignment is one "
                f"known cause")
        reflected_pointer = kind in kinds.POINTER
        passed_pointer = arg.value_kind in _POINTER_VALUE_KINDS
        # a reference (kind INVALID) travels as a pointer; it is refused at launch
        if reflected_pointer != passed_pointer and kind != kinds.INVALID:
            raise MetadataError(
                f"kernel '{kernel}': parameter {i + 1} reflects as "
                f"{'a pointer' if reflected_pointer else 'a value'} but the code object "
                f"passes it as {arg.value_kind}")

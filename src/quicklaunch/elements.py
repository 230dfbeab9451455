"""What element type a pointer parameter expects, from its C type text.

The launcher (``_launch``) compares each pointer argument's element type
(NumPy dtype, buffer format, ``__array_interface__`` /
``__cuda_array_interface__`` typestr, DLPack dtype, torch dtype) with the
parameter's, once per new dtype (the accepted dtype is remembered per
parameter, so a launch pays one pointer compare). ``element(ctype)`` gives
that expectation as ``(kind, size, lanes, expect_text, numpy_name)`` or
``None`` (any element: ``void *``, ``char *``, structs, templates' ``T *``,
pointers to pointers, anything this table does not name).

kind is NumPy's letter (``f`` float, ``i`` signed, ``u`` unsigned, ``b``
bool) or ``B`` for bfloat16; size is the scalar's bytes; lanes > 1 for
vector types (``float4``: f, 4, 4), whose base type's arrays are accepted.
The acceptance rule itself lives in C (``_launch_elements.h``) and in
docs/arguments.md."""
from __future__ import annotations

import re

__all__ = ["element", "elements", "reinterpret", "texture_element"]

_SCALARS = {
    "float": ("f", 4), "double": ("f", 8), "__half": ("f", 2), "half": ("f", 2),
    "__nv_bfloat16": ("B", 2), "nv_bfloat16": ("B", 2), "__hip_bfloat16": ("B", 2),
    "hip_bfloat16": ("B", 2), "__bf16": ("B", 2), "bool": ("b", 1),
    "signed char": ("i", 1), "int8_t": ("i", 1),
    "unsigned char": ("u", 1), "uint8_t": ("u", 1), "uchar": ("u", 1),
    "short": ("i", 2), "short int": ("i", 2), "signed short": ("i", 2),
    "signed short int": ("i", 2), "int16_t": ("i", 2),
    "unsigned short": ("u", 2), "unsigned short int": ("u", 2), "ushort": ("u", 2),
    "uint16_t": ("u", 2),
    "int": ("i", 4), "signed": ("i", 4), "signed int": ("i", 4), "int32_t": ("i", 4),
    "unsigned": ("u", 4), "unsigned int": ("u", 4), "uint": ("u", 4), "uint32_t": ("u", 4),
    "long": ("i", 8), "long int": ("i", 8), "signed long": ("i", 8), "long long": ("i", 8),
    "long long int": ("i", 8), "signed long long": ("i", 8), "int64_t": ("i", 8),
    "ptrdiff_t": ("i", 8), "ssize_t": ("i", 8), "intptr_t": ("i", 8),
    "unsigned long": ("u", 8), "unsigned long int": ("u", 8), "unsigned long long": ("u", 8),
    "unsigned long long int": ("u", 8), "uint64_t": ("u", 8), "size_t": ("u", 8),
    "uintptr_t": ("u", 8),
}
# CUDA's vector types: base scalar (as CUDA defines it) and lanes
_VECTOR_BASES = {"char": ("i", 1), "uchar": ("u", 1), "short": ("i", 2), "ushort": ("u", 2),
                 "int": ("i", 4), "uint": ("u", 4), "long": ("i", 8), "ulong": ("u", 8),
                 "longlong": ("i", 8), "ulonglong": ("u", 8), "float": ("f", 4),
                 "double": ("f", 8)}
_VECTOR = re.compile(r"(char|uchar|short|ushort|int|uint|long|ulong|longlong|ulonglong|"
                     r"float|double)([1-4])")
_OTHER_VECTORS = {"__half2": ("f", 2, 2), "half2": ("f", 2, 2),
                  "__nv_bfloat162": ("B", 2, 2), "nv_bfloat162": ("B", 2, 2),
                  "cuComplex": ("f", 4, 2), "cuFloatComplex": ("f", 4, 2),
                  "cuDoubleComplex": ("f", 8, 2)}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")
_NUMPY = {("f", 2): "float16", ("f", 4): "float32", ("f", 8): "float64",
          ("B", 2): "ml_dtypes.bfloat16", ("b", 1): "bool",
          **{(k, s): f"{'' if k == 'i' else 'u'}int{8 * s}"
             for k in "iu" for s in (1, 2, 4, 8)}}


def element(ctype: str):
    """``(kind, size, lanes, expect_text, numpy_name)`` for a pointer
    parameter's C type, or None where any element is accepted."""
    text = ctype.strip()
    if "*" not in text:
        return None
    t = _QUALIFIERS.sub(" ", text)
    if t.count("*") != 1:
        return None     # pointers to pointers, function pointers: any
    base = " ".join(t.replace("*", " ").split())
    base = re.sub(r"^(::)?std::", "", base).lstrip(":")
    if base.startswith("struct "):
        base = base[len("struct "):]
    lanes = 1
    if base in _SCALARS:
        kind, size = _SCALARS[base]
    elif base in _OTHER_VECTORS:
        kind, size, lanes = _OTHER_VECTORS[base]
    elif (m := _VECTOR.fullmatch(base)):
        (kind, size), lanes = _VECTOR_BASES[m.group(1)], int(m.group(2))
    else:
        return None     # void, char, structs, templates' T, typedefs: any
    npname = _NUMPY[(kind, size)]
    what = "bfloat16" if kind == "B" else npname
    if lanes > 1:
        expect = f"{what} elements ({base} = {lanes} x {what}; C type {ctype})"
    elif kind == "B":
        expect = f"bfloat16 elements (ml_dtypes.bfloat16, or its bits as uint16; C type {ctype})"
    else:
        expect = f"{what} elements (C type {ctype})"
    return (kind, size, lanes, expect, "np." + npname if "." not in npname else npname)


_TEXTURE_TYPES = ("cudaTextureObject_t", "hipTextureObject_t")


def texture_element(ctype: str):
    """The launcher's element for a texture-object parameter (kind 'T': it
    takes a ql.Texture of its device, or an int handle), else None."""
    if " ".join(_QUALIFIERS.sub(" ", ctype).split()).lstrip(":") in _TEXTURE_TYPES:
        return ("T", 8, 1, f"a ql.Texture (C type {ctype})", "ql.Texture")
    return None


_COMPLEX_PAIRS = {"float2": 4, "cuComplex": 4, "cuFloatComplex": 4, "double2": 8,
                  "cuDoubleComplex": 8}


def complex_element(ctype: str):
    """The launcher's element for a 2-lane float struct taken by value
    (float2, double2, cuComplex, cuDoubleComplex): it accepts a Python
    complex (re, im) besides bytes-like values; else None."""
    base = " ".join(_QUALIFIERS.sub(" ", ctype).split()).lstrip(":")
    size = _COMPLEX_PAIRS.get(base)
    if size is None:
        return None
    what = "float32" if size == 4 else "float64"
    return ("f", size, 2, f"a complex number or 2 x {what} (C type {ctype})",
            "complex" if size == 8 else "np.complex64")


def elements(params, types: dict[str, str] | None = None) -> tuple:
    """The launcher's ``elems`` for a kernel's parameters (None for scalars).
    ``types`` maps a template instantiation's type parameters to its
    arguments ({"T": "float"} for ``add<float>``), so ``T *`` is typed."""
    def typed(ctype):
        if types:
            ctype = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: types.get(m[0], m[0]), ctype)
        return element(ctype)
    return tuple(texture_element(p.ctype) or
                 (typed(p.ctype) if p.kind.endswith("pointer") else
                  complex_element(p.ctype) if p.kind == "struct" else None) for p in params)


def _split_top(text: str) -> list[str]:
    """``"float, Vec<int, 2>, 4"`` -> its top-level comma-separated parts."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def template_types(source: str | None, expr: str) -> dict[str, str]:
    """{type parameter: argument} for a template kernel's name expression
    (``"add<float, 4>"`` of ``template <typename T, int N>``: {"T": "float"});
    {} where the expression or declaration cannot be read."""
    if not source or "<" not in expr or not expr.endswith(">"):
        return {}
    from .signature import parse_kernels
    base, args = expr.split("<", 1)
    try:
        decls = [d for d in parse_kernels(source) if d.template and
                 (d.name == base.strip() or d.name.endswith("::" + base.strip()))]
    except ValueError:
        return {}
    if len(decls) != 1:
        return {}
    out = {}
    for param, arg in zip(_split_top(decls[0].template), _split_top(args[:-1])):
        words = param.split("=")[0].split()
        if len(words) == 2 and words[0] in ("typename", "class"):
            out[words[1]] = arg
    return out


class _Untyped:
    """Another library's device array as untyped bytes (``ql.reinterpret``):
    the same memory, typestr ``|V1``, kept alive by holding the original."""

    def __init__(self, obj, iface, name):
        self._obj = obj
        n = 1
        for d in iface.get("shape", ()):
            n *= int(d)
        size = int(re.sub(r"\D", "", iface.get("typestr", "|u1")) or 1)
        setattr(self, name, {"data": iface["data"], "shape": (n * size,), "typestr": "|V1",
                             "strides": None, "version": iface.get("version", 3)})


def reinterpret(x):
    """``x``'s memory as untyped bytes, accepted by any pointer parameter:
    the explicit spelling for passing data whose element type differs from
    the parameter's on purpose (bf16 bits in an int16 array, a float32 array
    for an ``int *`` that reads the bits). NumPy arrays become a ``V1``
    view, ``ql`` buffers an untyped buffer over the same memory, objects with
    ``__cuda_array_interface__`` / ``__array_interface__`` a wrapper whose
    typestr is ``|V1``. The result shares memory with ``x`` and keeps it
    alive. A ``.view(dtype)`` of the parameter's type says the same thing
    for NumPy arrays and is usually clearer."""
    import numpy as np
    from .memory import Buffer
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise ValueError("ql.reinterpret needs a C-contiguous array")
        return x.reshape(-1).view(np.dtype("V1")) if x.size else x.view(np.dtype("V1"))
    if isinstance(x, Buffer):
        return Buffer(x.ptr, (x.nbytes,), np.dtype("V1"), x.device, owner=x,
                      readonly=bool(x.readonly))
    for name in ("__cuda_array_interface__", "__array_interface__"):
        iface = getattr(x, name, None)
        if isinstance(iface, dict) and isinstance(iface.get("data"), tuple):
            return _Untyped(x, iface, name)
    raise TypeError(f"ql.reinterpret takes a NumPy array, a ql buffer or an object with "
                    f"__cuda_array_interface__ / __array_interface__, got {type(x).__name__}")

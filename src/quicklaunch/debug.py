"""Debug mode's launch path: a real Python function per kernel.

With ``ql.compile(..., debug=True)`` or ``QUICKLAUNCH_DEBUG=1`` every launch
goes through a function named after the kernel whose parameters are the
kernel's own (``saxpy(a, x, y, n)``), whose code object points at the file
and line where the kernel's source lives. pdb can stop in it, a traceback
through a failing launch shows a frame named ``saxpy`` with the argument
values, and profilers attribute time per kernel. The choice is made when the
kernel is created: the fast path never tests a flag.
"""
from __future__ import annotations

import keyword
import linecache
import re
import warnings

import numpy as np

from ._launch import _array_address
from .capture import active_capture
from .errors import LaunchValueError

__all__ = ["make_stub", "python_location", "source_start", "LaunchWarning"]


class LaunchWarning(UserWarning):
    """A debug launch that is legal but likely wrong (an array smaller than
    the launched threads with no bound among the arguments)."""


# Alignment a pointer to each C type needs (what a GPU load of it needs).
_POINTEE_ALIGN = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "__half": 2, "half": 2,
    "__nv_bfloat16": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
    "int32_t": 4, "uint32_t": 4, "long": 8, "unsigned long": 8, "long long": 8,
    "unsigned long long": 8, "double": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8,
    "float2": 8, "int2": 8, "uint2": 8, "__half2": 4, "float4": 16, "int4": 16,
    "uint4": 16, "double2": 16, "float3": 4, "int3": 4,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct)\b")


def pointee_alignment(ctype: str) -> int | None:
    """The alignment a `T *` parameter needs, when T is a known C type."""
    if not ctype.rstrip().endswith("*") or ctype.count("*") != 1:
        return None
    base = " ".join(_QUALIFIERS.sub(" ", ctype.replace("*", " ")).split())
    return _POINTEE_ALIGN.get(base)


def _is_texture(elem) -> bool:
    """A texture-object parameter (elements.texture_element): no pointee, no bound."""
    return elem is not None and elem[0] == "T"


def make_validator(kernel, launcher):
    """Checks a debug launch's arguments beyond what the launcher checks:
    pointer alignment for the pointee type, and arrays smaller than the
    number of launched threads when no argument could bound the index.
    Everything that depends only on the kernel or the configuration is
    computed here, once per stub."""
    from .elements import element
    elems = getattr(kernel, "_elems", None) or tuple(element(p.ctype) for p in kernel.params)
    # (index, name, alignment, element, its width in bytes, " <its name>")
    aligns = [(i, p.name, pointee_alignment(p.ctype), elems[i],
               elems[i][1] * elems[i][2] if elems[i] is not None else 0,
               f" {_elem_name(elems[i])}" if elems[i] is not None else "")
              for i, p in enumerate(kernel.params)
              if p.kind.endswith("pointer") and not _is_texture(elems[i])]
    ints = [i for i, p in enumerate(kernel.params)
            if p.kind.startswith(("int", "uint")) and not _is_texture(elems[i])]
    # Where some integer parameters are named as lengths (n, size, count,
    # n_rows, ...), those are the bounds a guard compares with; else any.
    ints = [i for i in ints if _LENGTH.match(kernel.params[i].name)] or ints
    gpu = None if kernel.device.host_memory else kernel.device.backend
    grid = launcher.grid if launcher is not None else (1, 1, 1)
    block = launcher.block if launcher is not None else (1, 1, 1)
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]

    stream_handle = _stream_handle(getattr(launcher, "stream", None))

    def validate(args):
        _check_capture(kernel, stream_handle)
        bounds = [args[i] for i in ints if i < len(args)]
        for i, name, align, elem, width, elem_unit in aligns:
            if i >= len(args):
                continue
            a = args[i]
            if isinstance(a, np.ndarray):
                address, size, nbytes = _array_address(a), a.size, a.nbytes
            else:
                address, size = getattr(a, "ptr", None), getattr(a, "size", None)
                nbytes = getattr(a, "nbytes", None)
                if gpu is not None:
                    address = _check_device_pointer(kernel, i, name, a, gpu)
            if not isinstance(size, (int, np.integer)):
                size = None
            unit = ""
            if elem is not None and isinstance(nbytes, (int, np.integer)):
                # counted in the parameter's own elements (float4: 16 bytes)
                size, unit = int(nbytes) // width, elem_unit
                if nbytes % width:
                    warnings.warn(
                        f"kernel '{kernel.name}', parameter {i + 1} '{name}': the array holds "
                        f"{nbytes} bytes, not a whole number of{unit} ({width} bytes each); "
                        f"the last{unit} would reach past its end", LaunchWarning,
                        stacklevel=3)
            if align and address is not None and address % align:
                raise LaunchValueError(
                    f"kernel '{kernel.name}', parameter {i + 1} '{name}': address "
                    f"{address:#x} is not aligned to {align} bytes for "
                    f"{kernel.params[i].ctype}; pass an array whose data starts at a multiple "
                    f"of {align} (a slice with an odd offset, or the wrong dtype?)")
            if size is not None and size < threads and not any(
                    isinstance(b, (int, np.integer)) and 0 <= b <= size for b in bounds):
                empty = (" (it is empty: every access through it is out of bounds; pass "
                         "None for a pointer the kernel does not use)") if size == 0 else ""
                given = ", ".join(f"{kernel.params[j].name}={args[j]}"
                                  for j in ints if j < len(args))
                what = f"no integer argument ({given})" if given else "no integer argument"
                of = f" ({unit.strip()})" if elem is not None and elem[2] > 1 else ""
                warnings.warn(
                    f"kernel '{kernel.name}', parameter {i + 1} '{name}': the array has "
                    f"{size} elements{of} but the launch runs {threads} threads and {what} "
                    f"is at most {size}; a one-thread-per-element kernel would "
                    f"index past its end{empty}", LaunchWarning, stacklevel=3)

    return validate


_LENGTH = re.compile(r"(?i)^(n|m|nx|ny|nz|len|length|size|count|num|numel|total|nelems?|"
                     r"n_?\w+|num_?\w+|\w+_(n|len|length|size|count|num|elems?))$")


def _elem_name(elem) -> str:
    """``float4`` for a float4 element, ``float32`` for a float (see
    quicklaunch.elements.element)."""
    if elem[2] > 1:
        return elem[3].split("(", 1)[1].split(" =", 1)[0]
    return elem[4].rsplit(".", 1)[-1]


def _foreign_address(a) -> int | None:
    """The device address another library's array (or an int) stands for."""
    if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
        return int(a)
    iface = getattr(a, "__cuda_array_interface__", None)
    if isinstance(iface, dict) and isinstance(iface.get("data"), tuple):
        return int(iface["data"][0])
    if callable(getattr(a, "data_ptr", None)):
        return int(a.data_ptr())
    return None


def _check_device_pointer(kernel, i, name, a, gpu) -> int | None:
    """Debug launches on a GPU ask the driver who owns each raw or foreign
    pointer (the fast path never does: one driver query per argument)."""
    address = getattr(a, "ptr", None)
    if address is not None:  # a ql buffer: the launcher checks its device
        return address
    address = _foreign_address(a)
    if not address:  # None (nullptr) or not a pointer-like: the launcher decides
        return address
    owner = gpu.pointer_owner(address)
    if owner is None:
        raise LaunchValueError(
            f"kernel '{kernel.name}', parameter {i + 1} '{name}': address {address:#x} is "
            f"not memory the {kernel.device.kind.upper()} driver knows (host memory, freed "
            f"memory or another "
            f"process's?); pass a buffer from ql.empty/ql.asarray(device='{kernel.device.name}')")
    if owner != kernel.device.ordinal:
        raise LaunchValueError(
            f"kernel '{kernel.name}', parameter {i + 1} '{name}': the memory at {address:#x} "
            f"belongs to {kernel.device.kind}:{owner}, but the kernel runs on "
            f"{kernel.device.name}; copy it "
            f"there with ql.asarray(x, device='{kernel.device.name}')")
    return address


def _stream_handle(stream) -> int:
    if stream is None:
        return 0
    if hasattr(stream, "__ql_stream__"):
        return stream.__ql_stream__()[1]
    if hasattr(stream, "__cuda_stream__"):
        return stream.__cuda_stream__()[1]
    return int(stream)


def _synchronous(stream):
    """Debug launches are synchronous: one on a ql.Stream waits for it (so a
    failure raises at the launching line), unless a graph is recording."""
    if stream is None or not hasattr(stream, "synchronize"):
        return lambda: None

    def after():
        if active_capture() is None:
            stream.synchronize()
    return after


def _check_capture(kernel, stream_handle: int) -> None:
    """A launch on another stream while this thread records a graph would
    run now, outside the graph: almost always a mistake."""
    g = active_capture()
    if g is not None and g.device is kernel.device and stream_handle != g._stream_handle:
        raise LaunchValueError(
            f"kernel '{kernel.name}' is launched on stream {stream_handle:#x} while a graph "
            f"is being recorded on stream {g._stream_handle:#x} (ql.graph at {g.origin}); "
            f"it would run now instead of being recorded: launch it on the graph's stream, "
            f"or outside the 'with ql.graph()' block")


def _identifier(name: str, taken: set[str]) -> str:
    ident = re.sub(r"\W", "_", name) or "arg"
    if ident[0].isdigit() or keyword.iskeyword(ident) or ident.startswith("__ql_"):
        ident += "_"
    while ident in taken:
        ident += "_"
    taken.add(ident)
    return ident


_MISSING = object()   # a defaulted parameter the caller left out


def _given_arguments(defaults: tuple, required: int):
    """The arguments to launch with: trailing left-out ones dropped (the
    launcher fills their defaults), one left out before a given one (a
    keyword call) replaced by its default here."""
    def given(args: tuple) -> tuple:
        end = len(args)
        while end > required and args[end - 1] is _MISSING:
            end -= 1
        out = list(args[:end])
        for i in range(required, end):
            if out[i] is _MISSING:
                value = defaults[i - required]
                if isinstance(value, BaseException):
                    raise value
                out[i] = value
        return tuple(out)
    return given


def make_stub(kernel, run, filename: str, line: int):
    """A function ``<kernel name>(<parameter names>)`` that launches ``run``
    (a configured launch function) with its arguments, by position."""
    taken: set[str] = set()
    names = [_identifier(p.name, taken) for p in kernel.params]
    args = ", ".join(names)
    call = f"({args}{',' if len(names) == 1 else ''})"
    defaulted = len(getattr(kernel, "defaults", ()) or ())
    if defaulted:   # trailing parameters with defaults: left out, the launcher fills them
        required = len(names) - defaulted
        header = ", ".join(names[:required] + [f"{n}=__ql_missing" for n in names[required:]])
        pass_on = f"__ql_args = __ql_given({call}); "
        call = "__ql_args"
    else:
        header, pass_on = args, ""
    # One line: every instruction of the stub is attributed to the kernel's
    # declaration line (co_firstlineno below), so a traceback through a
    # failing launch shows that line, pdb's "break <file>:<line>" on it
    # stops here, and "break mod.saxpy" (the function's first line) too.
    source = f"def stub({header}): {pass_on}__ql_validate({call}); __ql_run(*{call}); __ql_after()\n"
    launcher = getattr(run, "__self__", None)
    namespace = {"__ql_run": run, "__ql_validate": make_validator(kernel, launcher),
                 "__ql_after": _synchronous(getattr(launcher, "stream", None)),
                 "__ql_missing": _MISSING,
                 "__ql_given": _given_arguments(kernel.defaults, len(names) - defaulted)}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - names are sanitised
    stub = namespace["stub"]
    code = stub.__code__.replace(co_name=kernel.name, co_filename=filename,
                                 co_firstlineno=max(line, 1))
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=kernel.name)
    stub.__code__ = code
    stub.__name__ = stub.__qualname__ = kernel.name
    stub.__doc__ = (f"Launches kernel {kernel.name} ({kernel.device.name}); parameters "
                    + ", ".join(f"{p.ctype} {p.name}" for p in kernel.params))
    stub.__self__ = getattr(run, "__self__", None)  # the Launcher, as on the fast path
    return stub


def source_start(source: str, file: str, call_line: int) -> int | None:
    """The line of the Python file where the source string's line 1 sits:
    its first non-empty line is looked for in the file (the last match at or
    before the ql.compile call); None when it cannot be found."""
    lines = source.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None or not file or file.startswith("<"):
        return None
    wanted = lines[first].strip()
    text = linecache.getlines(file)
    starts = [i + 1 for i, ln in enumerate(text)
              if ln.strip() == wanted or ln.rstrip().endswith(wanted)]
    before = [s for s in starts if s <= call_line] or starts
    return before[-1] - first if before else None


def python_location(source: str, file: str, call_line: int, kernel_line: int) -> tuple[str, int]:
    """The file and line of a kernel's declaration inside the Python file
    that holds the source; the ql.compile call when that is not found."""
    start = source_start(source, file, call_line)
    return (file, call_line) if start is None else (file, start + kernel_line - 1)


def kernel_code(kernel):
    """The code object pdb's ``break mod.saxpy`` reads from a debug kernel
    (``DebugKernel.__code__``): named after the kernel, at the file and line
    of its declaration, as every configured stub of it is. pdb sets a
    breakpoint by that name, file and first line, so it stops in the stub of
    any launch configuration. Built once per kernel."""
    code = kernel.__dict__.get("_ql_code")
    if code is None:
        file, line = python_location(kernel.module.source, *kernel.module._origin,
                                     kernel._source_line)
        namespace: dict = {}
        exec(compile("def stub(): pass\n", file, "exec"), namespace)  # noqa: S102
        code = namespace["stub"].__code__.replace(co_name=kernel.name, co_filename=file,
                                                  co_firstlineno=max(line, 1))
        if hasattr(code, "co_qualname"):
            code = code.replace(co_qualname=kernel.name)
        kernel.__dict__["_ql_code"] = code
    return code


"""Kernel parameter reflection, as both GPU compilers do it: after the
user's source come ql_reflect.cuh (include/) and one ``QL_REFLECT`` row per
kernel, each a ``__device__`` table the compiler initialises with every
parameter's size, alignment and kind. The backend reads each table's bytes
back from what it compiled (cuda/ptx.py: the PTX; hip/elf.py: the code
object) and cross-checks them against the compiled kernel's own parameter
list; here the tables are written and decoded.

A diagnostic on row N of the tables is reported at line N of
``REFLECT_FILE``, so it can be credited to the N-th kernel.
"""
from __future__ import annotations

from .expressions import base
from .kernel_table import KernelInfo, ParamInfo

__all__ = ["REFLECT_FILE", "MAGIC", "VERSION", "ReflectError", "tables", "table_name",
           "words", "decode_table", "params", "kernels"]

REFLECT_FILE = "<quicklaunch reflection>"
MAGIC = 0x46524C51     # QL_REFLECT_MAGIC in ql_reflect.cuh ("QLRF")
VERSION = 1            # QL_REFLECT_VERSION


class ReflectError(ValueError):
    """The compiled code lacks what reflection expects, or contradicts it."""


def table_name(i: int) -> str:
    """The symbol of the i-th kernel's table (C linkage: not mangled)."""
    return f"__ql_reflect_{i}"


def tables(exprs: list[str]) -> str:
    """The text appended to a source: the header, then one table per kernel."""
    rows = "".join(f'#line {i + 1} "{REFLECT_FILE}"\n'
                   f'QL_REFLECT({table_name(i)}, {e.strip().lstrip("&")})\n'
                   for i, e in enumerate(exprs))
    return f'\n#include "ql_reflect.cuh"\n{rows}'


def words(data: bytes) -> list[int]:
    """A table's bytes as little-endian 32-bit words (a trailing partial
    word is dropped)."""
    return [int.from_bytes(data[j:j + 4], "little") for j in range(0, len(data) // 4 * 4, 4)]


def decode_table(table: list[int], name: str) -> list[tuple[int, int, int]]:
    """(size, align, kind) per parameter from a reflection table's words."""
    if len(table) < 6 or table[0] != MAGIC:
        raise ReflectError(f"{name} is not a quicklaunch reflection table")
    if table[1] != VERSION:
        raise ReflectError(f"{name} has table version {table[1]}, expected {VERSION}")
    n = table[2]
    if len(table) != 3 * n + 6:
        raise ReflectError(f"{name} holds {len(table)} words for {n} parameters")
    return [tuple(table[3 + 3 * i:6 + 3 * i]) for i in range(n)]


def params(decls, expr: str, rows) -> tuple[ParamInfo, ...]:
    """The ParamInfo of each reflected (size, align, kind) row, named and
    typed from the declaration of the kernel ``expr`` names with as many
    parameters ("arg<i>" and no C type when there is none)."""
    same = [d for d in decls if d.name == base(expr)]
    decl = next((d for d in same if len(d.params) == len(rows)), None)
    names = ([(p.name, p.ctype) for p in decl.params] if decl
             else [(f"arg{i}", "") for i in range(len(rows))])
    return tuple(ParamInfo(n, c, *r) for (n, c), r in zip(names, rows))


def kernels(decls, exprs: list[str], table_words, where: str, resolve) -> list[KernelInfo]:
    """The KernelInfo of each reflected expression. ``table_words(symbol)``
    reads a table's words from the compiled code (None when it is not there,
    in ``where``: "the PTX"); ``resolve(i, expr, layout)`` is the kernel's
    symbol, once its (size, align, kind) rows are checked against the
    compiled kernel's own parameter list."""
    lines = {d.name: d.line for d in decls}
    out = []
    for i, e in enumerate(exprs):
        what = f"the reflection table of kernel '{e}'"
        table = table_words(table_name(i))
        if table is None:
            raise ReflectError(f"{what} is not in {where}")
        layout = decode_table(table, what)
        out.append(KernelInfo(e, resolve(i, e, layout), params(decls, e, layout),
                              lines.get(base(e), 1)))
    return out

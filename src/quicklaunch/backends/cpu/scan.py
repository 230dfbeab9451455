"""Finds a module's kernels as the compiler sees them.

The user's source is run through the host compiler's preprocessor with the
shim (``-E -DQL_SCAN_KERNELS``, which leaves ``__global__`` in place), so
``#if``/``#ifdef`` are decided and function-like macros expanded exactly as in
the real build; then the signature parser reads the lines that came from the
user's own files (not the shim's or the system's headers). Only runs on a
cache miss.
"""
from __future__ import annotations

import dataclasses
import re
import tempfile
from pathlib import Path

from ...errors import CompileError
from ...signature import KernelDecl, SignatureError, parse_kernels, tier2_features
from . import toolchain

_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d)*)\s*$')
# g++ -E writes a non-ASCII letter of an identifier as a UCN (\U0000044f).
_UCN = re.compile(r"(?<!\\)\\(?:U([0-9a-fA-F]{8})|u([0-9a-fA-F]{4}))")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_PLACEHOLDER = re.compile(r"__qlU([0-9a-f]{8})__")


def decode_ucns(text: str) -> str:
    """The preprocessed text with g++'s UCNs turned back into the letters
    the user wrote (clang++ writes them as they are)."""
    def letter(m: re.Match) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group(0)
    return _UCN.sub(letter, text)


def _parse(text: str) -> list[KernelDecl]:
    """parse_kernels, for identifiers with non-ASCII letters too: each such
    letter is an ASCII placeholder while parsing, the letter again in the
    names and types found."""
    if not _NON_ASCII.search(text):
        return parse_kernels(text)
    decls = parse_kernels(_NON_ASCII.sub(lambda m: f"__qlU{ord(m.group(0)):08x}__", text))

    def back(s: str) -> str:
        return _PLACEHOLDER.sub(lambda m: chr(int(m.group(1), 16)), s)
    return [dataclasses.replace(d, name=back(d.name), params=tuple(
                dataclasses.replace(p, name=back(p.name), ctype=back(p.ctype))
                for p in d.params),
            template=None if d.template is None else back(d.template)) for d in decls]


def check_encodable(source: str, origin: str = "", options=()) -> None:
    """A CompileError saying where a source holds a character UTF-8 cannot
    write (a lone surrogate, from a str built of bad parts)."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        before = source[:exc.start]
        line = before.count("\n") + 1
        column = exc.start - (before.rfind("\n") + 1) + 1
        raise CompileError(
            f"the source holds {source[exc.start]!r} at line {line}, column {column}, a "
            f"character UTF-8 cannot encode (a lone surrogate); the compiler reads UTF-8"
            f"{origin}", source=source, options=tuple(options)) from None


def user_text(preprocessed: str, filename: str) -> str:
    """The preprocessed lines from the user's files: the main file's lines at
    their own line numbers, lines of the user's other headers after them.

    A macro from a system header expanded on a user's line (assert, INFINITY)
    splits that line into fragments with line markers flagged 3; the
    fragments of one line are joined again. A file is a system header when it
    is entered (flag 1) with flag 3; the shim's own headers are recognised by
    their paths (the shim directory, and kinds.h, which the shim reaches by
    a relative path)."""
    lines: dict[str, dict[int, str]] = {}
    system: set[str] = set()
    shim = ("<", *(str(p) for p in toolchain.SHIM_HEADERS))
    current, line, keep = "", 0, False
    for text in preprocessed.splitlines():
        m = _MARKER.match(text)
        if m:
            line, current = int(m.group(1)), m.group(2)
            flags = m.group(3).split()
            if "1" in flags and "3" in flags:
                system.add(current)
            keep = current not in system and not current.startswith(shim)
            continue
        if keep:
            per_file = lines.setdefault(current, {})
            joined = per_file.get(line)
            per_file[line] = text if joined is None else joined + " " + text.strip()
        line += 1
    main = lines.pop(filename, {})
    size = max(main, default=0)
    out = [main.get(i, "") for i in range(1, size + 1)]
    for per_file in lines.values():
        out.extend(per_file[k] for k in sorted(per_file))
    return "\n".join(out) + "\n"


def scan(source: str, options: tuple[str, ...], filename: str, origin: str,
         shown: tuple[str, ...] | None = None) -> tuple[list[KernelDecl], list[str], str]:
    """(kernels, tier-2 features used, preprocessed user text) of a source.
    `shown`: the options errors name (the user's), when not `options`."""
    shown = options if shown is None else shown
    check_encodable(source, origin, shown)
    compiler = toolchain.find_compiler()
    with tempfile.TemporaryDirectory(prefix="quicklaunch-scan-") as tmp:
        src = Path(tmp, "scan.cpp")
        src.write_text(f'#include "cuda_shim.h"\n#line 1 "{filename}"\n{source}\n')
        command = toolchain.scan_command(compiler, src, options)
        status, out, log = toolchain.run_preprocessor(command, Path(tmp))
    if status != 0:
        raise toolchain.compile_error("kernel source failed to preprocess for the CPU "
                                      "device", log, source, shown, command, origin,
                                      filename)
    if not out:   # an option unchecked (QUICKLAUNCH_UNCHECKED_OPTIONS) sent it elsewhere
        raise CompileError(f"the preprocessor wrote nothing (an option such as -o sent its "
                           f"output elsewhere?){origin}", source=source, options=shown,
                           command=tuple(command))
    text = decode_ucns(user_text(out, filename))
    try:
        decls = _parse(text)
    except SignatureError as exc:
        raise CompileError(f"could not read the kernels' signatures: {exc}{origin}",
                           source=source, options=shown) from None
    return decls, tier2_features(text), text

"""Texture references (`texture<float, 1> t;` read by `tex1Dfetch(t, i)`),
which CUDA 12 removed, fail on every device with one message that says so
and how to move to texture objects (docs/textures.md).

Looked for only when a compile has failed (no cost otherwise, and a source
with a `texture` template of its own that compiles is nobody's business):
each device's compile path passes its CompileError through
compile_hints.explain, which asks `explain` here first.
"""
from __future__ import annotations

import re

from .errors import CompileError
from .signature import strip_comments

# texture<T, dim, mode> name  /  surface<void, 2> name  (declarations and parameters)
_REFERENCE = re.compile(
    r"\b(?P<what>texture|surface)\s*<(?P<args>[^;{}()<>]*(?:<[^;{}()<>]*>[^;{}()<>]*)*)>"
    r"\s*&?\s*(?P<name>[A-Za-z_]\w*)")
_OWN = re.compile(r"\b(?:struct|class|using)\s+(?:texture|surface)\b")
_BIND = re.compile(r"\bcuda(?:Bind|Unbind)Texture(?:ToArray|2D)?\b|\bcudaGetTextureReference\b")


def references(source: str) -> list[tuple[int, str]]:
    """(line, text) of each texture or surface reference in `source`."""
    code = strip_comments(source)
    if _OWN.search(code):
        return []           # a texture template of the source's own
    found = [(code.count("\n", 0, m.start()) + 1, " ".join(m.group().split()))
             for m in _REFERENCE.finditer(code)]
    found += [(code.count("\n", 0, m.start()) + 1, m.group()) for m in _BIND.finditer(code)]
    return sorted(found)


def message(refs: list[tuple[int, str]], device: str) -> str:
    line, text = refs[0]
    more = f" (and {len(refs) - 1} more)" if len(refs) > 1 else ""
    first = text.split("<")[0].strip()
    element = "float"
    m = re.match(r"(?:texture|surface)\s*<\s*([^,>]+)", text)
    if m:
        element = m.group(1).strip()
    name = text.split(">")[-1].strip(" &") if ">" in text else "tex"
    kind = "surface" if first == "surface" else "texture"
    return (f"line {line}: `{text}` is a {kind} reference{more}; CUDA 12 removed texture and "
            f"surface references (the texture<>/surface<> templates, cudaBindTexture and "
            f"tex1Dfetch(ref, i) on them), so {device} cannot compile it. Move to a "
            f"{kind} object: take it as a kernel parameter `cudaTextureObject_t {name or 'tex'}`"
            f" and read it with the element type as a template argument, e.g. "
            f"`tex1Dfetch<{element}>({name or 'tex'}, i)` (tex1D/tex2D/tex3D<{element}> "
            f"likewise); from Python pass ql.Texture(array, filter=..., address=...) for it "
            f"(docs/textures.md)")


def explain(exc: CompileError, source: str, device: str) -> CompileError:
    """`exc` itself, or, when the source uses texture references, a
    CompileError that says what to do (the compiler's own message after it)."""
    refs = references(source)
    if not refs:
        return exc
    text = message(refs, device) + "\n\n" + exc.message
    return CompileError(text, log=exc.log, source=exc.source or source, options=exc.options,
                        command=exc.command)

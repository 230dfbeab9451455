"""A bundle on disk: a manifest (``manifest.json``) and one file per
compiled target, either in a single zip file (``saxpy.qlb``) or in a folder.

The manifest says what was compiled (the source's SHA-256, the options,
name expressions, the compilers' versions, the bundle ABI) and, per target
entry, which device kind runs it, its file, that file's size and SHA-256,
and every kernel's signature (name, symbol, parameters with their C types,
sizes, alignments and kinds), so loading needs no compiler. Every byte read
from an entry is checked against its hash before anything uses it.

Damage of any kind is a ``BundleError`` naming the bundle and the entry,
never another exception.
"""
from __future__ import annotations

import hashlib
import io
import json
import os

from ..errors import QuicklaunchError

__all__ = ["ABI", "FORMAT", "MANIFEST", "BundleError", "Archive", "digest", "write",
           "check_manifest", "kernel_rows"]

FORMAT = "quicklaunch-bundle"
ABI = 1                 # what this quicklaunch writes and the newest it reads
MANIFEST = "manifest.json"


class BundleError(QuicklaunchError):
    """A bundle that cannot be built, read or loaded on this device."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Archive:
    """The files of a bundle, by name: a zip file (path or bytes) or a folder."""

    def __init__(self, source):
        self.folder = None
        self.zip = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.shown = f"<{len(source)} bytes>"
            self._open_zip(io.BytesIO(bytes(source)))
            return
        path = os.fspath(source)
        self.shown = path
        if os.path.isdir(path):
            self.folder = path
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise BundleError(f"bundle {path}: cannot read the file "
                              f"({exc.strerror or exc})") from None
        self._open_zip(io.BytesIO(data))

    def _open_zip(self, stream) -> None:
        import zipfile
        try:
            self.zip = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise BundleError(f"bundle {self.shown}: not a quicklaunch bundle, or a truncated "
                              f"one (not a readable zip archive: {exc})") from None

    def names(self) -> set[str]:
        if self.zip is not None:
            return set(self.zip.namelist())
        out = set()
        for root, _dirs, files in os.walk(self.folder):
            for f in files:
                out.add(os.path.relpath(os.path.join(root, f), self.folder).replace(os.sep, "/"))
        return out

    def read(self, name: str, what: str) -> bytes:
        """The bytes of ``name``; ``what`` says in messages which entry it is."""
        import zipfile
        if name.startswith("/") or ".." in name.split("/"):
            raise BundleError(f"bundle {self.shown}: {what} names the file {name!r}, outside "
                              f"the bundle")
        try:
            if self.zip is not None:
                return self.zip.read(name)
            with open(os.path.join(self.folder, *name.split("/")), "rb") as f:
                return f.read()
        except (KeyError, FileNotFoundError):
            raise BundleError(f"bundle {self.shown}: {what}: the file {name!r} is missing "
                              f"from the bundle") from None
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, RuntimeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise BundleError(f"bundle {self.shown}: {what}: the file {name!r} cannot be read "
                              f"(damaged or truncated: {why})") from None

    def checked(self, name: str, size: int, sha256: str, what: str) -> bytes:
        """``name``'s bytes, refused unless they are the manifest's size and hash."""
        data = self.read(name, what)
        if len(data) != size:
            raise BundleError(f"bundle {self.shown}: {what}: the file {name!r} is {len(data)} "
                              f"bytes, the manifest says {size} (truncated or altered); "
                              f"rebuild the bundle with 'quicklaunch build'")
        if digest(data) != sha256:
            raise BundleError(f"bundle {self.shown}: {what}: the file {name!r} does not match "
                              f"its SHA-256 in the manifest (corrupt or altered); rebuild the "
                              f"bundle with 'quicklaunch build'")
        return data


def kernel_rows(kernels) -> list[dict]:
    """The manifest's kernel rows of a GPU program's kernels (name -> KernelInfo)."""
    from .. import kinds
    return [{"name": expr, "symbol": info.lowered_name, "line": int(info.line),
             "params": [[p.name, p.ctype, p.size, p.align, kinds.NAMES[p.kind]]
                        for p in info.params]}
            for expr, info in kernels.items()]


def write(out, manifest: dict, files: dict[str, bytes]) -> str:
    """Writes a bundle: a folder when ``out`` ends with a separator or is an
    existing folder, else one zip file (written to a temporary name and
    renamed, so a reader never sees half a bundle). Returns the path."""
    import zipfile
    path = os.fspath(out)
    text = json.dumps(manifest, indent=1, sort_keys=True).encode()
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        os.makedirs(path, exist_ok=True)
        for name, data in {**files, MANIFEST: text}.items():
            target = os.path.join(path, *name.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = f"{target}.tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        return path.rstrip("/" + os.sep) or path
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(MANIFEST, text)
            for name, data in sorted(files.items()):
                z.writestr(name, data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _need(d: dict, key: str, typ, where: str, shown: str):
    value = d.get(key) if isinstance(d, dict) else None
    if not isinstance(value, typ) or isinstance(value, bool) and typ is int:
        raise BundleError(f"bundle {shown}: damaged manifest: {where} has no valid '{key}'")
    return value


def check_manifest(raw: bytes, shown: str) -> dict:
    """The manifest, parsed and checked field by field; a BundleError says
    what is wrong (not JSON, another format, a newer ABI, a missing field)."""
    try:
        m = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"bundle {shown}: damaged manifest (not JSON: {exc})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise BundleError(f"bundle {shown}: {MANIFEST} is not a quicklaunch bundle manifest")
    abi = _need(m, "abi", int, "the manifest", shown)
    if abi > ABI:
        raise BundleError(f"bundle {shown}: made by quicklaunch {m.get('quicklaunch', '?')} "
                          f"with bundle ABI {abi}; this quicklaunch reads ABI {ABI} and older: "
                          f"upgrade quicklaunch, or rebuild the bundle with this one")
    for key, typ in (("source_sha256", str), ("options", list), ("name_expressions", list),
                     ("templates", list), ("compilers", dict), ("entries", list)):
        _need(m, key, typ, "the manifest", shown)
    for i, e in enumerate(m["entries"]):
        where = f"entry {i}"
        for key, typ in (("target", str), ("device", str), ("kind", str), ("file", str),
                         ("sha256", str), ("size", int), ("kernels", list)):
            _need(e, key, typ, where, shown)
        where = f"entry {e['target']}"
        for k in e["kernels"]:
            for key, typ in (("name", str), ("symbol", str), ("line", int), ("params", list)):
                _need(k, key, typ, f"{where}, a kernel", shown)
            for p in k["params"]:
                if not (isinstance(p, list) and len(p) == 5 and isinstance(p[0], str)
                        and isinstance(p[1], str) and isinstance(p[2], int)
                        and isinstance(p[3], int) and isinstance(p[4], str)):
                    raise BundleError(f"bundle {shown}: damaged manifest: {where}, kernel "
                                      f"{k['name']}: a parameter row is not [name, C type, "
                                      f"size, align, kind]")
    return m

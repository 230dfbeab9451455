"""Loading a bundle (manifest.py) on a device: the best entry for it is
chosen (the device's ``rank``: backends/<kind>/bundle.py), its bytes are
checked against the manifest's size and SHA-256, it is loaded by the device
(``load_entry``) and its kernels get their parameters from the manifest, so
no compiler runs. Kernels launch through the same fast path as compiled
ones. Every refusal is a ``BundleError`` naming the bundle (and the entry)."""
from __future__ import annotations

import os

from .build import device_module
from .manifest import MANIFEST, Archive, BundleError, check_manifest, digest

__all__ = ["load_bundle", "is_bundle", "choose", "rebuild"]


def is_bundle(source) -> bool:
    """Whether ``source`` (a path or bytes) looks like a bundle: a folder with
    a manifest, or a zip archive (whose manifest is checked when loaded)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source[:4]) == b"PK\x03\x04"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            return os.path.isfile(os.path.join(path, MANIFEST))
        try:
            with open(path, "rb") as f:
                return f.read(4) == b"PK\x03\x04"
        except OSError:
            return path.endswith(".qlb")
    return False


def _listing(entries: list[dict]) -> str:
    return ", ".join(f"{e['target']} ({e['kind']}"
                     + (f", {e['machine']}" if e.get("machine") else "") + ")"
                     for e in entries) or "no entries"


def choose(manifest: dict, backend, shown: str) -> dict:
    """The entry ``backend`` runs best; a BundleError listing what the bundle
    holds and what the device is when it runs none."""
    kind = backend.kind
    mod = device_module(kind)
    mine = [e for e in manifest["entries"] if e["device"] == kind]
    ranked, why = [], []
    for e in mine:
        score, reason = mod.rank(e, backend) if mod is not None else (None, "")
        if score is None:
            why.append(f"{e['target']}: {reason}")
        else:
            ranked.append((score, e))
    if ranked:
        return max(ranked, key=lambda r: r[0])[1]
    device = mod.describe(backend) if mod is not None else kind
    hint = mod.hint(backend) if mod is not None else "quicklaunch builds no bundle for it"
    raise BundleError(f"bundle {shown}: nothing in it runs on {device}: it holds "
                      f"{_listing(manifest['entries'])}"
                      + (f" ({'; '.join(why)})" if why else "")
                      + f"; rebuild it with a target for this device ({hint})")


def load_bundle(source, device=None):
    """Loads a bundle (a path to its file or folder, or its bytes) on
    ``device``: a ``Module`` whose kernels launch as compiled ones do."""
    from .. import kinds
    from ..backends.base import ModuleImage
    from ..devices import device as get_device
    from ..module import Kernel, Module, Param, _add_kernel
    archive = Archive(source)
    shown = archive.shown
    raw = archive.read(MANIFEST, "the manifest")
    manifest = check_manifest(raw, shown)
    dev = get_device(device)
    backend = dev.backend
    entry = choose(manifest, backend, shown)
    what = f"entry {entry['target']}"
    payload = archive.checked(entry["file"], entry["size"], entry["sha256"], what)
    text = ""
    if manifest.get("source"):
        data = archive.read(manifest["source"], "the source")
        if digest(data) != manifest["source_sha256"]:
            raise BundleError(f"bundle {shown}: the source {manifest['source']!r} does not "
                              f"match its SHA-256 in the manifest (corrupt or altered)")
        text = data.decode("utf-8", "replace")
    codes = {}
    for k in entry["kernels"]:
        for p in k["params"]:
            code = next((c for c, n in kinds.NAMES.items() if n == p[4]), None)
            if code is None or code == kinds.INVALID:
                raise BundleError(f"bundle {shown}: {what}: kernel {k['name']}, parameter "
                                  f"{p[0]!r}: kind {p[4]!r} is not one this quicklaunch "
                                  f"launches (a bundle from another version: rebuild it)")
            codes[p[4]] = code
    mod_dev = device_module(backend.kind)
    try:
        library, handles, extra = mod_dev.load_entry(backend, entry, payload,
                                                     f"{shown} ({what})")
    except ValueError as exc:
        raise BundleError(f"bundle {shown}: {what}: {exc}") from None
    mod = Module(dev, text, tuple(manifest["options"]))
    mod._image = ModuleImage((), library, frozenset(manifest["templates"]),
                             path=extra.get("path"), program=payload,
                             options=tuple(manifest["options"]),
                             extra={"log": str(entry.get("log") or "")})
    mod._library = library
    mod._path = extra.get("path")
    mod._program = payload
    mod._templates = set(manifest["templates"])
    mod._origin = (shown, 0)
    mod._stub_library = None
    mod._loaded_from = shown
    mod.bundle_entry = entry["target"]
    mod.manifest = manifest
    if isinstance(source, (bytes, bytearray, memoryview)):
        mod._pickle_state = ("bundle", dev.name, "bytes", bytes(source), digest(raw))
    else:
        mod._pickle_state = ("bundle", dev.name, "path", os.path.abspath(os.fspath(source)),
                             digest(raw))
    for k in entry["kernels"]:
        handle, table = handles[k["name"]]
        params = tuple(Param(n, c, size, align, kind) for n, c, size, align, kind in k["params"])
        want = [codes[p.kind] for p in params]
        if table is not None and list(table) != want:
            raise BundleError(f"bundle {shown}: {what}: kernel {k['name']}: the binary's "
                              f"parameter kinds are not the manifest's (a bundle from another "
                              f"quicklaunch version: rebuild it)")
        kernel = Kernel(mod, k["name"], k["symbol"], params, bytes(want), handle,
                        backend.launch_entry, backend.inline_threads, backend.error_hook)
        kernel._source_line = k["line"]
        kernel.attributes = dict(k.get("attributes") or {})
        kernel.tier = kernel.attributes.get("tier")
        _add_kernel(mod, k["name"], k["symbol"], kernel)
    return mod


def rebuild(state):
    """An unpickled bundle module: the same bundle (by path, or its bytes)
    loaded on the device of that name here; refused when the file at that
    path is no longer the bundle that was pickled."""
    _, device, how, where, manifest_digest = state
    got = digest(Archive(where).read(MANIFEST, "the manifest"))
    if got != manifest_digest:
        raise BundleError(f"bundle {where if how == 'path' else '<bytes>'}: it changed since "
                          f"the module was pickled (another manifest)")
    return load_bundle(where, device=device)

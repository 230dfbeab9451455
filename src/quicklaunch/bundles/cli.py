"""``quicklaunch build``: a bundle from a source file, for the command line.

    quicklaunch build kernels.cu --targets sm_80,sm_90,compute_90,cpu -o kernels.qlb
"""
from __future__ import annotations

import sys

__all__ = ["add_parser"]


def add_parser(sub) -> None:
    """Registers the ``build`` subcommand on the ``quicklaunch`` parser."""
    b = sub.add_parser("build", help="compile a kernel source for a list of targets into one "
                                     "bundle that loads with no compiler (docs/bundles.md)")
    b.add_argument("source", help="the CUDA C++ source file")
    b.add_argument("--targets", "-t", required=True,
                   help="comma-separated: sm_XX (cubin), compute_XX (PTX), gfxNNN (HIP code "
                        "object), cpu (this host's CPU) or cpu:<march> (e.g. cpu:x86-64-v2)")
    b.add_argument("--out", "-o", default=None,
                   help="the bundle: a file (zip), or a folder when it ends with / "
                        "(default: the source's name with .qlb)")
    b.add_argument("--option", "-O", action="append", default=[], dest="options",
                   metavar="OPT", help="a compiler option for every target (repeatable), "
                                       "e.g. -O=-DN=4")
    b.add_argument("--name-expression", "-e", action="append", default=[], dest="exprs",
                   metavar="EXPR", help="a template instantiation to include (repeatable), "
                                        "e.g. 'add<float>'")
    b.add_argument("--no-source", action="store_true",
                   help="leave the source out of the bundle (its hash stays in the manifest)")
    b.set_defaults(fn=_build)


def _build(args) -> int:
    import os

    from .build import build
    from .manifest import MANIFEST, Archive, check_manifest
    try:
        with open(args.source, encoding="utf-8") as f:
            source = f.read()
    except OSError as exc:
        print(f"quicklaunch build: error: cannot read {args.source}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    out = args.out or os.path.splitext(args.source)[0] + ".qlb"
    try:
        path = build(source, args.targets, out, tuple(args.options), tuple(args.exprs),
                     include_source=not args.no_source)
    except ValueError as exc:
        print(f"quicklaunch build: error: {exc}", file=sys.stderr)
        return 2
    archive = Archive(path)
    manifest = check_manifest(archive.read(MANIFEST, "the manifest"), path)
    print(f"wrote {path}")
    for e in manifest["entries"]:
        names = ", ".join(k["name"] for k in e["kernels"])
        print(f"  {e['target']:<16} {e['kind']:<14} {e['size']:>9} bytes  {names}")
    return 0

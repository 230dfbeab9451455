"""The ``quicklaunch`` command: ``info``, ``bench`` and ``build``."""
from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path


def _info(args) -> int:
    import importlib

    import numpy

    import quicklaunch as ql
    from .backends import REGISTRY
    from .cache import CompileCache, default_cache_dir

    print(f"quicklaunch {ql.__version__}")
    print(f"python      {platform.python_version()} ({sys.executable})")
    print(f"numpy       {numpy.__version__}")
    print(f"platform    {platform.platform()}")
    print("devices:")
    for row in REGISTRY:
        try:
            dev = ql.device(row.kind)
            inline = dev.backend.inline_threads
            extra = (f"; launches under {inline} threads run on the caller"
                     if inline < 2**32 else "")
            print(f"  {row.kind:<9} {dev.description}{extra}")
        except (ql.DeviceError, ql.CudaError) as exc:
            print(f"  {row.kind:<9} unavailable: {exc}")
        for what, line in _compilers(importlib.import_module(row.module)):
            print(f"    {what:<10} {line}")
    print(f"  default   {ql.default_device().name}")
    _mpi_line()
    print("environment:")
    from .env import listing
    for name, value, what in listing():
        print(f"  {name:<33} {value:<10} {what}" if value == "(unset)"
              else f"  {name:<33} {value}  ({what})")
    root = default_cache_dir()
    print(f"cache       {root}")
    try:
        entries, size = CompileCache(root).stats()
        print(f"            {entries} entries, {size / 1e6:.1f} MB")
    except ql.CacheError as exc:
        print(f"            unusable: {exc}")
    return 0


def _compilers(module) -> list[tuple[str, str]]:
    """A device's compiler lines (its backend's toolchain(): for the CPU the
    host compiler's flags and the CPU it builds for, for HIP where hiprtc is
    and its version); info reports, never fails on a probe."""
    try:
        return list(module.toolchain())
    except Exception as exc:  # noqa: BLE001
        return [("?", f"could not be probed: {exc}")]


def _mpi_line() -> None:
    """Under mpiexec: this rank's node-local rank and what the default device
    choice did with it (one line per rank; quicklaunch/mpi/local.py)."""
    from .mpi import local
    c = local.choice()
    if not c:
        return
    size = c["local_size"] if c["local_size"] is not None else "?"
    line = f"  mpi       local rank {c['local_rank']} of {size} (from {c['source']})"
    if "cpus" in c:
        cpus = c["cpus"]
        run = len(cpus) > 1 and cpus == list(range(cpus[0], cpus[-1] + 1))
        span = f"{cpus[0]}-{cpus[-1]}" if run else ",".join(map(str, cpus))
        line += f": CPUs {span} ({len(cpus)} pool threads; {c['why']})"
    elif "devices" in c:
        line += f": {c['devices']} GPUs visible"
    print(line)


def _bench(args) -> int:
    """The main job: launch overhead (quicklaunch, C, the installed peers), the
    CG workload, results.json and the plots (quicklaunch.bench.suite)."""
    from .bench.suite import run_suite
    from .bench.suite_report import TextProgress, table

    bar = TextProgress(sys.stderr)
    try:
        result = run_suite(args.device, args.out, quick=args.quick, progress=bar,
                           skip=args.skip)
    finally:
        bar.close()
    print(table(result))
    out = Path(args.out)
    files = [out / "results.json"] + [out / name for name, how in result["plots"].items()
                                      if how == "written"]
    print(f"\nwritten: {', '.join(str(f) for f in files)}")
    for name, how in result["plots"].items():
        if how != "written":
            print(f"{name}: {how}" if name != "skipped" else f"plots: {how}")
    ours = [r for r in result["launch"]["rows"].values() if r["source"] == "quicklaunch"]
    return 0 if any(r["status"] == "ok" for r in ours) else 1


def _sections(text: str) -> frozenset:
    """--skip's value: comma-separated section names, checked."""
    from .bench.suite import check_skip
    try:
        return check_skip(n.strip() for n in text.split(",") if n.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("quicklaunch bench: ")) from None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="quicklaunch", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, devices, compilers, cache").set_defaults(fn=_info)
    b = sub.add_parser("bench", help="the main job: launch overhead beside C and the "
                       "installed peers, the CG workload, results.json and plots")
    b.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: ql.device())")
    b.add_argument("--out", default=os.path.join(".", "quicklaunch-bench"),
                   help="directory for results.json and the plots "
                        "(default ./quicklaunch-bench)")
    b.add_argument("--quick", action="store_true",
                   help="fewer iterations (under a minute; the full run is under five)")
    from .bench.suite import SECTIONS
    b.add_argument("--skip", type=_sections, default=frozenset(), metavar="SECTION[,SECTION]",
                   help="sections to leave out: " + "; ".join(
                       f"{name} ({what})" for name, what in SECTIONS.items())
                   + ". quicklaunch's own launch rows always run")
    b.set_defaults(fn=_bench)
    from .bundles.cli import add_parser as add_build
    add_build(sub)   # quicklaunch build: bundles (quicklaunch/bundles/cli.py)
    args = parser.parse_args(argv)
    from .errors import QuicklaunchError
    try:
        return args.fn(args)
    except QuicklaunchError as exc:
        print(f"quicklaunch {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

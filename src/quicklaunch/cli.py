"""The ``quicklaunch`` command: ``info`` and ``bench``."""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path


def _info(args) -> int:
    import numpy

    import quicklaunch as ql
    from .backends.cpu import runtime, toolchain
    from .cache import CompileCache, default_cache_dir

    print(f"quicklaunch {ql.__version__}")
    print(f"python      {platform.python_version()} ({sys.executable})")
    print(f"numpy       {numpy.__version__}")
    print(f"platform    {platform.platform()}")
    print("devices:")
    print(f"  cpu       {ql.device('cpu').description}; launches under "
          f"{runtime.inline_threads()} threads run on the caller")
    try:
        print(f"  cuda      {ql.device('cuda').description}")
    except (ql.DeviceError, ql.CudaError) as exc:
        print(f"  cuda      unavailable: {exc}")
    print(f"  default   {ql.default_device().name}")
    print("compilers:")
    try:
        c = toolchain.find_compiler()
        print(f"  C++       {c.path}: {c.version}")
    except ql.CompileError as exc:
        print(f"  C++       none: {exc}")
    try:
        from .backends.cuda import nvrtc
        lib = nvrtc.load()
        print(f"  NVRTC     {lib.version[0]}.{lib.version[1]} ({lib.path}): {lib.archs_text()}")
    except ql.CompileError as exc:
        print(f"  NVRTC     none: {str(exc).split('. ')[-1]}")
    for name in ("nvcc", "hipcc"):
        print(f"  {name:<9} {shutil.which(name) or 'not found'}")
    root = default_cache_dir()
    print(f"cache       {root}")
    try:
        entries, size = CompileCache(root).stats()
        print(f"            {entries} entries, {size / 1e6:.1f} MB")
    except ql.CacheError as exc:
        print(f"            unusable: {exc}")
    return 0


def _bench(args) -> int:
    from .bench.launch import measure, table

    interactive = sys.stderr.isatty()

    def progress(done, total, what):
        if interactive:
            bar = "#" * (20 * done // total)
            print(f"\r[{bar:<20}] {done}/{total} {what:<28}", end="", file=sys.stderr,
                  flush=True)

    iters = 20_000 if args.quick else 200_000
    result = measure(args.device, iters=iters, repeats=5 if args.quick else 9,
                     progress=progress)
    if interactive:
        print(file=sys.stderr)
    print(table(result))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2))
    print(f"\nresults written to {out / 'results.json'}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="quicklaunch", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, devices, compilers, cache").set_defaults(fn=_info)
    b = sub.add_parser("bench", help="launch-overhead benchmark on a device")
    b.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: ql.device())")
    b.add_argument("--out", default=os.path.join(".", "quicklaunch-bench"),
                   help="directory for results.json (default ./quicklaunch-bench)")
    b.add_argument("--quick", action="store_true", help="fewer iterations")
    b.set_defaults(fn=_bench)
    args = parser.parse_args(argv)
    from .errors import QuicklaunchError
    try:
        return args.fn(args)
    except QuicklaunchError as exc:
        print(f"quicklaunch {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Launch overhead counted, not timed: instructions per step of the launch
benchmark's Python loop, under valgrind's callgrind.

    python -m quicklaunch.bench.instructions [--device cpu] [--quick] [--out FILE]

Each row (the launch benchmark's loops, quicklaunch.bench.launch: the same
kernels, arguments and spelled-out calls) runs in a child process under
callgrind twice, for LOW and HIGH loop steps; the difference of the main
thread's instruction totals, over HIGH - LOW, is one loop step, free of
start-up, imports and compiles. A count repeats to within an instruction or
two from run to run and machine to machine (of one architecture, Python and
NumPy), where a timed ratio on a shared machine moves by more than the
differences it is meant to show; so the ratio of the configured launch to
the C-extension floor is checkable anywhere valgrind runs. Instructions are
not time: a cache miss or a mispredicted branch counts as one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROWS = {  # row -> the loop's statement (as quicklaunch.bench.launch spells it)
    "python loop": "pass",
    "C-ext floor": "floor({a})",
    "configured": "run({a})",
    "indexed": "k[1, 1]({a})",
    "direct": "k.launch(1, 1, {a})",
}
QUICK_ROWS = ("python loop", "C-ext floor", "configured")
LOW, HIGH = 20_000, 120_000
MODULE = "quicklaunch.bench.instructions"   # what the children run (not __main__)


def child(row: str, nparams: int, steps: int, device: str) -> None:
    """Runs one row's loop `steps` times (after a warm-up): what callgrind
    counts. The kernel is compiled (or loaded from the cache) before."""
    import quicklaunch as ql

    from . import _floor
    from .harness.kernels import SOURCE, host_args
    from .harness.timing import argenv, arglist, spelled_loop

    dev = ql.device(device)
    k = ql.compile(SOURCE, device=dev).get_kernel(f"empty{nparams}")
    args = host_args(nparams, dev)
    env = {"k": k, "run": k.configure(1, 1), "floor": _floor.nothing, **argenv(args)}
    loop = spelled_loop(ROWS[row].format(a=arglist(nparams)), env)
    loop(1000)
    loop(steps)
    dev.synchronize()


def main_thread_total(out_dir: Path) -> int:
    """The instruction total of the main thread's callgrind file in
    `out_dir` (--separate-threads: its name ends in -01)."""
    files = sorted(out_dir.glob("cg.*-01"))
    if len(files) != 1:
        raise RuntimeError(f"expected one main-thread callgrind file in {out_dir}, "
                           f"found {[f.name for f in files]}")
    for line in files[0].read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"{files[0]}: no summary line")


def count(row: str, nparams: int, steps: int, device: str, valgrind: str) -> int:
    with tempfile.TemporaryDirectory(prefix="ql-instructions-") as tmp:
        cmd = [valgrind, "--tool=callgrind", "--separate-threads=yes",
               f"--callgrind-out-file={tmp}/cg.%p", sys.executable, "-m", MODULE,
               "--child", row, str(nparams), str(steps), device]
        env = dict(os.environ, PYTHONHASHSEED="0")
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f"{row!r} ({nparams} params) under callgrind exited "
                               f"{done.returncode}: {done.stderr[-2000:]}")
        return main_thread_total(Path(tmp))


def measure(device: str = "cpu", rows=tuple(ROWS), low: int = LOW, high: int = HIGH,
            progress=None) -> dict:
    """{"device", "low", "high", "rows": {row: {nparams: instructions per
    step}}}; raises RuntimeError without valgrind."""
    valgrind = shutil.which("valgrind")
    if not valgrind:
        raise RuntimeError("valgrind is not installed (Debian: apt-get install valgrind)")
    import quicklaunch as ql

    from .harness.kernels import SOURCE
    ql.compile(SOURCE, device=device)      # compiled once, then cached for the children
    result = {"device": device, "low": low, "high": high, "rows": {}}
    for row in rows:
        for n in (4, 16):
            if progress:
                progress(f"{row}, {n} params")
            a, b = (count(row, n, s, device, valgrind) for s in (low, high))
            result["rows"].setdefault(row, {})[n] = (b - a) / (high - low)
    return result


def table(result: dict) -> str:
    rows = result["rows"]
    floor = rows.get("C-ext floor", {})
    out = [f"launch overhead on {result['device']}: instructions per loop step "
           f"(callgrind, main thread, {result['high']} - {result['low']} steps)",
           f"{'path':<13}{'4 params':>10}{'16 params':>11}{'/ floor (4)':>13}"
           f"{'/ floor (16)':>14}"]
    for row, per_n in rows.items():
        ratios = "".join(f"{per_n[n] / floor[n]:>{w}.2f}x" if floor.get(n) else " " * (w + 1)
                         for n, w in ((4, 12), (16, 13)))
        out.append(f"{row:<13}{per_n[4]:>10.1f}{per_n[16]:>11.1f}{ratios}")
    return "\n".join(out)


def main(argv=None, results_dir=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quicklaunch.bench.instructions",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true",
                   help="only the loop, the floor and the configured launch")
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    p.add_argument("--child", nargs=4, metavar=("ROW", "NPARAMS", "STEPS", "DEVICE"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        row, n, steps, device = args.child
        child(row, int(n), int(steps), device)
        return 0
    try:
        result = measure(args.device, QUICK_ROWS if args.quick else tuple(ROWS),
                         progress=lambda what: print(f"  counting {what}", file=sys.stderr))
    except RuntimeError as exc:
        print(f"quicklaunch.bench.instructions: {exc}", file=sys.stderr)
        return 2
    print(table(result))
    out = args.out or (results_dir / f"launch-instructions-{args.device}.json"
                       if results_dir else None)
    if out:
        out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

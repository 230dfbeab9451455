"""Reliability figures for the CPU device: leaks after many launches and many
module loads, and what each hostile input does.

    python benchmarks/reliability.py [--launches 1000000] [--stream 100000]
        [--debug 100000] [--loads 10000] [--sources 40] [--skip-leaks]

(a) RSS, /proc/self/maps lines and open descriptors before and after 1e6
    configured launches of a 4-parameter kernel, 1e5 launches through a
    stream and 1e5 debug-mode launches;
(b) the same around 10k module loads: --sources distinct tiny sources are
    compiled once into a temporary QUICKLAUNCH_CACHE_DIR, then ql.compile'd
    round-robin --loads times, so each is a load from the cache and, once
    the Module is dropped, an unload;
(c) hostile inputs, each in a child process with a timeout: the input, the
    exception type and the first line of its message, and whether the
    process survived (it launches the kernel correctly afterwards).

Prints markdown and writes benchmarks/results/reliability.md. Method and
figures: docs/reliability.md.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("results") / "reliability.md"

KERNEL = r"""
#include <stdlib.h>
#include <assert.h>
extern "C" __global__ void k(float *o, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) o[i] = a * x[i];
}
extern "C" __global__ void spin(int *flag) {
    while (__atomic_load_n(&flag[0], __ATOMIC_ACQUIRE) == 0) {}
}
extern "C" __global__ void wild(float *o, long off) { o[off + threadIdx.x] = 1.0f; }
extern "C" __global__ void kassert(int n) { assert(threadIdx.x < n); }
extern "C" __global__ void ends(int how) {
    if (threadIdx.x == 3) { if (how == 0) abort(); else exit(3); }
}
"""


# --------------------------------------------------------------------------
# (a), (b): leaks

def snapshot() -> dict:
    rss = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return {"rss_kib": rss, "maps": maps, "fds": len(os.listdir("/proc/self/fd"))}


def row(what, before, after, seconds, count):
    d = {k: after[k] - before[k] for k in before}
    return (f"| {what} | {before['rss_kib'] / 1024:.1f} -> {after['rss_kib'] / 1024:.1f} "
            f"({d['rss_kib']:+d} KiB) | {before['maps']} -> {after['maps']} ({d['maps']:+d}) | "
            f"{before['fds']} -> {after['fds']} ({d['fds']:+d}) | "
            f"{seconds:.1f} s ({seconds / count * 1e9:.0f} ns each) |")


def leaks(args) -> list[str]:
    import numpy as np
    import quicklaunch as ql

    out = ["| what | RSS MiB | maps lines | open fds | time |", "|---|---|---|---|---|"]
    m = ql.compile(KERNEL)
    o = np.zeros(256, np.float32)
    x = np.ones(256, np.float32)
    run = m.k[2, 128]
    for _ in range(10_000):            # warm up: pool threads, first-touch pages
        run(o, x, 2.0, 256)
    gc.collect()
    b = snapshot()
    t = time.perf_counter()
    for _ in range(args.launches):
        run(o, x, 2.0, 256)
    dt = time.perf_counter() - t
    gc.collect()
    out.append(row(f"{args.launches:,} configured launches `m.k[2, 128](o, x, 2.0, 256)`",
                   b, snapshot(), dt, args.launches))
    assert (o == 2.0).all()

    s = ql.Stream()
    rs = m.k.configure(2, 128, stream=s)
    for _ in range(1000):
        rs(o, x, 3.0, 256)
    s.synchronize()
    # Launches outrun the stream, so the queue grows to about args.stream
    # entries; the second round tells a high-water mark from a leak.
    for rnd in ("", ", again (same stream)", ", a third time"):
        gc.collect()
        b = snapshot()
        t = time.perf_counter()
        for _ in range(args.stream):
            rs(o, x, 3.0, 256)
        s.synchronize()
        dt = time.perf_counter() - t
        gc.collect()
        out.append(row(f"{args.stream:,} launches on a `ql.Stream`, then `synchronize()`{rnd}",
                       b, snapshot(), dt, args.stream))
        assert (o == 3.0).all()
    s.close()

    if args.debug:
        md = ql.compile(KERNEL, debug=True)
        rd = md.k[2, 128]
        for _ in range(1000):
            rd(o, x, 4.0, 256)
        gc.collect()
        b = snapshot()
        t = time.perf_counter()
        for _ in range(args.debug):
            rd(o, x, 4.0, 256)
        dt = time.perf_counter() - t
        gc.collect()
        out.append(row(f"{args.debug:,} debug-build launches (`debug=True`)",
                       b, snapshot(), dt, args.debug))
        assert (o == 4.0).all()
        del md, rd

    # (b) module loads
    sources = [KERNEL.replace("a * x[i]", f"a * x[i] + {i}.0f") for i in range(args.sources)]
    t = time.perf_counter()
    for src in sources:
        ql.compile(src)
    cold = time.perf_counter() - t
    for src in sources:                 # one warm round before measuring
        mm = ql.compile(src)
        mm.k[2, 128](o, x, 1.0, 256)
        del mm
    gc.collect()
    b = snapshot()
    peak = dict(b)
    t = time.perf_counter()
    for i in range(args.loads):
        mm = ql.compile(sources[i % len(sources)])
        mm.k[2, 128](o, x, 1.0, 256)
        del mm
        if i % 500 == 0:
            s_ = snapshot()
            for k_ in peak:
                peak[k_] = max(peak[k_], s_[k_])
    dt = time.perf_counter() - t
    gc.collect()
    a = snapshot()
    out.append(row(f"{args.loads:,} loads + unloads (`ql.compile` from the cache, one launch, "
                   f"drop) of {len(sources)} distinct modules", b, a, dt, args.loads))
    out.append("")
    out.append(f"Cold compiles of the {len(sources)} distinct sources: {cold:.1f} s "
               f"({cold / len(sources):.2f} s each). Peak during the loads (sampled every 500): "
               f"RSS {peak['rss_kib'] / 1024:.1f} MiB, {peak['maps']} maps lines, "
               f"{peak['fds']} fds.")
    return out


# --------------------------------------------------------------------------
# (c): hostile inputs, one child process each

PRELUDE = """
import json, os, subprocess, sys, numpy as np, quicklaunch as ql
SRC = {src!r}
m = ql.compile(SRC)
o = np.zeros(256, np.float32); x = np.ones(256, np.float32)
res = {{}}
def alive():
    o[:] = 0
    m.k[2, 128](o, x, 2.0, 256)
    assert (o == 2.0).all()
    res["alive"] = True
try:
{body}
    res["exc"] = "(none: it ran)"
except BaseException as e:
    res["exc"] = type(e).__name__
    msg = str(e).strip()
    res["msg"] = msg.splitlines()[0] if msg else ""
alive()
print("RESULT " + json.dumps(res), flush=True)
"""

# (label, body, extra env, sigint)
CASES = [
    ("wrong argument count (3 of 4)", "m.k[2, 128](o, x, 2.0)", {}, False),
    ("float64 array for `float *`", "m.k[2, 128](o.astype(np.float64), x, 2.0, 256)", {}, False),
    ("object array for `float *`", "m.k[2, 128](np.array([object()] * 256), x, 2.0, 256)", {}, False),
    ("`str` for `int`", "m.k[2, 128](o, x, 2.0, '256')", {}, False),
    ("`None` for `float *` (null pointer, kernel writes it)", "m.k[2, 128](None, x, 2.0, 256)", {}, False),
    ("int 2**31 for `int`", "m.k[2, 128](o, x, 2.0, 2**31)", {}, False),
    ("int -2**64 for `int`", "m.k[2, 128](o, x, 2.0, -2**64)", {}, False),
    ("1e300 for `float`", "m.k[2, 128](o, x, 1e300, 256)", {}, False),
    ("non-contiguous array `o[::2]`", "m.k[2, 128](o[::2], x, 2.0, 128)", {}, False),
    ("read-only array for `float *`",
     "r = np.ones(256, np.float32); r.flags.writeable = False; m.k[2, 128](r, x, 2.0, 256)", {}, False),
    ("grid 0", "m.k[0, 128](o, x, 2.0, 256)", {}, False),
    ("grid 2**40", "m.k[2**40, 128](o, x, 2.0, 256)", {}, False),
    ("block 2048 threads", "m.k[1, 2048](o, x, 2.0, 256)", {}, False),
    ("block (1024, 2, 1)", "m.k[1, (1024, 2, 1)](o, x, 2.0, 256)", {}, False),
    ("block -1", "m.k[1, -1](o, x, 2.0, 256)", {}, False),
    ("shared memory 1 TiB", "m.k.configure(1, 128, shared_mem=1 << 40)(o, x, 2.0, 256)", {}, False),
    ("compile error (syntax)", "ql.compile('__global__ void bad( { }')", {}, False),
    ("refused compile option `-fplugin=x`", "ql.compile(SRC, options=['-fplugin=x'])", {}, False),
    ("refused compile option `-fsanitize=address`",
     "ql.compile(SRC, options=['-fsanitize=address'])", {}, False),
    ("corrupt cache entry (the module's .so truncated to half, then loaded in a new process)",
     "import glob\n"
     "src2 = SRC + '// corrupt me\\n'\n"
     "subprocess.run([sys.executable, '-c', 'import quicklaunch as ql, sys; ql.compile(sys.argv[1])', src2], check=True)\n"
     "sos = sorted(glob.glob(os.path.join(os.environ['QUICKLAUNCH_CACHE_DIR'], '**', '*.so'), recursive=True), key=os.path.getmtime)\n"
     "p = sos[-1]; n = os.path.getsize(p); os.truncate(p, n // 2)\n"
     "import warnings\n"
     "with warnings.catch_warnings(record=True) as w:\n"
     "    warnings.simplefilter('always'); t0 = __import__('time').perf_counter()\n"
     "    m2 = ql.compile(src2); dt = __import__('time').perf_counter() - t0\n"
     "m2.k[2, 128](o, x, 5.0, 256)\n"
     "res['note'] = (f'no exception: the entry was a miss and was recompiled ({dt:.2f} s; '\n"
     "               f'the .so is {os.path.getsize(p)} bytes again, was cut to {n // 2}; '\n"
     "               f'{len(w)} warnings), the launch gave {o[0]}')",
     {}, False),
    ("infinite loop, `QUICKLAUNCH_CPU_TIMEOUT=0.5`", "m.spin[2, 32](np.zeros(1, np.int32))",
     {"QUICKLAUNCH_CPU_TIMEOUT": "0.5"}, False),
    ("infinite loop on a stream, `QUICKLAUNCH_CPU_TIMEOUT=0.5`",
     "s = ql.Stream(); m.spin.configure(2, 32, stream=s)(np.zeros(1, np.int32)); s.synchronize()",
     {"QUICKLAUNCH_CPU_TIMEOUT": "0.5"}, False),
    ("wild write (`o[1 << 40]`)", "m.wild[1, 32](o, 1 << 40)", {}, False),
    ("wild write, debug build",
     "ql.compile(SRC, debug=True).wild[1, 32](o, 1 << 40)", {}, False),
    ("`assert` fails in a kernel", "m.kassert[1, 32](4)", {}, False),
    ("`abort()` in a kernel", "m.ends[1, 32](0)", {}, False),
    ("`exit(3)` in a kernel", "m.ends[1, 32](1)", {}, False),
    ("Ctrl-C (SIGINT from the parent) during a spinning kernel",
     "print('READY', flush=True); m.spin[2, 32](np.zeros(1, np.int32))", {}, True),
    ("Ctrl-C during a spinning kernel on a stream, at `synchronize()`",
     "s = ql.Stream(); m.spin.configure(2, 32, stream=s)(np.zeros(1, np.int32)); "
     "print('READY', flush=True); s.synchronize()", {}, True),
]


def run_case(body, env, sigint, timeout=60.0) -> dict:
    code = PRELUDE.format(src=KERNEL, body=textwrap.indent(body, "    "))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
    lines = []
    try:
        if sigint:
            t0 = time.monotonic()
            for line in p.stdout:
                lines.append(line)
                if line.strip() == "READY":
                    break
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
        rest, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        rest, err = p.communicate()
        return {"exc": "(hung)", "msg": f"killed after {timeout:.0f} s", "alive": False}
    stdout = "".join(lines) + rest
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    rc = p.returncode
    how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    tail = [l for l in err.strip().splitlines() if l.strip()]
    return {"exc": f"(process died: {how})", "msg": tail[-1] if tail else "", "alive": False}


def esc(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def hostile() -> list[str]:
    out = ["| input | ended as | first line of the message | process survived |",
           "|---|---|---|---|"]
    for label, body, env, sigint in CASES:
        t = time.perf_counter()
        r = run_case(body, env, sigint)
        msg = r.get("msg", "")
        if len(msg) > 220:
            msg = msg[:217] + "..."
        if r.get("note"):
            msg = (msg + "; " if msg else "") + r["note"]
        out.append(f"| {esc(label)} | `{r['exc']}` | {esc(msg)} | "
                   f"{'yes' if r.get('alive') else 'no'} |")
        print(f"  {label}: {r['exc']} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=1_000_000)
    ap.add_argument("--stream", type=int, default=100_000)
    ap.add_argument("--debug", type=int, default=100_000)
    ap.add_argument("--loads", type=int, default=10_000)
    ap.add_argument("--sources", type=int, default=40)
    ap.add_argument("--skip-leaks", action="store_true")
    ap.add_argument("--skip-hostile", action="store_true")
    ap.add_argument("--output", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    own_cache = "QUICKLAUNCH_CACHE_DIR" not in os.environ
    tmp = tempfile.TemporaryDirectory(prefix="ql-reliability-")
    if own_cache:
        os.environ["QUICKLAUNCH_CACHE_DIR"] = tmp.name
    import numpy
    import quicklaunch
    doc = ["# Reliability figures (CPU device)", "",
           f"`python {' '.join(['benchmarks/reliability.py', *(argv if argv is not None else sys.argv[1:])])}` "
           f"on {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
           f"NumPy {numpy.__version__}, {time.strftime('%Y-%m-%d')}; cache: "
           f"{'a fresh temporary directory' if own_cache else '$QUICKLAUNCH_CACHE_DIR'}.", ""]
    if not args.skip_leaks:
        doc += ["## Leaks", ""] + leaks(args) + [""]
        print("\n".join(doc), flush=True)
    if not args.skip_hostile:
        h = ["## Hostile inputs", "",
             "Each in its own child process (timeout 60 s); \"survived\" means the same "
             "process then ran `m.k[2, 128](o, x, 2.0, 256)` and got the right result.", ""]
        h += hostile() + [""]
        print("\n".join(h), flush=True)
        doc += h
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("\n".join(doc))
    print(f"wrote {args.output}", file=sys.stderr)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Launch loops and timers for the CUDA launch benchmark's sources.

``spelled_loop`` builds the loop a row times, its arguments spelled out as
users write launches. ``plain``, ``batched`` and ``in_flight`` wrap a loop
into a timer, ``fn(iters) -> ns per launch``, that says how the GPU is
synchronised around the timed launches (see benchmarks/README.md, "CUDA
launch overhead").
"""
import time
from collections.abc import Callable


def arglist(n: int) -> str:
    return ", ".join(f"a{i}" for i in range(n))


def argenv(args) -> dict:
    return {f"a{i}": a for i, a in enumerate(args)}


def spelled_loop(statement: str, env: dict) -> Callable[[int], None]:
    """``loop(it)`` running ``statement`` ``it`` times, the names it uses bound
    as closure variables. Generated so each call spells its arguments out, as
    users write launches (``k[1, 1](a0, a1, a2, a3)``, not ``k[1, 1](*args)``),
    like the hand-written loops of the CPU launch benchmark."""
    names = sorted(env)
    src = (f"def _outer({', '.join(names)}):\n"
           f"    def loop(it):\n"
           f"        for _ in range(it):\n"
           f"            {statement}\n"
           f"    return loop\n")
    scope: dict = {}
    exec(compile(src, f"<launch loop: {statement}>", "exec"), scope)
    return scope["_outer"](**env)


def plain(loop) -> Callable[[int], float]:
    """Timer for a loop that needs no GPU synchronisation."""
    def timer(iters: int) -> float:
        t0 = time.perf_counter_ns()
        loop(iters)
        return (time.perf_counter_ns() - t0) / iters
    return timer


def batched(loop, sync, batch: int) -> Callable[[int], float]:
    """Host cost per launch: the launches run in batches of ``batch``, only the
    launches are timed, and ``sync()`` after each batch (untimed) drains the
    GPU, so the driver's queue never fills and GPU time never enters."""
    def timer(iters: int) -> float:
        sync()
        total, left = 0, iters
        while left > 0:
            n = min(batch, left)
            t0 = time.perf_counter_ns()
            loop(n)
            total += time.perf_counter_ns() - t0
            sync()
            left -= n
        return total / iters
    return timer


def in_flight(loop, sync) -> Callable[[int], float]:
    """Throughput: ``n`` launches back to back, then one ``sync()``, all timed."""
    def timer(n: int) -> float:
        sync()
        t0 = time.perf_counter_ns()
        loop(n)
        sync()
        return (time.perf_counter_ns() - t0) / n
    return timer

"""Launch loops and timers, for every benchmark.

``spelled_loop`` builds the loop a row times, its arguments spelled out as
users write launches. ``plain``, ``batched`` and ``in_flight`` wrap a loop
into a timer, ``fn(iters) -> ns per launch``, that says how the device is
synchronised around the timed launches (see benchmarks/README.md, "CUDA
launch overhead"); ``per_launch`` scales a timer whose call makes several
launches, and ``capped`` keeps a slow peer's sample short. ``median`` and
``round_robin`` take the medians of repeated samples.
"""
import statistics
import time
from collections.abc import Callable

SAMPLE_NS = 25e6   # a capped sample stops after about this many ns


def arglist(n: int) -> str:
    return ", ".join(f"a{i}" for i in range(n))


def argenv(args) -> dict:
    return {f"a{i}": a for i, a in enumerate(args)}


def spelled_loop(statement: str, env: dict) -> Callable[[int], None]:
    """``loop(it)`` running ``statement`` ``it`` times, the names it uses bound
    as closure variables. Generated so each call spells its arguments out, as
    users write launches (``k[1, 1](a0, a1, a2, a3)``, not ``k[1, 1](*args)``):
    the same bytecode as a hand-written loop over closure variables."""
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
    """Timer for a loop that needs no synchronisation."""
    def timer(iters: int) -> float:
        t0 = time.perf_counter_ns()
        loop(iters)
        return (time.perf_counter_ns() - t0) / iters
    return timer


def batched(loop, sync, batch: int | None) -> Callable[[int], float]:
    """Host cost per launch: the launches run in batches of ``batch`` (all in
    one when None), only the launches are timed, and ``sync()`` before the
    first and after each batch (untimed) drains the device, so its queue
    never fills and device time never enters the figure."""
    def timer(iters: int) -> float:
        sync()
        total, left = 0, iters
        while left > 0:
            n = min(batch or left, left)
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


def per_launch(timer, launches: int) -> Callable[[int], float]:
    """A timer of calls that make ``launches`` launches each (a graph replay)
    as ns per launch, ``iters`` launches per sample."""
    def run(iters: int) -> float:
        return timer(max(1, iters // launches)) / launches
    return run


def capped(timer) -> Callable[[int], float]:
    """Wraps ``timer(iters) -> ns per launch`` so that a sample takes about
    SAMPLE_NS at most: the first call runs one untimed launch (first-use
    costs: compiling, loading) and estimates the cost from a few; every call
    then runs min(iters, what fits in SAMPLE_NS) launches. The figure is still
    ns per launch, so slow peers (ms per launch) fit the run's time."""
    est = []

    def run(iters: int) -> float:
        if not est:
            timer(1)
            est.append(timer(min(iters, 8)))
        n = max(1, min(iters, int(SAMPLE_NS / max(est[-1], 1.0))))
        value = timer(n)
        est.append(value)
        return value
    return run


def median(sample: Callable[[], float], repeats: int) -> float:
    """``sample()`` once to warm up, then the median of ``repeats`` samples."""
    sample()
    return statistics.median(sample() for _ in range(repeats))


def ns_per_call(fn, calls: int = 1) -> Callable[[], float]:
    """A sample: ``fn()`` ``calls`` times, ns per call."""
    def sample() -> float:
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        return (time.perf_counter_ns() - t0) / calls
    return sample


def round_robin(fns: dict, repeats: int, sync=lambda: None) -> dict:
    """{name: median ns of one ``fn()``}, the repeats going round-robin over
    all of ``fns`` so slow drifts of a noisy machine hit every one alike;
    ``sync()`` (untimed) before each call and inside the timing after it."""
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter_ns()
            fn()
            sync()
            samples[name].append(time.perf_counter_ns() - t0)
    return {name: statistics.median(v) for name, v in samples.items()}

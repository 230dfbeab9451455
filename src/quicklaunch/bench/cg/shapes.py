"""Launch shapes of the quicklaunch CG kernels, per device.

Every shape is (grid, block, run): ``run`` is how many consecutive elements
(or points of a row) one thread handles. GPUs get the textbook shapes, one
element per thread; the CPU device gets shapes that suit the way it runs
kernels (a block's threads one after another on one worker, small launches
on the calling thread, barrier kernels as fibers). The kernels themselves
are the same on every device.
"""
from __future__ import annotations

from .kernels import MAX_DOT_BLOCKS

# CPU: vectors of up to INLINE_MAX elements are done by one thread (the launch
# stays on the calling thread); larger ones in stretches of CPU_RUN elements
# per thread, spread over the worker pool. Measured on the 2-vCPU development
# VM: at N = 128-512 a mix of pooled and calling-thread launches was 2-10x
# slower than all on one thread (the vectors move between the cores' caches
# every iteration); at N = 1024-2048 the pool makes an iteration 1.4-1.5x
# faster, even though the dot products stay on one thread.
INLINE_MAX = 1 << 19
CPU_RUN = 64


def _cpu_inline(n: int) -> bool:
    return n <= INLINE_MAX


def _pow2_at_least(v: int, lo: int, hi: int) -> int:
    w = lo
    while w < v and w < hi:
        w *= 2
    return w


def apply_shape(device, N: int) -> tuple:
    """(grid, block, run) of cg_apply, whose threads' y is the grid row.

    GPUs: a row of blocks of a power-of-two width (32 to 256) per grid row,
    one point per thread. CPU: one thread per row doing the whole row, the
    rows in blocks of up to 1024 threads (one block up to N = 1024, so a
    launch pays one block's bookkeeping and stays on the calling thread),
    or, above INLINE_MAX, rows of 32-thread blocks of CPU_RUN points each."""
    if device.kind == "cpu":
        if _cpu_inline((N + 2) ** 2):
            by = min(N, 1024)
            return (1, -(-N // by)), (1, by), N
        return (-(-N // (32 * CPU_RUN)), N), 32, CPU_RUN
    bx = _pow2_at_least(N, 32, 256)
    return ((N + bx - 1) // bx, N), bx, 1


def vector_shape(device, n: int) -> tuple[int, int, int]:
    """(grid, block, run) of the element-wise kernels.

    GPUs: one element per thread in 256-thread blocks. CPU: one thread for
    the whole vector up to INLINE_MAX elements (the launch stays on the
    calling thread, and so does the data: when the small launches of an
    iteration (the stencil's rows, the dot products) run here and the larger
    ones on the pool, every iteration moves the vectors between the cores'
    caches, which at N = 128-512 cost more than the arithmetic), above it
    256-thread blocks of CPU_RUN elements per thread. One element per thread
    would be slow on the CPU here: the per-thread loop keeps the device from
    vectorising across a block's threads."""
    if device.kind == "cpu":
        if _cpu_inline(n):
            return 1, 1, n
        return -(-n // (256 * CPU_RUN)), 256, CPU_RUN
    return (n + 255) // 256, 256, 1


def dot_shape(device, n: int) -> tuple[int, int, int]:
    """(grid, block, run) of cg_dot on ``device``.

    GPUs: 256-thread blocks, up to MAX_DOT_BLOCKS of them, run = 1 (the
    coalesced grid-stride loop). The CPU device runs a barrier kernel's
    threads as fibers, one after another, and every rendezvous (a shuffle, a
    barrier) costs each thread a switch (about 1 us per shuffle round for 32
    threads); launches of at most 16,384 threads stay on the calling thread
    anyway. So on the CPU one block sums the vector: a single thread below
    2**18 elements (no rendezvous at all), one warp above (each of its 32
    threads one contiguous, vectorised stretch; the shuffles are then noise),
    which also keeps every float32 lane's sum under 16,384 terms.
    """
    if device.kind == "cpu":
        block = 1 if n < 1 << 18 else 32
        run = -(-n // block)
        return 1, block, max(16, -(-run // 16) * 16)
    block = 256
    return max(1, min(MAX_DOT_BLOCKS, -(-n // block))), block, 1

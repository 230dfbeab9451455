"""NVIDIA Warp kernels for the CG rows (imported only when a Warp row runs).

The same five steps as the CUDA C++ kernels, device scalars in ``s``
(RR, PAP, ALPHA, BETA, RRNEW as in kernels.py). A dot product is two
launches: ``dot_partial`` (each thread sums one chunk of CHUNK elements in
float32) and ``dot_finish`` (one thread adds the chunk sums in float32 and
does the scalar step), the same precision as the other rows.
"""
import warp as wp

CHUNK = 1024


@wp.func
def safe_div(a: float, b: float):
    if b != 0.0:
        return a / b
    return 0.0


@wp.kernel
def cg_apply(p: wp.array2d(dtype=float), ap: wp.array2d(dtype=float), N: int):
    y, x = wp.tid()
    v = 4.0 * p[y, x]
    if y > 0:
        v = v - p[y - 1, x]
    if y < N - 1:
        v = v - p[y + 1, x]
    if x > 0:
        v = v - p[y, x - 1]
    if x < N - 1:
        v = v - p[y, x + 1]
    ap[y, x] = v


@wp.kernel
def dot_partial(a: wp.array(dtype=float), b: wp.array(dtype=float), n: int,
                partial: wp.array(dtype=float)):
    c = wp.tid()
    lo = c * CHUNK
    hi = wp.min(lo + CHUNK, n)
    acc = float(0.0)
    for i in range(lo, hi):
        acc += a[i] * b[i]
    partial[c] = acc


@wp.kernel
def dot_finish(partial: wp.array(dtype=float), nparts: int, s: wp.array(dtype=float),
               mode: int):
    total = float(0.0)
    for j in range(nparts):
        total += partial[j]
    if mode == 2:      # alpha = rr / pAp
        s[1] = total
        s[2] = safe_div(s[0], total)
    elif mode == 3:    # beta = rr_new / rr
        s[3] = safe_div(total, s[0])
        s[0] = total
        s[4] = total
    else:              # initial rr
        s[0] = total
        s[4] = total


@wp.kernel
def cg_update_xr(s: wp.array(dtype=float), p: wp.array(dtype=float),
                 ap: wp.array(dtype=float), x: wp.array(dtype=float),
                 r: wp.array(dtype=float)):
    i = wp.tid()
    alpha = s[2]
    x[i] = x[i] + alpha * p[i]
    r[i] = r[i] - alpha * ap[i]


@wp.kernel
def cg_update_p(s: wp.array(dtype=float), r: wp.array(dtype=float), p: wp.array(dtype=float)):
    i = wp.tid()
    p[i] = r[i] + s[3] * p[i]


@wp.kernel
def cg_reset(f: wp.array(dtype=float), x: wp.array(dtype=float), r: wp.array(dtype=float),
             p: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 0.0
    r[i] = f[i]
    p[i] = f[i]

"""The PyOpenCL row (``pip install pyopencl pocl-binary-distribution``).

OpenCL C versions of the CUDA C++ kernels with device scalars: the stencil,
a dot product as a work-group reduction in local memory with barriers
(partial sums) plus a one-work-group finishing kernel that does the scalar
step, and the updates reading alpha and beta from the scalar buffer. Seven
enqueues per iteration on one in-order queue, arguments set once per kernel
object (``set_args``, then ``enqueue_nd_range_kernel``: PyOpenCL's fast
path), one ``finish`` per solve. With quicklaunch's CPU device it takes an
OpenCL CPU device (PoCL's pthread device from the pip wheel), with a GPU
one a GPU device.
"""
from __future__ import annotations

import numpy as np

from .impl import Implementation, Solver, Unavailable

LOCAL = 64        # work-group size of the reductions
MAX_GROUPS = 256

SOURCE = r"""
__kernel void cg_apply(__global const float *restrict p, __global float *restrict ap, int N) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= N || y >= N) return;
    __global const float *row = p + (size_t)y * N;
    float v = 4.0f * row[x];
    if (y > 0) v -= row[x - N];
    if (y < N - 1) v -= row[x + N];
    if (x > 0) v -= row[x - 1];
    if (x < N - 1) v -= row[x + 1];
    ap[(size_t)y * N + x] = v;
}

float block_sum(float v, __local float *sh) {
    int lid = get_local_id(0);
    sh[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (lid < o) sh[lid] += sh[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return sh[0];
}

__kernel void cg_dot(__global const float *restrict a, __global const float *restrict b, int n,
                     __global float *partial, __local float *sh) {
    float acc = 0.0f;
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) acc += a[i] * b[i];
    float total = block_sum(acc, sh);
    if (get_local_id(0) == 0) partial[get_group_id(0)] = total;
}

float safe_div(float a, float b) { return b != 0.0f ? a / b : 0.0f; }

__kernel void cg_finish(__global const float *partial, int nparts, __global float *s, int mode,
                        __local float *sh) {
    float acc = 0.0f;
    for (int j = get_local_id(0); j < nparts; j += get_local_size(0)) acc += partial[j];
    float total = block_sum(acc, sh);
    if (get_local_id(0) != 0) return;
    if (mode == 2) { s[1] = total; s[2] = safe_div(s[0], total); }
    else if (mode == 3) { s[3] = safe_div(total, s[0]); s[0] = total; s[4] = total; }
    else { s[0] = total; s[4] = total; }
}

__kernel void cg_update_xr(__global const float *s, __global const float *restrict p,
                           __global const float *restrict ap, __global float *restrict x,
                           __global float *restrict r, int n) {
    int i = get_global_id(0);
    float alpha = s[2];
    if (i < n) { x[i] += alpha * p[i]; r[i] -= alpha * ap[i]; }
}

__kernel void cg_update_p(__global const float *s, __global const float *restrict r,
                          __global float *restrict p, int n) {
    int i = get_global_id(0);
    float beta = s[3];
    if (i < n) p[i] = r[i] + beta * p[i];
}
"""


def _round_up(v: int, m: int) -> int:
    return (v + m - 1) // m * m


class OpenCLSolver(Solver):
    def __init__(self, cl, ctx, prg, problem):
        self.cl, self.N, n = cl, problem.N, problem.n
        self.n = n
        self.queue = cl.CommandQueue(ctx)
        mf = cl.mem_flags
        f = np.ascontiguousarray(problem.f, dtype=np.float32).ravel()
        self.f = f
        self.x, self.r, self.p, self.ap = (cl.Buffer(ctx, mf.READ_WRITE, 4 * n) for _ in range(4))
        self.s = cl.Buffer(ctx, mf.READ_WRITE, 4 * 8)
        groups = max(1, min(MAX_GROUPS, n // (LOCAL * 64)))
        self.partial = cl.Buffer(ctx, mf.READ_WRITE, 4 * groups)
        sh = cl.LocalMemory(4 * LOCAL)
        N32, n32 = np.int32(self.N), np.int32(n)

        def kernel(name, *args):
            k = cl.Kernel(prg, name)
            k.set_args(*args)
            return k
        self.apply = kernel("cg_apply", self.p, self.ap, N32)
        self.dot_pap = kernel("cg_dot", self.p, self.ap, n32, self.partial, sh)
        self.dot_rr = kernel("cg_dot", self.r, self.r, n32, self.partial, sh)
        ng = np.int32(groups)
        self.finish_alpha = kernel("cg_finish", self.partial, ng, self.s, np.int32(2), sh)
        self.finish_beta = kernel("cg_finish", self.partial, ng, self.s, np.int32(3), sh)
        self.finish_init = kernel("cg_finish", self.partial, ng, self.s, np.int32(4), sh)
        self.update_xr = kernel("cg_update_xr", self.s, self.p, self.ap, self.x, self.r, n32)
        self.update_p = kernel("cg_update_p", self.s, self.r, self.p, n32)
        bx = 32 if self.N <= 32 else 64
        self.apply_shape = ((_round_up(self.N, bx), self.N), (bx, 1))
        self.vec_shape = ((_round_up(n, 256),), (256,))
        self.dot_shape = ((groups * LOCAL,), (LOCAL,))
        self.one_group = ((LOCAL,), (LOCAL,))

    def _dot(self, dot, finish) -> None:
        enqueue = self.cl.enqueue_nd_range_kernel
        enqueue(self.queue, dot, *self.dot_shape)
        enqueue(self.queue, finish, *self.one_group)

    def reset(self) -> None:
        cl, q = self.cl, self.queue
        cl.enqueue_copy(q, self.r, self.f)
        cl.enqueue_copy(q, self.p, self.f)
        cl.enqueue_fill_buffer(q, self.x, np.float32(0), 0, 4 * self.n)
        self._dot(self.dot_rr, self.finish_init)
        q.finish()

    def solve(self, iterations: int) -> None:
        enqueue, q = self.cl.enqueue_nd_range_kernel, self.queue
        apply_shape, vec_shape, dot_shape, one = (self.apply_shape, self.vec_shape,
                                                  self.dot_shape, self.one_group)
        for _ in range(iterations):
            enqueue(q, self.apply, *apply_shape)
            enqueue(q, self.dot_pap, *dot_shape)
            enqueue(q, self.finish_alpha, *one)
            enqueue(q, self.update_xr, *vec_shape)
            enqueue(q, self.dot_rr, *dot_shape)
            enqueue(q, self.finish_beta, *one)
            enqueue(q, self.update_p, *vec_shape)
        q.finish()

    def result(self) -> np.ndarray:
        out = np.empty(self.n, np.float32)
        self.cl.enqueue_copy(self.queue, out, self.x)
        self.queue.finish()
        return out.reshape(self.N, self.N)


class OpenCLCG(Implementation):
    name = "pyopencl"
    module = "pyopencl"
    distribution = "pyopencl"

    def version(self) -> str:
        v = super().version()
        try:
            return f"{v} ({self.platform})" if getattr(self, "platform", None) else v
        except Exception:  # noqa: BLE001
            return v

    def prepare(self, device) -> None:
        cl = self.need()
        want = cl.device_type.CPU if device.kind == "cpu" else cl.device_type.GPU
        found = []
        try:
            for platform in cl.get_platforms():
                try:
                    found += [(platform, d) for d in platform.get_devices(device_type=want)]
                except cl.Error:
                    pass
        except cl.Error as exc:
            raise Unavailable(f"not available: no OpenCL platform ({exc})") from None
        if not found:
            kind = "CPU" if device.kind == "cpu" else "GPU"
            raise Unavailable(f"not available: no OpenCL {kind} device (for the CPU: "
                              f"pip install pocl-binary-distribution)")
        platform, dev = found[0]
        self.platform = f"{platform.name}, {dev.name.strip()}"
        self.cl = cl
        self.ctx = cl.Context([dev])
        self.prg = cl.Program(self.ctx, SOURCE).build()

    def solver(self, problem) -> OpenCLSolver:
        return OpenCLSolver(self.cl, self.ctx, self.prg, problem)

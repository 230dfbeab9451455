"""The CUDA C++ kernels of the quicklaunch CG rows, and their launch shapes.

Five launches per CG iteration, each kernel written once for GPUs and run
unchanged by the CPU device:

    cg_apply      ap = A p, the matrix-free 5-point stencil (2D grid of threads)
    cg_dot        p . ap  -> s[PAP] (and alpha = rr / pAp)
    cg_update_xr  x += alpha p ; r -= alpha ap
    cg_dot        r . r   -> s[RRNEW] (and beta = rr_new / rr, rr = rr_new)
    cg_update_p   p = r + beta p

Vectors are (N + 2) x (N + 2) with a ring of zero ghost cells, so the
stencil has no boundary tests; the ring stays zero, so dot products over the
padded vectors are those of the interiors.

``cg_dot`` is a one-launch reduction: each thread sums its elements (a
grid-stride loop on GPUs, one contiguous stretch per thread on the CPU:
``run``) in 16 independent float32 lanes, the block reduces with warp
shuffles and shared memory, writes its partial sum, and the last block to
finish (an ``atomicInc`` ticket after a ``__threadfence``, as in CUDA's
threadFenceReduction sample) sums the partials and does the scalar step
(``mode``). ``atomicInc`` wraps the ticket back to 0, so the kernel can be
replayed from a graph with no reset.

The scalars live in a small device buffer ``s`` (layout: RR, PAP, ALPHA,
BETA, RRNEW). The host-scalar variant reads PAP and RRNEW back and passes
alpha and beta by value (``cg_update_xr`` / ``cg_update_p``); the
device-scalar variant has the dot kernels compute alpha and beta in place
and the updates read them from ``s`` (``*_dev`` kernels): no host round
trip, so the whole iteration can be recorded in a graph.

Precision: vectors are float32, and so is every sum: each thread's lanes,
the block's sum and the sum of the block partials (no float64 anywhere,
like NumPy's float32 ``np.dot``). With the shapes of shapes.py no float32
lane adds more than about 16,000 terms at N <= 2048 (on a GPU, 16); on
random vectors that stays within 2e-7 (relative) of the float64 value. alpha and beta are float32
divisions, 0 when the divisor is 0, as in every row.

Barrier-free kernels and the reduction live in two modules: on the CPU
device a module with a barrier or warp function runs every kernel as fibers
(tier 2), which would slow the stencil and the updates down for nothing.
The launch shapes are chosen per device in shapes.py; the kernels are the
same everywhere.
"""
from __future__ import annotations

RR, PAP, ALPHA, BETA, RRNEW = range(5)
NSCALARS = 8
# dot modes: what the last block does with the sum
STORE_PAP, STORE_RRNEW, DEV_ALPHA, DEV_BETA, DEV_INIT = range(5)
MAX_DOT_BLOCKS = 1024  # size of the partial-sum buffer

VECTOR_SOURCE = r"""
// Thread t of the grid handles elements [t * run, t * run + run) of a row or
// vector: run = 1 on a GPU (one element per thread, coalesced); on the CPU
// device one thread may take a whole vector (the launch then stays on the
// calling thread) or a stretch of 64 (spread over the worker pool), and the
// host compiler vectorises the loop.
#define CG_ELEMENTS(i, n, run)                                                       \
    for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * (run),  \
                   i##_end = i + (run) < (n) ? i + (run) : (n);                     \
         i < i##_end; ++i)

extern "C" __global__ void cg_apply(const float *__restrict__ p, float *__restrict__ ap, int N,
                                    int run) {
    // Vectors carry a ring of zero ghost cells: (N + 2) x (N + 2), interior
    // point (x, y) at (y + 1) * (N + 2) + x + 1, so no neighbour needs a
    // test. Row y of the 2D grid of threads; every access a row pointer
    // indexed by x, the form the CPU device vectorises (a conditional load,
    // or an index computed as y * W + x in int, keeps it scalar: 2-4x slower).
    int y = blockIdx.y * blockDim.y + threadIdx.y, W = N + 2;
    if (y >= N) return;
    size_t row = (size_t)(y + 1) * W + 1;
    const float *c = p + row, *up = c - W, *down = c + W;
    float *out = ap + row;
    // The neighbours in the NumPy reference's order (a ghost is an exact 0).
    CG_ELEMENTS(x, N, run) out[x] = 4.0f * c[x] - up[x] - down[x] - c[x - 1] - c[x + 1];
}

extern "C" __global__ void cg_update_xr(float alpha, const float *__restrict__ p,
                                        const float *__restrict__ ap, float *__restrict__ x,
                                        float *__restrict__ r, int n, int run) {
    CG_ELEMENTS(i, n, run) { x[i] += alpha * p[i]; r[i] -= alpha * ap[i]; }
}

extern "C" __global__ void cg_update_p(float beta, const float *__restrict__ r,
                                       float *__restrict__ p, int n, int run) {
    CG_ELEMENTS(i, n, run) p[i] = r[i] + beta * p[i];
}

extern "C" __global__ void cg_update_xr_dev(const float *__restrict__ s,
                                            const float *__restrict__ p,
                                            const float *__restrict__ ap, float *__restrict__ x,
                                            float *__restrict__ r, int n, int run) {
    float alpha = s[2];   // ALPHA, computed by cg_dot
    CG_ELEMENTS(i, n, run) { x[i] += alpha * p[i]; r[i] -= alpha * ap[i]; }
}

extern "C" __global__ void cg_update_p_dev(const float *__restrict__ s,
                                           const float *__restrict__ r,
                                           float *__restrict__ p, int n, int run) {
    float beta = s[3];    // BETA, computed by cg_dot
    CG_ELEMENTS(i, n, run) p[i] = r[i] + beta * p[i];
}

extern "C" __global__ void cg_reset(const float *__restrict__ f, float *__restrict__ x,
                                    float *__restrict__ r, float *__restrict__ p, int n,
                                    int run) {
    CG_ELEMENTS(i, n, run) { float v = f[i]; x[i] = 0.0f; r[i] = v; p[i] = v; }
}
"""

REDUCE_SOURCE = r"""
#define RR 0
#define PAP 1
#define ALPHA 2
#define BETA 3
#define RRNEW 4
#define LANES 16   // float32 partial sums per thread

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;   // every lane holds the warp's sum
}

// The block's sum, valid in thread 0. blockDim.x is 1 or a multiple of 32.
__device__ float block_sum(float v) {
    __shared__ float part[32];
    if (blockDim.x == 1) return v;
    v = warp_sum(v);
    if (blockDim.x == 32) return v;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.0f;
        v = warp_sum(v);
    }
    __syncthreads();   // part[] may be reused by the next call
    return v;
}

__device__ __forceinline__ float safe_div(float a, float b) { return b != 0.0f ? a / b : 0.0f; }

__device__ void finish(float *s, float sum, int mode) {
    switch (mode) {
    case 0: s[PAP] = sum; break;                              // host scalars
    case 1: s[RRNEW] = sum; break;
    case 2: s[PAP] = sum; s[ALPHA] = safe_div(s[RR], sum); break;   // device scalars
    case 3: s[BETA] = safe_div(sum, s[RR]); s[RR] = sum; s[RRNEW] = sum; break;
    case 4: s[RR] = sum; s[RRNEW] = sum; break;
    }
}

extern "C" __global__ void cg_dot(const float *__restrict__ a, const float *__restrict__ b,
                                  int n, int run, float *partial, unsigned int *ticket,
                                  float *s, int mode) {
    // Thread t of T sums runs of `run` consecutive elements: run j covers
    // [(j*T + t) * run, ... + run). run = 1 is the coalesced grid-stride loop
    // a GPU wants; on the CPU, where a block's threads run one after another,
    // a long run gives each thread one contiguous stretch.
    long long T = (long long)gridDim.x * blockDim.x;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc[LANES];   // independent lanes: a host compiler vectorises them
    for (int k = 0; k < LANES; ++k) acc[k] = 0.0f;
    for (long long start = t * run; start < n; start += T * run) {
        long long end = start + run < n ? start + run : n, i = start;
        for (; i + LANES <= end; i += LANES)
            for (int k = 0; k < LANES; ++k) acc[k] += a[i + k] * b[i + k];
        for (; i < end; ++i) acc[0] += a[i] * b[i];
    }
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
    float v = acc[0];
    v = block_sum(v);
    if (gridDim.x == 1) {                 // one block: its sum is the result
        if (threadIdx.x == 0) finish(s, v, mode);
        return;
    }
    __shared__ int is_last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;
        __threadfence();                  // the partial is visible before the ticket
        is_last = atomicInc(ticket, gridDim.x - 1) == gridDim.x - 1;   // wraps to 0
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    float w = 0.0f;
    for (int j = threadIdx.x; j < (int)gridDim.x; j += blockDim.x)
        w += ((volatile float *)partial)[j];
    w = block_sum(w);
    if (threadIdx.x == 0) finish(s, w, mode);
}
"""

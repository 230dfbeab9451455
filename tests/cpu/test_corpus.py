"""A corpus of classic CUDA kernels, written the way the CUDA samples and
textbooks write them, run unmodified on the CPU device and checked against
NumPy on random inputs with edge sizes (1, 31, 32, 33, sizes that are not a
multiple of the block, a few thousand). Outputs are poisoned before each
launch, so an element a kernel forgets to write shows.

Reductions and scans use integer-valued floats or ints, so the expected
result is exact whatever order the kernel adds in.
"""
import numpy as np
import pytest

import quicklaunch as ql

from .conftest import poisoned

SIZES = (1, 31, 32, 33, 255, 256, 257, 1000, 4099)


def ints_as_float(rng, n, lo=-100, hi=100):
    x = rng.integers(lo, hi, n).astype(np.float32)
    if n and not x.any():
        x[0] = 1
    return x


def cdiv(a, b):
    return (a + b - 1) // b


# ================================================================ reductions
REDUCE_SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// reduce0 of the CUDA samples: interleaved addressing, one element per thread.
extern "C" __global__ void reduce_interleaved(const float *g_idata, float *g_odata,
                                              unsigned int n) {
    __shared__ float sdata[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// reduce3: sequential addressing, first add during the load, dynamic shared memory.
extern "C" __global__ void reduce_sequential(const float *g_idata, float *g_odata,
                                             unsigned int n) {
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float mySum = (i < n) ? g_idata[i] : 0;
    if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
    sdata[tid] = mySum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = mySum;
}

__inline__ __device__ float warpReduceSum(float val) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        val += __shfl_down_sync(0xffffffff, val, offset);
    return val;
}

// Grid-stride loop, warp shuffles, per-warp sums in shared memory, then
// one atomicAdd per block into the total.
extern "C" __global__ void reduce_shfl_atomic(const float *in, float *partial, float *total,
                                              int n) {
    __shared__ float warp_sums[32];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        sum += in[i];
    sum = warpReduceSum(sum);
    const int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize;
    if (lane == 0) warp_sums[wid] = sum;
    __syncthreads();
    if (wid == 0) {
        sum = (threadIdx.x < blockDim.x / warpSize) ? warp_sums[lane] : 0.0f;
        sum = warpReduceSum(sum);
        if (lane == 0) {
            partial[blockIdx.x] = sum;
            atomicAdd(total, sum);
        }
    }
}

// Cooperative groups: a tile of 32 reduces with cg::reduce, tile leaders
// combine in shared memory.
extern "C" __global__ void reduce_cg(const float *in, float *block_sum, float *block_max,
                                     int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    __shared__ float tile_sum[32], tile_max[32];
    const int i = blockIdx.x * blockDim.x + block.thread_rank();
    const float v = i < n ? in[i] : 0.0f;
    const float s = cg::reduce(tile, v, cg::plus<float>());
    const float m = cg::reduce(tile, i < n ? v : -INFINITY, cg::greater<float>());
    if (tile.thread_rank() == 0) {
        tile_sum[tile.meta_group_rank()] = s;
        tile_max[tile.meta_group_rank()] = m;
    }
    block.sync();
    if (block.thread_rank() == 0) {
        float ts = 0.0f, tm = -INFINITY;
        for (unsigned k = 0; k < tile.meta_group_size(); ++k) {
            ts += tile_sum[k];
            tm = fmaxf(tm, tile_max[k]);
        }
        block_sum[blockIdx.x] = ts;
        block_max[blockIdx.x] = tm;
    }
}

// __syncthreads_count / _and / _or: per block, how many elements are
// positive, whether all are, whether any is.
extern "C" __global__ void count_positive(const float *x, int n, int *count, int *all_pos,
                                          int *any_pos) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool in_range = i < n;
    const int positive = in_range && x[i] > 0.0f;
    const int c = __syncthreads_count(positive);
    const int a = __syncthreads_and(!in_range || x[i] > 0.0f);
    const int o = __syncthreads_or(positive);
    if (threadIdx.x == 0) {
        count[blockIdx.x] = c;
        all_pos[blockIdx.x] = a;
        any_pos[blockIdx.x] = o;
    }
}
"""


@pytest.fixture(scope="module")
def reduce_mod(cpu):
    return ql.compile(REDUCE_SOURCE, device=cpu)


def block_sums(x, per_block):
    nb = cdiv(len(x), per_block)
    padded = np.zeros(nb * per_block, np.float64)
    padded[:len(x)] = x
    return padded.reshape(nb, per_block).sum(axis=1)


@pytest.mark.parametrize("n", SIZES)
def test_reduce_interleaved(reduce_mod, rng, n):
    x = ints_as_float(rng, n)
    nb = cdiv(n, 256)
    out = poisoned(nb, np.float32)
    reduce_mod.reduce_interleaved[nb, 256](x, out, n)
    np.testing.assert_array_equal(out, block_sums(x, 256))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("block", [32, 128])
def test_reduce_sequential_dynamic_shared(reduce_mod, rng, n, block):
    x = ints_as_float(rng, n)
    nb = cdiv(n, 2 * block)
    out = poisoned(nb, np.float32)
    reduce_mod.reduce_sequential[nb, block, block * 4](x, out, n)
    np.testing.assert_array_equal(out, block_sums(x, 2 * block))


@pytest.mark.parametrize("n", SIZES)
def test_reduce_shuffle_and_atomic_add(reduce_mod, rng, n):
    grid, block = 6, 128
    x = ints_as_float(rng, n)
    partial = poisoned(grid, np.float32)
    total = np.zeros(1, np.float32)
    reduce_mod.reduce_shfl_atomic[grid, block](x, partial, total, n)
    owner = (np.arange(n) % (grid * block)) // block     # grid-stride ownership
    want = np.bincount(owner, weights=x, minlength=grid)
    np.testing.assert_array_equal(partial, want)
    assert total[0] == x.astype(np.float64).sum()


def test_reduce_shuffle_real_floats(reduce_mod, rng):
    n = 3001
    x = rng.standard_normal(n).astype(np.float32)
    total = np.zeros(1, np.float32)
    reduce_mod.reduce_shfl_atomic[4, 256](x, poisoned(4, np.float32), total, n)
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("block", [64, 256])
def test_reduce_cooperative_groups(reduce_mod, rng, n, block):
    x = ints_as_float(rng, n)
    nb = cdiv(n, block)
    bsum, bmax = poisoned(nb, np.float32), poisoned(nb, np.float32)
    reduce_mod.reduce_cg[nb, block](x, bsum, bmax, n)
    np.testing.assert_array_equal(bsum, block_sums(x, block))
    padded = np.full(nb * block, -np.inf, np.float32)
    padded[:n] = x
    np.testing.assert_array_equal(bmax, padded.reshape(nb, block).max(axis=1))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("block", [64, 96])
def test_syncthreads_count_and_or(reduce_mod, rng, n, block):
    x = rng.standard_normal(n).astype(np.float32)
    nb = cdiv(n, block)
    for b in range(nb):   # some blocks all positive, some none, the rest mixed
        seg = slice(b * block, (b + 1) * block)
        if b % 3 == 0:
            x[seg] = np.abs(x[seg]) + 0.5
        elif b % 3 == 1:
            x[seg] = -np.abs(x[seg])
    x[rng.random(n) < 0.05] = 0.0   # zero is not positive
    count, all_pos, any_pos = (poisoned(nb, np.int32) for _ in range(3))
    reduce_mod.count_positive[nb, block](x, n, count, all_pos, any_pos)
    pos = np.zeros(nb * block, bool)
    pos[:n] = x > 0
    valid = np.arange(nb * block) < n
    pos, valid = pos.reshape(nb, block), valid.reshape(nb, block)
    np.testing.assert_array_equal(count, pos.sum(axis=1))
    np.testing.assert_array_equal(all_pos, (pos | ~valid).all(axis=1))
    np.testing.assert_array_equal(any_pos, pos.any(axis=1))


# ===================================================================== scans
SCAN_SOURCE = r"""
#define HS_BLOCK 256

// Hillis-Steele, double-buffered in shared memory (GPU Gems 3, 39.2.1).
// One block; inclusive or exclusive.
extern "C" __global__ void scan_hillis_steele(const int *g_idata, int *g_odata, int n,
                                              int inclusive) {
    __shared__ int buf[2][HS_BLOCK];
    const int thid = threadIdx.x;
    int pout = 0, pin = 1;
    if (inclusive) buf[pout][thid] = thid < n ? g_idata[thid] : 0;
    else buf[pout][thid] = (thid > 0 && thid - 1 < n) ? g_idata[thid - 1] : 0;
    __syncthreads();
    for (int offset = 1; offset < (int)blockDim.x; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (thid >= offset) buf[pout][thid] = buf[pin][thid] + buf[pin][thid - offset];
        else buf[pout][thid] = buf[pin][thid];
        __syncthreads();
    }
    if (thid < n) g_odata[thid] = buf[pout][thid];
}

// Blelloch's work-efficient exclusive scan of 2 * blockDim.x ints in temp
// (up-sweep, clear the root, down-sweep). blockDim.x is a power of two.
// Returns the total.
__device__ int block_exclusive_scan(int *temp) {
    const int thid = threadIdx.x, m = 2 * blockDim.x;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    __syncthreads();
    const int total = temp[m - 1];
    __syncthreads();
    if (thid == 0) temp[m - 1] = 0;
    for (int d = 1; d < m; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int ai = offset * (2 * thid + 1) - 1, bi = offset * (2 * thid + 2) - 1;
            int t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    return total;
}

// One block per 2 * blockDim.x elements; block_sums may be null.
extern "C" __global__ void scan_blelloch(const int *g_idata, int *g_odata, int *block_sums,
                                         int n) {
    extern __shared__ int temp[];
    const int thid = threadIdx.x, base = blockIdx.x * 2 * blockDim.x;
    const int a = base + 2 * thid, b = base + 2 * thid + 1;
    temp[2 * thid] = a < n ? g_idata[a] : 0;
    temp[2 * thid + 1] = b < n ? g_idata[b] : 0;
    const int total = block_exclusive_scan(temp);
    if (a < n) g_odata[a] = temp[2 * thid];
    if (b < n) g_odata[b] = temp[2 * thid + 1];
    if (block_sums && thid == 0) block_sums[blockIdx.x] = total;
}

// Third pass of the multi-block scan: add each block's offset.
extern "C" __global__ void add_block_offsets(int *data, const int *offsets, int n,
                                             int per_block) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += offsets[i / per_block];
}
"""


@pytest.fixture(scope="module")
def scan_mod(cpu):
    return ql.compile(SCAN_SOURCE, device=cpu)


def random_ints(rng, n, lo=-1000, hi=1000):
    x = rng.integers(lo, hi, n).astype(np.int32)
    if not x.any():
        x[0] = 1
    return x


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 100, 255, 256])
@pytest.mark.parametrize("inclusive", [1, 0])
def test_scan_hillis_steele(scan_mod, rng, n, inclusive):
    x = random_ints(rng, n)
    want = np.cumsum(x) if inclusive else np.concatenate(([0], np.cumsum(x)[:-1]))
    for block in sorted({256, max(n, 1)}):   # a full block, and exactly n threads
        out = poisoned(n, np.int32)
        scan_mod.scan_hillis_steele[1, block](x, out, n, inclusive)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 100, 255, 256, 511, 512])
def test_scan_blelloch_one_block(scan_mod, rng, n):
    x = random_ints(rng, n)
    block = 256
    out = poisoned(n, np.int32)
    sums = poisoned(1, np.int32)
    scan_mod.scan_blelloch[1, block, 2 * block * 4](x, out, sums, n)
    np.testing.assert_array_equal(out, np.concatenate(([0], np.cumsum(x)[:-1])))
    assert sums[0] == x.sum()


@pytest.mark.parametrize("n", SIZES + (5000, 8192))
def test_scan_multi_block(scan_mod, rng, n):
    """Block scans, a scan of the block sums, then adding them back: three
    launches, as in GPU Gems 3, 39.2.4."""
    block = 128
    per_block = 2 * block
    nb = cdiv(n, per_block)
    x = random_ints(rng, n)
    out = poisoned(n, np.int32)
    sums = poisoned(nb, np.int32)
    offsets = poisoned(nb, np.int32)
    scan_mod.scan_blelloch[nb, block, per_block * 4](x, out, sums, n)
    scan_mod.scan_blelloch[1, block, per_block * 4](sums, offsets, None, nb)
    scan_mod.add_block_offsets[cdiv(n, 256), 256](out, offsets, n, per_block)
    exclusive = np.concatenate(([0], np.cumsum(x)[:-1]))
    np.testing.assert_array_equal(out, exclusive)
    np.testing.assert_array_equal(out + x, np.cumsum(x))   # inclusive, from it


# ============================================= tiled transpose and matmul
TILES_SOURCE = r"""
#define TILE_DIM 32
#define BLOCK_ROWS 8

// transposeCoalesced of the CUDA samples, with bounds for any shape:
// idata is height x width, odata is width x height.
extern "C" __global__ void transpose_coalesced(float *odata, const float *idata, int width,
                                               int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < width && y + j < height)
            tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < height && y + j < width)
            odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

#define TILE 16

// C (M x N) = A (M x K) * B (K x N), 16x16 tiles in shared memory.
extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int M,
                                        int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        const int a_col = t * TILE + threadIdx.x, b_row = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""


@pytest.fixture(scope="module")
def tiles_mod(cpu):
    return ql.compile(TILES_SOURCE, device=cpu)


@pytest.mark.parametrize("height, width", [(1, 1), (31, 33), (32, 32), (33, 65), (100, 37),
                                           (64, 257), (300, 7), (1, 100)])
def test_transpose_padded_tile(tiles_mod, rng, height, width):
    x = rng.standard_normal((height, width)).astype(np.float32)
    out = poisoned((width, height), np.float32)
    tiles_mod.transpose_coalesced[(cdiv(width, 32), cdiv(height, 32)), (32, 8)](
        out, x, width, height)
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("M, N, K", [(1, 1, 1), (16, 16, 16), (17, 33, 5), (31, 32, 33),
                                     (64, 48, 80), (100, 70, 45), (1, 50, 129), (33, 1, 17)])
def test_matmul_tiled(tiles_mod, rng, M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = poisoned((M, N), np.float32)
    tiles_mod.matmul_tiled[(cdiv(N, 16), cdiv(M, 16)), (16, 16)](a, b, c, M, N, K)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(K))
    np.testing.assert_allclose(c, np.matmul(a, b), rtol=1e-4, atol=1e-5 * K)


# ====================================== histogram and stream compaction
COUNTING_SOURCE = r"""
#define NUM_BINS 256

// Privatized histogram: per-block bins in shared memory, merged with atomics.
extern "C" __global__ void histogram_shared(const unsigned char *data, unsigned int *hist,
                                            int n) {
    __shared__ unsigned int s_hist[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) s_hist[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&s_hist[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (s_hist[b] > 0) atomicAdd(&hist[b], s_hist[b]);
}

// The same with int bins in dynamic shared memory, as many as the caller says.
extern "C" __global__ void histogram_int(const int *data, int *hist, int n, int nbins) {
    extern __shared__ int bins[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[data[i]], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&hist[b], bins[b]);
}

#define CB 128

// Keep the positive elements: a block scan of the flags gives each kept
// element its place in the block, one atomicAdd reserves the block's range.
extern "C" __global__ void compact_positive(const float *in, float *out, unsigned int *count,
                                            int n) {
    __shared__ int scan[2][CB];
    __shared__ unsigned int block_base;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = i < n ? in[i] : 0.0f;
    const int keep = i < n && v > 0.0f;
    int pout = 0;
    scan[pout][threadIdx.x] = keep;
    __syncthreads();
    for (int off = 1; off < (int)blockDim.x; off *= 2) {
        const int pin = pout;
        pout ^= 1;
        scan[pout][threadIdx.x] = scan[pin][threadIdx.x] +
                                  ((int)threadIdx.x >= off ? scan[pin][threadIdx.x - off] : 0);
        __syncthreads();
    }
    const int inclusive = scan[pout][threadIdx.x];
    if (threadIdx.x == blockDim.x - 1) block_base = atomicAdd(count, (unsigned int)inclusive);
    __syncthreads();
    if (keep) out[block_base + inclusive - 1] = v;
}

// The warp-aggregated form: ballot, popc, one atomicAdd per warp.
extern "C" __global__ void compact_ballot(const float *in, float *out, unsigned int *count,
                                          int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = i < n ? in[i] : 0.0f;
    const bool keep = i < n && v > 0.0f;
    const unsigned int ballot = __ballot_sync(0xffffffff, keep);
    const int lane = threadIdx.x & 31;
    unsigned int warp_base = 0;
    if (lane == 0 && ballot) warp_base = atomicAdd(count, (unsigned int)__popc(ballot));
    warp_base = __shfl_sync(0xffffffff, warp_base, 0);
    if (keep) out[warp_base + __popc(ballot & ((1u << lane) - 1u))] = v;
}
"""


@pytest.fixture(scope="module")
def counting_mod(cpu):
    return ql.compile(COUNTING_SOURCE, device=cpu)


@pytest.mark.parametrize("n", (1, 31, 32, 33, 1000, 5000))
@pytest.mark.parametrize("grid, block", [(1, 32), (4, 128), (7, 96)])
def test_histogram_shared_bins(counting_mod, rng, n, grid, block):
    # skewed: a few hot bins make the atomics contend
    data = np.where(rng.random(n) < 0.3, rng.integers(250, 256, n),
                    rng.integers(0, 256, n)).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    counting_mod.histogram_shared[grid, block](data, hist, n)
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


@pytest.mark.parametrize("n, nbins", [(1, 1), (33, 5), (1000, 64), (5000, 1000)])
def test_histogram_int_dynamic_bins(counting_mod, rng, n, nbins):
    data = rng.integers(0, nbins, n).astype(np.int32)
    hist = np.zeros(nbins, np.int32)
    counting_mod.histogram_int[5, 64, nbins * 4](data, hist, n, nbins)
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=nbins))


def compaction_input(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    x[rng.random(n) < 0.1] = 0.0        # not positive
    x[rng.random(n) < 0.05] = -0.0
    if n and not (x > 0).any():
        x[n // 2] = 1.5
    return x


@pytest.mark.parametrize("kernel, block", [("compact_positive", 128),
                                           ("compact_ballot", 64)])
@pytest.mark.parametrize("n", SIZES)
def test_stream_compaction(counting_mod, rng, kernel, block, n):
    x = compaction_input(rng, n)
    out = poisoned(n, np.float32)
    count = np.zeros(1, np.uint32)
    counting_mod[kernel][cdiv(n, block), block](x, out, count, n)
    kept = x[x > 0]
    assert count[0] == len(kept)
    np.testing.assert_array_equal(np.sort(out[:count[0]]), np.sort(kept))
    assert np.isnan(out[count[0]:]).all(), "wrote past the kept elements"


# ============================================================ bitonic sort
SORT_SOURCE = r"""
// One block sorts one row of n keys (n a power of two, one thread per key).
extern "C" __global__ void bitonic_sort_static(const float *in, float *out, int n) {
    __shared__ float keys[1024];
    const unsigned int t = threadIdx.x;
    keys[t] = in[blockIdx.x * n + t];
    __syncthreads();
    for (unsigned int k = 2; k <= (unsigned int)n; k <<= 1) {
        for (unsigned int j = k >> 1; j > 0; j >>= 1) {
            const unsigned int ixj = t ^ j;
            if (ixj > t) {
                const bool ascending = (t & k) == 0;
                const float a = keys[t], b = keys[ixj];
                if ((a > b) == ascending) {
                    keys[t] = b;
                    keys[ixj] = a;
                }
            }
            __syncthreads();
        }
    }
    out[blockIdx.x * n + t] = keys[t];
}

__device__ inline void Comparator(int &keyA, int &valA, int &keyB, int &valB, unsigned dir) {
    if ((keyA > keyB) == (dir != 0)) {
        int t = keyA; keyA = keyB; keyB = t;
        t = valA; valA = valB; valB = t;
    }
}

// bitonicSortShared of the CUDA samples: key/value pairs, two per thread,
// in dynamic shared memory (2 * n ints); dir 1 sorts ascending.
extern "C" __global__ void bitonic_sort_dynamic(const int *d_key_in, int *d_key_out,
                                                int *d_val_out, unsigned arrayLength,
                                                unsigned dir) {
    extern __shared__ int s_mem[];
    int *s_key = s_mem, *s_val = s_mem + arrayLength;
    const int *key_in = d_key_in + blockIdx.x * arrayLength;
    for (unsigned i = threadIdx.x; i < arrayLength; i += blockDim.x) {
        s_key[i] = key_in[i];
        s_val[i] = (int)i;
    }
    for (unsigned size = 2; size < arrayLength; size <<= 1) {
        unsigned ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            Comparator(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], ddd);
        }
    }
    for (unsigned stride = arrayLength / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
        Comparator(s_key[pos], s_val[pos], s_key[pos + stride], s_val[pos + stride], dir);
    }
    __syncthreads();
    for (unsigned i = threadIdx.x; i < arrayLength; i += blockDim.x) {
        d_key_out[blockIdx.x * arrayLength + i] = s_key[i];
        d_val_out[blockIdx.x * arrayLength + i] = s_val[i];
    }
}
"""


@pytest.fixture(scope="module")
def sort_mod(cpu):
    return ql.compile(SORT_SOURCE, device=cpu)


@pytest.mark.parametrize("n", [1, 2, 4, 32, 64, 256, 1024])
def test_bitonic_sort_static_shared(sort_mod, rng, n):
    rows = 3
    x = rng.standard_normal((rows, n)).astype(np.float32)
    x[0, : n // 2] = x[0, 0]            # duplicates
    out = poisoned((rows, n), np.float32)
    sort_mod.bitonic_sort_static[rows, n](x, out, n)
    np.testing.assert_array_equal(out, np.sort(x, axis=1))


@pytest.mark.parametrize("n", [2, 4, 32, 64, 512, 2048])
@pytest.mark.parametrize("ascending", [1, 0])
def test_bitonic_sort_dynamic_shared(sort_mod, rng, n, ascending):
    rows = 3
    keys = rng.integers(-50, 50, (rows, n)).astype(np.int32)   # many duplicates
    kout, vout = poisoned((rows, n), np.int32), poisoned((rows, n), np.int32)
    sort_mod.bitonic_sort_dynamic[rows, n // 2, 2 * n * 4](keys, kout, vout, n, ascending)
    want = np.sort(keys, axis=1)
    np.testing.assert_array_equal(kout, want if ascending else want[:, ::-1])
    for r in range(rows):   # the values are a permutation that carries the keys
        np.testing.assert_array_equal(np.sort(vout[r]), np.arange(n))
        np.testing.assert_array_equal(keys[r][vout[r]], kout[r])


# ===================================================== softmax and stencil
ROWS_SOURCE = r"""
// Softmax of each row: one block per row, a max-reduction then a
// sum-reduction in shared memory (blockDim.x a power of two).
extern "C" __global__ void softmax_rows(const float *x, float *y, int cols) {
    __shared__ float red[256];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *out = y + (size_t)blockIdx.x * cols;
    const int tid = threadIdx.x;

    float m = -INFINITY;
    for (int c = tid; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    red[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = fmaxf(red[tid], red[tid + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x) sum += expf(row[c] - row_max);
    red[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int c = tid; c < cols; c += blockDim.x) out[c] = expf(row[c] - row_max) * inv;
}

#define RADIUS 2
#define BLOCK_SIZE 128

__constant__ float coef[2 * RADIUS + 1] = {0.125f, -0.25f, 0.5f, 0.75f, -0.375f};

// out[i] = sum_k coef[k] * in[i + k - RADIUS], zero outside [0, n); the
// block's neighbourhood, halo cells included, staged in shared memory.
extern "C" __global__ void stencil_1d(const float *in, float *out, int n) {
    __shared__ float temp[BLOCK_SIZE + 2 * RADIUS];
    const int gindex = blockIdx.x * blockDim.x + threadIdx.x;
    const int lindex = threadIdx.x + RADIUS;
    temp[lindex] = gindex < n ? in[gindex] : 0.0f;
    if (threadIdx.x < RADIUS) {
        const int left = gindex - RADIUS, right = gindex + BLOCK_SIZE;
        temp[lindex - RADIUS] = left >= 0 && left < n ? in[left] : 0.0f;
        temp[lindex + BLOCK_SIZE] = right < n ? in[right] : 0.0f;
    }
    __syncthreads();
    if (gindex < n) {
        float result = 0.0f;
        for (int offset = -RADIUS; offset <= RADIUS; offset++)
            result += coef[offset + RADIUS] * temp[lindex + offset];
        out[gindex] = result;
    }
}
"""


@pytest.fixture(scope="module")
def rows_mod(cpu):
    return ql.compile(ROWS_SOURCE, device=cpu)


@pytest.mark.parametrize("cols", [1, 31, 32, 33, 200, 1000, 3000])
@pytest.mark.parametrize("block", [32, 128])
def test_softmax_rows(rows_mod, rng, cols, block):
    rows = 5
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    x[1] += 100.0     # exp would overflow without subtracting the max
    x[2] -= 100.0     # ... and underflow to 0/0
    y = poisoned((rows, cols), np.float32)
    rows_mod.softmax_rows[rows, block](x, y, cols)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)


COEF = np.array([0.125, -0.25, 0.5, 0.75, -0.375], np.float64)


def stencil_reference(x, coef):
    padded = np.concatenate(([0.0, 0.0], x.astype(np.float64), [0.0, 0.0]))
    return sum(coef[k] * padded[k:k + len(x)] for k in range(5))


@pytest.mark.parametrize("n", SIZES)
def test_stencil_constant_memory(rows_mod, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    rows_mod.stencil_1d[cdiv(n, 128), 128](x, out, n)
    np.testing.assert_allclose(out, stencil_reference(x, COEF), rtol=1e-5, atol=1e-6)


def test_stencil_coefficients_from_python(rows_mod, rng):
    """The __constant__ array as initialized in the source, then rewritten
    from Python through mod.get_global: the kernel sees the new values. (The
    dtype is given: the declared size, 2 * RADIUS + 1, is not a literal.)"""
    coef = rows_mod.get_global("coef", dtype=np.float32)
    view = coef.numpy()
    np.testing.assert_array_equal(view, COEF.astype(np.float32))
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    new = np.float32([1.0, 2.0, -3.0, 0.5, 0.25])
    try:
        view[:] = new
        out = poisoned(n, np.float32)
        rows_mod.stencil_1d[cdiv(n, 128), 128](x, out, n)
        np.testing.assert_allclose(out, stencil_reference(x, new.astype(np.float64)),
                                   rtol=1e-5, atol=1e-5)
    finally:
        view[:] = COEF
    out = poisoned(n, np.float32)
    rows_mod.stencil_1d[cdiv(n, 128), 128](x, out, n)
    np.testing.assert_allclose(out, stencil_reference(x, COEF), rtol=1e-5, atol=1e-6)


# =============================================================== templates
TEMPLATE_SOURCE = r"""
template <typename T, int BLOCK>
__global__ void block_reduce(const T *in, T *out, int n) {
    __shared__ T s[BLOCK];
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
#pragma unroll
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

template <typename T> struct MaxOp {
    __device__ T operator()(T a, T b) const { return a > b ? a : b; }
    __device__ static T identity() { return -2147483647 - 1; }
};

template <typename T, int BLOCK, typename Op>
__global__ void block_reduce_op(const T *in, T *out, int n) {
    __shared__ T s[BLOCK];
    Op op;
    const int i = blockIdx.x * BLOCK + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : Op::identity();
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] = op(s[threadIdx.x], s[threadIdx.x + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// The CUDA samples' SharedMemory<T> (reduction.cu): one dynamic shared
// array per type, reached through a conversion operator.
template <class T> struct SharedMemory {
    __device__ inline operator T *() {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
    __device__ inline operator const T *() const {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};
template <> struct SharedMemory<double> {
    __device__ inline operator double *() {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
    __device__ inline operator const double *() const {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};

template <class T>
__global__ void reduce_samples(const T *g_idata, T *g_odata, unsigned int n) {
    T *sdata = SharedMemory<T>();
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : 0;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
"""

TEMPLATE_CASES = [("float", 128, np.float32), ("double", 256, np.float64), ("int", 64, np.int32)]


@pytest.fixture(scope="module")
def template_mod(cpu):
    exprs = [f"block_reduce<{t}, {b}>" for t, b, _ in TEMPLATE_CASES]
    exprs += ["block_reduce_op<int, 64, MaxOp<int>>", "reduce_samples<float>",
              "reduce_samples<double>", "reduce_samples<int>"]
    return ql.compile(TEMPLATE_SOURCE, device=cpu, name_expressions=exprs)


def typed_input(rng, dtype, n):
    x = rng.integers(-1000, 1000, n).astype(dtype)
    if not x.any():
        x[0] = 3
    return x


def typed_block_sums(x, block):
    nb = cdiv(len(x), block)
    padded = np.zeros(nb * block, x.dtype)
    padded[:len(x)] = x
    return padded.reshape(nb, block).sum(axis=1, dtype=x.dtype)


@pytest.mark.parametrize("ctype, block, dtype", TEMPLATE_CASES)
@pytest.mark.parametrize("n", (1, 31, 32, 33, 257, 4099))
def test_templated_block_reduce(template_mod, rng, ctype, block, dtype, n):
    x = typed_input(rng, dtype, n)
    nb = cdiv(n, block)
    out = poisoned(nb, dtype)
    template_mod[f"block_reduce<{ctype}, {block}>"][nb, block](x, out, n)
    np.testing.assert_array_equal(out, typed_block_sums(x, block))


@pytest.mark.parametrize("n", (1, 33, 4099))
def test_templated_reduce_with_functor(template_mod, rng, n):
    x = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    nb = cdiv(n, 64)
    out = poisoned(nb, np.int32)
    template_mod["block_reduce_op<int, 64, MaxOp<int>>"][nb, 64](x, out, n)
    padded = np.full(nb * 64, np.iinfo(np.int32).min, np.int32)
    padded[:n] = x
    np.testing.assert_array_equal(out, padded.reshape(nb, 64).max(axis=1))


@pytest.mark.parametrize("ctype, dtype", [("float", np.float32), ("double", np.float64),
                                          ("int", np.int32)])
@pytest.mark.parametrize("n", (1, 32, 33, 1000))
def test_samples_shared_memory_template(template_mod, rng, ctype, dtype, n):
    block = 128
    x = typed_input(rng, dtype, n)
    nb = cdiv(n, block)
    out = poisoned(nb, dtype)
    template_mod[f"reduce_samples<{ctype}>"][nb, block, block * x.itemsize](x, out, n)
    np.testing.assert_array_equal(out, typed_block_sums(x, block))


# ============================== extern __shared__: alignment, mixed types
CARVE_SOURCE = r"""
#include <stdint.h>

// One dynamic buffer carved into n doubles, n ints and n bytes.
extern "C" __global__ void carve_mixed(const double *d_in, const int *i_in,
                                       const unsigned char *c_in, double *d_out, int *i_out,
                                       unsigned int *aligned, int n) {
    extern __shared__ __align__(16) unsigned char smem[];
    double *sd = reinterpret_cast<double *>(smem);
    int *si = reinterpret_cast<int *>(sd + n);
    unsigned char *sc = reinterpret_cast<unsigned char *>(si + n);
    const int t = threadIdx.x, base = blockIdx.x * n;
    sd[t] = d_in[base + t];
    si[t] = i_in[base + t];
    sc[t] = c_in[base + t];
    __syncthreads();
    d_out[base + t] = sd[n - 1 - t] * sc[t];
    i_out[base + t] = si[(t + 1) % n] + sc[n - 1 - t];
    if (t == 0) aligned[blockIdx.x] = ((uintptr_t)smem % 16 == 0) && ((uintptr_t)sd % 8 == 0);
}

// float4 through an alignas(16) extern array: each block rotates its row.
extern "C" __global__ void rotate_float4(const float4 *in, float4 *out, int shift) {
    extern __shared__ alignas(16) float4 row4[];
    const int t = threadIdx.x, n = blockDim.x;
    row4[t] = in[blockIdx.x * n + t];
    __syncthreads();
    float4 v = row4[(t + shift) % n];
    out[blockIdx.x * n + t] = make_float4(v.w, v.x, v.y, v.z);
}

// Shorts after floats in one buffer, the split given by the caller.
extern "C" __global__ void floats_then_shorts(const float *f, const short *s, float *out,
                                              int nf) {
    extern __shared__ char raw[];
    float *sf = (float *)raw;
    short *ss = (short *)&sf[nf];
    const int t = threadIdx.x;
    if (t < nf) sf[t] = f[t];
    ss[t] = s[t];
    __syncthreads();
    out[t] = sf[t % nf] * ss[blockDim.x - 1 - t];
}
"""


@pytest.fixture(scope="module")
def carve_mod(cpu):
    return ql.compile(CARVE_SOURCE, device=cpu)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 100, 1024])
def test_extern_shared_carved_mixed_types(carve_mod, rng, n):
    blocks = 3
    d = rng.standard_normal(blocks * n)
    i = rng.integers(-10**6, 10**6, blocks * n).astype(np.int32)
    c = rng.integers(0, 256, blocks * n).astype(np.uint8)
    d_out, i_out = poisoned(blocks * n, np.float64), poisoned(blocks * n, np.int32)
    aligned = poisoned(blocks, np.uint32)
    carve_mod.carve_mixed[blocks, n, n * (8 + 4 + 1)](d, i, c, d_out, i_out, aligned, n)
    np.testing.assert_array_equal(aligned, 1)
    d2, i2, c2 = d.reshape(blocks, n), i.reshape(blocks, n), c.reshape(blocks, n)
    np.testing.assert_array_equal(d_out.reshape(blocks, n), d2[:, ::-1] * c2)
    np.testing.assert_array_equal(i_out.reshape(blocks, n),
                                  np.roll(i2, -1, axis=1) + c2[:, ::-1].astype(np.int32))


@pytest.mark.parametrize("n, shift", [(1, 0), (32, 5), (33, 32), (256, 255)])
def test_extern_shared_alignas_float4(carve_mod, rng, n, shift):
    blocks = 2
    x = rng.standard_normal((blocks, n, 4)).astype(np.float32)
    out = poisoned((blocks, n, 4), np.float32)
    carve_mod.rotate_float4[blocks, n, n * 16](x, out, shift)
    moved = np.roll(x, -shift, axis=1)
    np.testing.assert_array_equal(out, moved[:, :, [3, 0, 1, 2]])


@pytest.mark.parametrize("nf, ns", [(1, 1), (3, 64), (33, 33), (7, 100)])
def test_extern_shared_floats_then_shorts(carve_mod, rng, nf, ns):
    f = rng.standard_normal(nf).astype(np.float32)
    s = rng.integers(-300, 300, ns).astype(np.int16)
    out = poisoned(ns, np.float32)
    carve_mod.floats_then_shorts[1, ns, nf * 4 + ns * 2](f, s, out, nf)
    t = np.arange(ns)
    np.testing.assert_array_equal(out, f[t % nf] * s[::-1].astype(np.float32))


# ======================================== source spellings found in the wild
def test_extern_shared_name_reused_by_a_later_kernel(cpu, rng):
    """An extern __shared__ name is local to its function: a later kernel's
    own static array of the same name compiles and works."""
    src = r"""
    extern "C" __global__ void reverse_dynamic(float *x) {
        extern __shared__ float sdata[];
        sdata[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = sdata[blockDim.x - 1 - threadIdx.x];
    }
    extern "C" __global__ void reverse_static(float *x) {
        __shared__ float sdata[64];
        sdata[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = sdata[blockDim.x - 1 - threadIdx.x];
    }
    """
    mod = ql.compile(src, device=cpu)
    for name, shared in (("reverse_dynamic", 64 * 4), ("reverse_static", 0)):
        x = rng.standard_normal(64).astype(np.float32)
        y = x.copy()
        mod[name][1, 64, shared](y)
        np.testing.assert_array_equal(y, x[::-1])


@pytest.mark.parametrize("src", [
    'extern "C" __global__ void rev(int *x) { __shared__ int s[32]; s[threadIdx.x] = '
    'x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[31 - threadIdx.x]; }',
    'extern "C" __global__ void rev(int *x) {\n'
    '    __shared__ int s[32];\n'
    '    s[threadIdx.x] = x[threadIdx.x];\n'
    '    __syncthreads(); __shared__ int t[32];\n'
    '    t[threadIdx.x] = s[31 - threadIdx.x];\n'
    '    x[threadIdx.x] = t[threadIdx.x];\n'
    '}',
], ids=["one-line-kernel", "sync-before-shared-on-a-line"])
def test_shim_macros_on_a_kernel_line(cpu, src):
    """A shim macro (__shared__) on a kernel's line neither hides the kernel
    nor the barrier before it from the kernel scan."""
    mod = ql.compile(src, device=cpu)
    x = np.arange(32, dtype=np.int32)
    mod.rev[1, 32](x)
    np.testing.assert_array_equal(x, np.arange(32)[::-1])


def test_static_shared_spelling(cpu, rng):
    """`static __shared__`, as NVIDIA's blockReduceSum spells it."""
    src = r"""
    __inline__ __device__ int warpReduceSum(int val) {
        for (int offset = warpSize / 2; offset > 0; offset /= 2)
            val += __shfl_down_sync(0xffffffff, val, offset);
        return val;
    }
    __inline__ __device__ int blockReduceSum(int val) {
        static __shared__ int shared[32];
        int lane = threadIdx.x % warpSize, wid = threadIdx.x / warpSize;
        val = warpReduceSum(val);
        if (lane == 0) shared[wid] = val;
        __syncthreads();
        val = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0;
        if (wid == 0) val = warpReduceSum(val);
        return val;
    }
    extern "C" __global__ void deviceReduceKernel(const int *in, int *out, int N) {
        int sum = 0;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += blockDim.x * gridDim.x)
            sum += in[i];
        sum = blockReduceSum(sum);
        if (threadIdx.x == 0) out[blockIdx.x] = sum;
    }
    """
    mod = ql.compile(src, device=cpu)
    x = rng.integers(-100, 100, 3000).astype(np.int32)
    out = poisoned(1, np.int32)
    mod.deviceReduceKernel[1, 256](x, out, len(x))
    assert out[0] == x.sum()


def test_extern_shared_mentioned_in_a_comment(cpu, rng):
    """The words 'extern __shared__' in a comment are not a declaration."""
    src = r"""
    // The block's tile lives in extern __shared__ memory, sized at launch.
    extern "C" __global__ void rev(float *x) {
        extern __shared__ float s[];
        s[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        x[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
    }
    """
    mod = ql.compile(src, device=cpu)
    x = rng.standard_normal(32).astype(np.float32)
    y = x.copy()
    mod.rev[1, 32, 32 * 4](y)
    np.testing.assert_array_equal(y, x[::-1])

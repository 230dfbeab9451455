"""The CUDA prelude (include/ql_hip_prelude.h): what it maps and what it
refuses, checked offline.

* The lane arithmetic of every shuffle, evaluated by the compiler
  (constexpr) and compared with the Python model of CUDA's rules that the
  CPU device's tests use (tests/cpu/test_warp_semantics.py), for wavefronts
  of 32 and 64.
* Every warp function, cooperative-groups call and CUDA math function the
  prelude supports compiles on a wave32 and a wave64 GPU.
* On wave64, 32-bit masks and narrowing a 64-bit lane mask are compile
  errors that say why; the same calls compile on wave32.
What the functions compute on a GPU is the business of the GPU tests
(test_device.py), which need one.
"""
import random

import pytest

import quicklaunch as ql
from tests.cpu.test_warp_semantics import DOWN, IDX, UP, XOR, shfl_source

WAVE64, WAVE32 = "gfx90a", "gfx1030"
BOTH = [WAVE64, WAVE32]
KINDS = {IDX: 0, UP: 1, DOWN: 2, XOR: 3}   # the model's kinds -> ql_hip::shfl_src's


def shuffle_cases(wave: int, n: int = 1500, seed: int = 7):
    rng = random.Random(seed + wave)
    widths = [w for w in (1, 2, 4, 8, 16, 32, 64) if w <= wave]
    cases = [(k, lane, arg, w) for k in KINDS for w in widths for lane in (0, w - 1, wave - 1)
             for arg in (0, 1, w - 1, w, w + 1, 2 * w)]
    while len(cases) < n:
        w = rng.choice(widths)
        cases.append((rng.choice(list(KINDS)), rng.randrange(wave), rng.randrange(3 * w), w))
    return cases


@pytest.mark.parametrize("arch, wave", [(WAVE64, 64), (WAVE32, 32)])
def test_shuffle_lanes_follow_the_cuda_model(arch, wave):
    rows = []
    for kind, lane, arg, width in shuffle_cases(wave):
        want = shfl_source(kind, lane, arg, width)
        rows.append(f"static_assert(ql_hip::shfl_src({KINDS[kind]}, {lane}u, {arg}u, {width}u) "
                    f"== {want}u, \"kind {kind} lane {lane} arg {arg} width {width}\");")
    # a negative source lane of __shfl_sync wraps modulo the width, as Python's % does
    for lane, arg, width in ((5, -1, 8), (40, -3, 16), (0, -33, 32)):
        base = lane & ~(width - 1)
        rows.append(f"static_assert(ql_hip::shfl_src(0, {lane}u, (unsigned)({arg}), {width}u) "
                    f"== {base + arg % width}u, \"negative idx\");")
    for lane, n in ((0, 1), (37, 4), (63, 32), (31, 32), (5, 64), (33, 16)):
        mask = ((1 << n) - 1) << (lane & ~(n - 1) & 63) if n < 64 else (1 << 64) - 1
        rows.append(f"static_assert(ql_hip::tile_lanes({lane}u, {n}u) == {mask}ull, \"tile\");")
    source = "\n".join(rows) + "\n__global__ void k(int *x) { x[0] = warpSize; }\n"
    prog = ql.hip.compile(source, arch=arch)
    assert prog.wave_size == wave


WARP_CALLS = """
template <class T> __device__ T shuffles(T v, M m) {
    T r = __shfl_sync(m, v, 3) ; r = __shfl_sync(m, r, 1, 16);
    r = __shfl_up_sync(m, r, 1u); r = __shfl_up_sync(m, r, 2u, 8);
    r = __shfl_down_sync(m, r, 1u); r = __shfl_down_sync(m, r, 2u, 4);
    r = __shfl_xor_sync(m, r, 1); return __shfl_xor_sync(m, r, 5, 32);
}
struct Twelve { int a, b, c; };
struct Odd { char c[3]; };
__global__ void warp_everything(int *out, unsigned long long *big, float *f, double *d,
                                __half *h, __half2 *h2, Twelve *t, Odd *o, long long *ll) {
    const M m = FULL;
    const int i = threadIdx.x;
    out[i] = shuffles(out[i], m);
    f[i] = shuffles(f[i], m);
    d[i] = shuffles(d[i], m);
    h[i] = shuffles(h[i], m);
    h2[i] = shuffles(h2[i], m);
    t[i] = shuffles(t[i], m);
    o[i] = shuffles(o[i], m);
    ll[i] = shuffles(ll[i], m);
    big[i] = shuffles(big[i], m);
    const BALLOT b = __ballot_sync(m, out[i] > 0);
    big[i] = b;
    out[i] = __any_sync(m, out[i]) + __all_sync(m, out[i]);
    const BALLOT a = __activemask();
    big[i] += a;
    int pred = 0;
    const BALLOT same = __match_any_sync(m, f[i]);
    const BALLOT all = __match_all_sync(m, d[i], &pred);
    big[i] += same + all + pred;
    out[i] += __reduce_add_sync(m, out[i]) + __reduce_min_sync(m, out[i]) +
              __reduce_max_sync(m, out[i]);
    const unsigned u = (unsigned)out[i];
    out[i] += __reduce_add_sync(m, u) + __reduce_min_sync(m, u) + __reduce_max_sync(m, u) +
              __reduce_and_sync(m, u) + __reduce_or_sync(m, u) + __reduce_xor_sync(m, u);
    __syncwarp();
    __syncwarp(m);
    __syncwarp(0xffffffffu);    // any mask: the whole wavefront meets
    out[i] += __popcll(b) + (b ? 1 : 0) + (int)(b >> 3 & 1) + (b == 0) + (int)(~b & 1);
}
"""


@pytest.mark.parametrize("arch, mask, ballot", [
    (WAVE64, "unsigned long long", "unsigned long long"),
    (WAVE32, "unsigned", "unsigned"),
    (WAVE32, "unsigned long long", "unsigned long long"),   # a 64-bit mask is fine on wave32
])
def test_every_warp_function_compiles(arch, mask, ballot):
    source = (f"#include <cuda_fp16.h>\ntypedef {mask} M;\ntypedef {ballot} BALLOT;\n"
              f"#define FULL (M)~0ull\n" + WARP_CALLS)
    assert list(ql.hip.compile(source, arch=arch).kernels) == ["warp_everything"]


@pytest.mark.parametrize("call", [
    "__shfl_sync(0xffffffff, v, 0)", "__shfl_up_sync(0xffffffffu, v, 1u)",
    "__shfl_down_sync(0xffffffff, v, 1u)", "__shfl_xor_sync((unsigned)m, v, 1)",
    "__ballot_sync(0xffffffff, v)", "__any_sync(0xffffffff, v)", "__all_sync(0xffffu, v)",
    "__match_any_sync(0xffffffff, v)", "__reduce_add_sync(0xffffffff, v)",
])
def test_wave64_refuses_32_bit_masks(call):
    name = call.split("(")[0]
    source = (f"__global__ void k(int *x, unsigned long long m) {{ int v = x[threadIdx.x]; "
              f"x[threadIdx.x] = (int)(unsigned long long)({call}); }}\n")
    with pytest.raises(ql.CompileError, match=rf"for gfx90a: quicklaunch HIP, wave64: {name} "
                                              rf"was given a mask narrower than 64 bits"):
        ql.hip.compile(source, arch=WAVE64)
    assert ql.hip.compile(source, arch=WAVE32).kernels["k"]


@pytest.mark.parametrize("use", [
    "unsigned b = __ballot_sync(~0ull, v);", "unsigned b = __activemask();",
    "int b = __popc(__ballot_sync(~0ull, v));", "x[1] = __match_any_sync(~0ull, v);",
    "unsigned b = (unsigned)__activemask();",
])
def test_wave64_refuses_narrowing_a_lane_mask(use):
    source = f"__global__ void k(unsigned *x) {{ int v = x[0]; {use} }}\n"
    with pytest.raises(ql.CompileError, match=r"a lane mask from __ballot_sync, __activemask "
                                              r"or __match_\*_sync has 64 bits here"):
        ql.hip.compile(source, arch=WAVE64)
    assert ql.hip.compile(source, arch=WAVE32).kernels["k"]


COOPERATIVE = """
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
template <unsigned N> __global__ void tiles(int *out, unsigned *bits) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
    const int v = out[block.thread_rank()];
    int r = tile.shfl(v, 0) + tile.shfl_up(v, 1) + tile.shfl_down(v, 1) + tile.shfl_xor(v, 1)
          + tile.any(v) + tile.all(v) + (int)tile.thread_rank() + (int)tile.size()
          + (int)tile.num_threads() + (int)tile.meta_group_rank() + (int)tile.meta_group_size();
    unsigned b = tile.ballot(v > 0);          // 32 bits for tiles of up to 32, on every GPU
    int pred;
    b += tile.match_any(v) + tile.match_all(v, pred);
    r += cg::reduce(tile, v, cg::plus<int>()) + cg::reduce(tile, v, cg::greater<int>())
       + cg::reduce(tile, v, cg::less<int>()) + cg::reduce(tile, v, cg::bit_xor<int>());
    tile.sync(); block.sync(); cg::sync(block);
    const dim3 g = block.group_index(), t = block.thread_index(), d = block.group_dim();
    cg::grid_group grid = cg::this_grid();
    out[block.thread_rank()] = r + pred + (int)(g.x + t.x + d.x + block.size()
                                                + grid.thread_rank() + grid.size());
    bits[block.thread_rank()] = b;
}
"""


@pytest.mark.parametrize("arch", BOTH)
def test_cooperative_groups(arch):
    exprs = [f"tiles<{n}>" for n in (1, 2, 4, 8, 16, 32)]
    assert list(ql.hip.compile(COOPERATIVE, arch=arch, name_expressions=exprs).kernels) == exprs


def test_cooperative_groups_limits():
    big = COOPERATIVE.replace("unsigned b = tile.ballot", "unsigned long long b = tile.ballot")
    assert ql.hip.compile(big, arch=WAVE64, name_expressions=["tiles<64>"]).kernels
    with pytest.raises(ql.CompileError, match="N must be a power of two from 1 to 32"):
        ql.hip.compile(big, arch=WAVE32, name_expressions=["tiles<64>"])
    grid_sync = ("#include <cooperative_groups.h>\n__global__ void k() "
                 "{ cooperative_groups::this_grid().sync(); }\n")
    with pytest.raises(ql.CompileError, match=r"grid_group::sync\(\) needs a cooperative "
                                              r"launch, which quicklaunch does not make"):
        ql.hip.compile(grid_sync)


# Every CUDA built-in the corpus and the design promise, one per kernel.
BUILTINS = [
    "f[0] = __expf(f[1]) + rsqrtf(f[2]) + __fdividef(f[3], f[4]) + fmaf(f[1], f[2], f[3])",
    "f[0] = sqrtf(f[1]) + expf(f[1]) + logf(f[2]) + sinf(f[3]) + cosf(f[3]) + tanhf(f[4])",
    "f[0] = powf(f[1], f[2]) + fabsf(f[3]) + floorf(f[4]) + ceilf(f[4]) + fmaxf(f[1], f[2])",
    "f[0] = __sinf(f[1]) + __cosf(f[1]) + __logf(f[2]) + __powf(f[1], 2.f) + __saturatef(f[3])",
    "i[0] = __popc(u[0]) + __clz(i[1]) + __ffs(i[2]) + __popcll(u[1]) + __clzll(i[3])",
    "i[0] = __ffsll((long long)i[1]) + (int)__brev(u[2]) + (int)__umulhi(u[0], u[1]) "
    "+ __mul24(i[0], i[1]) + min(i[0], i[1]) + max(i[2], i[3])",
    "i[0] = __float2int_rn(f[0]) + __float_as_int(f[1]); f[2] = __int_as_float(i[3])",
    "f[0] = INFINITY; f[1] = NAN; f[2] = CUDART_PI_F; f[3] = CUDART_INF_F; f[4] = -HUGE_VALF",
    "atomicAdd(f, 1.f); atomicAdd(d, 1.0); atomicAdd(i, 1); atomicInc(u, 7u); "
    "atomicDec(u, 7u); atomicCAS(i, 0, 1); atomicExch(i, 2); atomicMax(i, 3); atomicMin(u, 4u)",
    "i[0] = __syncthreads_count(i[1]) + __syncthreads_and(i[2]) + __syncthreads_or(i[3]); "
    "__threadfence(); __threadfence_block(); __syncthreads()",
    "__half h = __float2half(f[0]); f[1] = __half2float(h * h + h); "
    "u[0] = __half_as_ushort(h); f[2] = __low2float(__floats2half2_rn(f[0], f[1]))",
    "__nv_bfloat16 b = __float2bfloat16(f[0]); f[1] = __bfloat162float(b * b + b); "
    "u[0] = __bfloat16_as_ushort(b)",
    "float4 v = make_float4(f[0], f[1], f[2], f[3]); int2 w = make_int2(i[0], i[1]); "
    "dim3 g(2, 3); f[0] = v.x + v.w + w.y + g.x + g.y + g.z + blockDim.x + gridDim.y",
    "__nanosleep(100); if (i[0] == 7) __trap(); assert(i[1] >= 0); "
    "printf(\"%d %f\\n\", i[0], (double)f[0])",
    "int64_t a = i[0]; uint32_t b = u[0]; uintptr_t p = (uintptr_t)f; intptr_t q = -1; "
    "i[1] = (int)(a + b + (p & 3) + q + INT32_MAX - UINT8_MAX)",
    "__shared__ float s[64]; extern __shared__ float dyn[]; s[threadIdx.x % 64] = f[0]; "
    "dyn[threadIdx.x] = s[0]; __syncthreads(); f[1] = dyn[0] + __ldg(f + 2)",
]


@pytest.mark.parametrize("arch", BOTH)
def test_cuda_builtins(arch):
    kernels = "\n".join(
        f"__global__ void b{n}(float *f, double *d, int *i, unsigned *u) {{ {body}; }}"
        for n, body in enumerate(BUILTINS))
    source = ("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
              "#include <math_constants.h>\n#include <stdint.h>\n#include <assert.h>\n"
              "#include <math.h>\n#include <device_launch_parameters.h>\n" + kernels)
    prog = ql.hip.compile(source, arch=arch)
    assert list(prog.kernels) == [f"b{n}" for n in range(len(BUILTINS))]


def test_bfloat16_rounding_is_exact():
    checks = [("0x3f800000u", "0x3f80"), ("0x3f808000u", "0x3f80"), ("0x3f818000u", "0x3f82"),
              ("0x3f808001u", "0x3f81"), ("0x7f800000u", "0x7f80"), ("0xff800000u", "0xff80"),
              ("0x7f800001u", "0x7fc0"), ("0x7f7fffffu", "0x7f80"), ("0x00000001u", "0x0000")]
    rows = "\n".join(f"static_assert(ql_hip::bits2bf({a}) == {b}, \"{a}\");" for a, b in checks)
    ql.hip.compile(rows + "\nstatic_assert(ql_hip::bf2f(0x4049) == 3.140625f, \"\");\n"
                   "__global__ void k() {}\n")


def test_ndebug_removes_assert():
    source = "__global__ void k(int *x) { assert(undeclared_in_assert > 0); x[0] = 1; }\n"
    with pytest.raises(ql.CompileError, match="undeclared_in_assert"):
        ql.hip.compile(source)
    assert ql.hip.compile(source, options=["-DNDEBUG"]).kernels["k"]


WAVE64_IDIOMS = r"""
__global__ void k(unsigned long long *o, int *x) {
    const int lane = threadIdx.x % warpSize;
    auto b = __ballot_sync(__activemask(), x[threadIdx.x] > 0);
    b &= ~1ull; b |= 2; b >>= 1; b += 1; b -= 1;
    unsigned long long m = b;
    o[0] = b + b; o[1] = b - 1; o[2] = b * 2; o[3] = (b >> lane) & 1; o[4] = b & (1ull << lane);
    o[5] = __popcll(b) + __ffsll(b); o[6] = b < m; o[7] = !b;
    const int rank = __popcll(b & ((1ull << lane) - 1));
    if (b) o[8] = rank;
    o[9] = __shfl_sync(b, x[0], __ffsll(b) - 1);
    o[10] = (b == m) + (b != 0) + (b > 3u);
    o[11] = (unsigned)(unsigned long long)b;   // a deliberate narrowing, spelled out
}
"""


def test_wave64_aware_code_compiles():
    # the 64-bit lane mask behaves as an unsigned long long in the usual idioms
    assert list(ql.hip.compile(WAVE64_IDIOMS, arch=WAVE64).kernels) == ["k"]

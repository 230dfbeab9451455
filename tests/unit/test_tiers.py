"""Per-kernel tiers (backends/cpu/tiers.py): a kernel runs as fibers only
when what it reaches uses a barrier, a warp function or cooperative groups."""
from quicklaunch.backends.cpu.tiers import declarations, kernel_tiers

HELPERS = r"""
__device__ float block_sum(float v, float *s) {
    s[threadIdx.x] = v;
    __syncthreads();
    return s[0];
}
__device__ float twice(float v) { return 2.0f * v; }
__device__ float via_helper(float v, float *s) { return block_sum(twice(v), s); }
"""


def tiers(text, *exprs):
    return kernel_tiers(text, list(exprs))


def test_an_unused_barrier_helper_leaves_elementwise_kernels_loops():
    text = HELPERS + r"""
__global__ void scale(float *y, int n) { int i = threadIdx.x; if (i < n) y[i] = twice(y[i]); }
__global__ void total(float *y) { __shared__ float s[32]; y[0] = block_sum(y[threadIdx.x], s); }
"""
    assert tiers(text, "scale", "total") == {"scale": 1, "total": 2}


def test_reach_is_transitive():
    text = HELPERS + "__global__ void k(float *y) { __shared__ float s[32]; y[0] = via_helper(1, s); }\n"
    assert tiers(text, "k") == {"k": 2}


def test_warp_functions_and_cooperative_groups_are_tier_2():
    text = r"""
namespace cg = cooperative_groups;
__global__ void warp(int *y) { y[0] = __shfl_down_sync(0xffffffffu, y[threadIdx.x], 1); }
__global__ void groups(int *y) { auto b = cg::this_thread_block(); y[b.thread_rank()] = 1; }
__global__ void via_alias(int *y, int n) { cg::thread_block_tile<32> *p = 0; y[0] = n; }
__global__ void plain(int *y) { y[threadIdx.x] = 3; }
"""
    assert tiers(text, "warp", "groups", "via_alias", "plain") == {
        "warp": 2, "groups": 2, "via_alias": 2, "plain": 1}


def test_types_their_out_of_line_members_and_functors_are_reached():
    text = r"""
struct Acc { float v; __device__ void add(float x); };
__device__ void Acc::add(float x) { v += x; __syncwarp(); }
struct Sum { __device__ float operator()(float a, float b) const { return a + __shfl_xor_sync(~0u, b, 1); } };
struct Plain { __device__ float operator()(float a, float b) const { return a + b; } };
template <class Op> __global__ void apply(float *y) { y[threadIdx.x] = Op()(y[0], y[1]); }
__global__ void uses_acc(float *y) { Acc a{0}; a.add(y[0]); y[0] = a.v; }
"""
    assert tiers(text, "apply<Sum>", "apply<Plain>", "uses_acc") == {
        "apply<Sum>": 2, "apply<Plain>": 1, "uses_acc": 2}


def test_namespaces_and_extern_c_are_looked_through():
    text = r"""
namespace outer { namespace {
__device__ void wait_all() { __syncthreads(); }
} }
extern "C" {
__global__ void a(int *y) { outer::wait_all(); y[0] = 1; }
__global__ void b(int *y) { y[0] = 2; }
}
namespace ns { __global__ void c(int *y) { y[0] = 3; } }
"""
    assert tiers(text, "a", "b", "ns::c") == {"a": 2, "b": 1, "ns::c": 1}


def test_what_cannot_be_attributed_makes_every_kernel_tier_2():
    # an operator is reached by expressions, not by name
    text = r"""
struct V { float x; };
__device__ V operator+(V a, V b) { __syncthreads(); return V{a.x + b.x}; }
__global__ void k(float *y) { y[0] = 1; }
"""
    assert tiers(text, "k") == {"k": 2}


def test_variables_initialised_with_functions_reach_them():
    text = r"""
__device__ void slow(int *y) { __syncthreads(); }
__device__ void fast(int *y) { }
typedef void (*op_t)(int *);
__device__ op_t table[2] = {slow, fast};
__device__ op_t just_fast = fast;
__global__ void dispatch(int *y, int i) { table[i](y); }
__global__ void direct(int *y) { just_fast(y); }
"""
    assert tiers(text, "dispatch", "direct") == {"dispatch": 2, "direct": 1}


def test_declarations_split_at_top_level_only():
    text = r"""
template <int N> struct Box { int v[N]; __device__ int get(int i) const { return v[i]; } };
static __device__ int counter = 0;
__global__ void k(int *y) { if (y) { y[0] = 1; } }
"""
    names = [d.names for d in declarations(text)]
    assert names == [{"Box"}, {"counter"}, {"k"}]


def test_line_markers_and_string_literals_are_not_code():
    text = '# 1 "kernel.cu"\n__global__ void k(const char **s) { s[0] = "__syncthreads"; }\n'
    assert tiers(text, "k") == {"k": 1}

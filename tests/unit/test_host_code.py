"""drop_host_code: host-only functions blanked (lines kept), device code untouched."""
from quicklaunch.host_code import drop_host_code

SRC = '''#include <cstdio>
#include <cuda_runtime.h>
#define CHECK(x) do { (x); } while (0)
extern "C" void run(float *d, int n);
void helper(int);
namespace ns {
__device__ float sq(float x) { return x * x; }
void host_in_ns() { printf("x"); }
}
template <int B> __global__ void k(float *d) { d[threadIdx.x] = ns::sq(d[threadIdx.x]); }
__host__ __device__ inline float both(float a) { return a; }
constexpr int twice(int a) { return 2 * a; }
struct S { int f() { return 1; } };
typedef float real;
__constant__ float table[4];
__device__ int counter = 0;
auto lam = [](int x) { return x + 1; };
#if 0
void guarded() {}
#endif
static void launch(float *d, int n) { k<256><<<n / 256, 256>>>(d); CHECK(cudaDeviceSynchronize()); }
int main(int argc, char **argv) {
    float *d; cudaMalloc(&d, 4);
    launch(d, 1);
    return 0;
}
'''


def test_drops_only_host_functions():
    out, names = drop_host_code(SRC)
    assert names == ["run", "helper", "host_in_ns", "launch", "main"]
    assert out.count("\n") == SRC.count("\n") and len(out) == len(SRC)
    for kept in ("__device__ float sq", "template <int B> __global__", "__host__ __device__",
                 "constexpr int twice", "struct S { int f()", "typedef float real",
                 "__constant__ float table", "__device__ int counter", "auto lam",
                 "void guarded() {}", "#include <cuda_runtime.h>", "#define CHECK"):
        assert kept in out, kept
    for gone in ("int main", "cudaMalloc", "extern \"C\" void run", "host_in_ns", "launch("):
        assert gone not in out, gone


def test_device_only_source_is_unchanged():
    src = "__global__ void k(int *p) { *p = 1; }\n__device__ int f();\n"
    assert drop_host_code(src) == (src, [])


def test_extern_c_block_and_include_guard():
    src = ('#ifndef MY_H\n#define MY_H\nextern "C" {\nvoid a(void);\n'
           '__global__ void g(int *p) { *p = 0; }\n}\n#endif\n')
    out, names = drop_host_code(src)
    assert names == ["a"] and "__global__ void g" in out and "void a" not in out


def test_macro_spelled_qualifiers_count():
    src = "#define DEV __device__\nDEV float f(float x) { return x; }\nfloat h(float x) { return x; }\n"
    out, names = drop_host_code(src)
    assert names == ["h"] and "DEV float f" in out
